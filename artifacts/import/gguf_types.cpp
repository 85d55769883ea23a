// The GGML type table (sizes as llama.cpp's gguf-py lists them in GGML_QUANT_SIZES).
#include "artifacts/import/gguf_types.h"

namespace twinbit::import {

namespace {

using S = SourceType;
constexpr GgmlType kTypes[] = {
    {0, "F32", S::f32, 1, 4},           {1, "F16", S::f16, 1, 2},
    {2, "Q4_0", S::q4_0, 32, 18},       {3, "Q4_1", S::q4_1, 32, 20},
    {6, "Q5_0", S::q5_0, 32, 22},       {7, "Q5_1", S::q5_1, 32, 24},
    {8, "Q8_0", S::q8_0, 32, 34},       {9, "Q8_1", S::other, 32, 40},
    {10, "Q2_K", S::q2_k, 256, 84},     {11, "Q3_K", S::q3_k, 256, 110},
    {12, "Q4_K", S::q4_k, 256, 144},    {13, "Q5_K", S::q5_k, 256, 176},
    {14, "Q6_K", S::q6_k, 256, 210},    {15, "Q8_K", S::other, 256, 292},
    {16, "IQ2_XXS", S::other, 256, 66}, {17, "IQ2_XS", S::other, 256, 74},
    {18, "IQ3_XXS", S::other, 256, 98}, {19, "IQ1_S", S::other, 256, 50},
    {20, "IQ4_NL", S::other, 32, 18},   {21, "IQ3_S", S::other, 256, 110},
    {22, "IQ2_S", S::other, 256, 82},   {23, "IQ4_XS", S::other, 256, 136},
    {24, "I8", S::other, 1, 1},         {25, "I16", S::other, 1, 2},
    {26, "I32", S::other, 1, 4},        {27, "I64", S::other, 1, 8},
    {28, "F64", S::other, 1, 8},        {29, "IQ1_M", S::other, 256, 56},
    {30, "BF16", S::bf16, 1, 2},        {34, "TQ1_0", S::other, 256, 54},
    {35, "TQ2_0", S::other, 256, 66},   {39, "MXFP4", S::other, 32, 17},
};

}  // namespace

const GgmlType* find_ggml_type(uint32_t number) {
  for (const GgmlType& t : kTypes) {
    if (t.number == number) return &t;
  }
  return nullptr;
}

}  // namespace twinbit::import
