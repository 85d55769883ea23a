// The block layouts of the source types (llama.cpp's ggml_type sizes; tensor_source.h).
#include "artifacts/import/tensor_source.h"

namespace twinbit::import {

namespace {

constexpr SourceTypeTraits kTraits[] = {
    {SourceType::f32, "F32", 1, 4},       {SourceType::f16, "F16", 1, 2},
    {SourceType::bf16, "BF16", 1, 2},     {SourceType::q8_0, "Q8_0", 32, 34},
    {SourceType::q4_0, "Q4_0", 32, 18},   {SourceType::q4_1, "Q4_1", 32, 20},
    {SourceType::q5_0, "Q5_0", 32, 22},   {SourceType::q5_1, "Q5_1", 32, 24},
    {SourceType::q2_k, "Q2_K", 256, 84},  {SourceType::q3_k, "Q3_K", 256, 110},
    {SourceType::q4_k, "Q4_K", 256, 144}, {SourceType::q5_k, "Q5_K", 256, 176},
    {SourceType::q6_k, "Q6_K", 256, 210}, {SourceType::other, "other", 0, 0},
};

}  // namespace

const SourceTypeTraits& source_type_traits(SourceType type) {
  for (const SourceTypeTraits& t : kTraits) {
    if (t.type == type) return t;
  }
  return kTraits[sizeof(kTraits) / sizeof(kTraits[0]) - 1];  // an enum value out of range
}

}  // namespace twinbit::import
