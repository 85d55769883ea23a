#include "core/precision.h"

#include <cassert>
#include <cstring>
#include <string>

#include "core/block_quantizers.h"

namespace twinbit {

namespace {

// q8: one int8 per k, k ascending (GGUF q8_0 qs).
int load_q8(const uint8_t* run, int kk) { return static_cast<int8_t>(run[kk]); }
void store_q8(uint8_t* run, int kk, int code) {
  run[kk] = static_cast<uint8_t>(static_cast<int8_t>(code));
}
void quantize_q8(const float* x, uint8_t* run, uint16_t* d) {
  int8_t codes[TB_GROUP];
  quantize_block_q8_0(x, codes, d);
  std::memcpy(run, codes, sizeof codes);
}

// q4: byte j holds k = j in its low nibble and k = j + 16 in its high nibble, each code + 8
// (GGUF q4_0 qs).
int load_q4(const uint8_t* run, int kk) {
  const uint8_t b = run[kk % 16];
  return (kk < 16 ? (b & 0x0f) : (b >> 4)) - 8;
}
void store_q4(uint8_t* run, int kk, int code) {
  uint8_t& b = run[kk % 16];
  const auto nib = static_cast<uint8_t>((code + 8) & 0x0f);
  b = kk < 16 ? static_cast<uint8_t>((b & 0xf0) | nib) : static_cast<uint8_t>((b & 0x0f) | (nib << 4));
}
void quantize_q4(const float* x, uint8_t* run, uint16_t* d) { quantize_block_q4_0(x, run, d); }

int byte_q8(int kk) { return kk; }
int byte_q4(int kk) { return kk % 16; }

float dequantize_scaled(int code, float d) { return static_cast<float>(code) * d; }

// Indexed by tb_prec.
constexpr PrecisionTraits kTable[kPrecisionCount] = {
    {TB_PREC_Q8, "q8", TB_GROUP, 8, TB_GROUP, -127, 127, 0x00, "code 0", "q8_0", load_q8,
     store_q8, byte_q8, dequantize_scaled, quantize_q8},
    {TB_PREC_Q4, "q4", TB_GROUP, 4, TB_GROUP / 2, -8, 7, 0x88, "nibble 8, code 0", "q4_0",
     load_q4, store_q4, byte_q4, dequantize_scaled, quantize_q4},
};

constexpr bool rows_consistent() {
  for (int i = 0; i < kPrecisionCount; ++i) {
    const PrecisionTraits& t = kTable[i];
    if (static_cast<int>(t.prec) != i) return false;  // the table is indexed by tb_prec
    if (t.group != TB_GROUP || t.group_code_bytes * 8 != t.group * t.bits_per_code) return false;
  }
  return true;
}
static_assert(rows_consistent(), "precision table rows must sit at their tb_prec index and "
                                 "hold group * bits / 8 code bytes per group");

}  // namespace

bool precision_known(tb_prec prec) {
  return static_cast<int>(prec) >= 0 && static_cast<int>(prec) < kPrecisionCount;
}

const PrecisionTraits& precision_traits(tb_prec prec) {
  assert(precision_known(prec));
  return precision_known(prec) ? kTable[static_cast<int>(prec)] : kTable[0];
}

const char* precision_names() {
  static const std::string names = [] {
    std::string s;
    for (const PrecisionTraits& t : kTable) s += (s.empty() ? "" : ", ") + std::string(t.name);
    return s;
  }();
  return names.c_str();
}

const char* precision_codes() {
  static const std::string codes = [] {
    std::string s;
    for (const PrecisionTraits& t : kTable) {
      s += Format("%s%d = %s", s.empty() ? "" : ", ", static_cast<int>(t.prec), t.name);
    }
    return s;
  }();
  return codes.c_str();
}

std::vector<std::string> precision_name_list() {
  std::vector<std::string> names;
  for (const PrecisionTraits& t : kTable) names.emplace_back(t.name);
  return names;
}

std::string precision_alternatives() {
  std::string out;
  for (const PrecisionTraits& t : kTable) out += (out.empty() ? "" : "|") + std::string(t.name);
  return out;
}

Status check_precision_field(const tb_prec& field) {
  static_assert(sizeof(tb_prec) == sizeof(int), "tb_prec is an int-sized C enum");
  int raw;
  std::memcpy(&raw, &field, sizeof raw);
  if (raw >= 0 && raw < kPrecisionCount) return Status();
  return Error(TB_INVALID_ARGUMENT, "precision %d is unknown (expected %s)", raw,
               precision_codes());
}

Status check_precision(tb_prec prec) { return check_precision_field(prec); }

Result<const PrecisionTraits*> find_precision(std::string_view name) {
  for (const PrecisionTraits& t : kTable) {
    if (name == t.name) return &t;
  }
  return Error(TB_INVALID_ARGUMENT, "precision '%.*s' is unknown (expected one of: %s)",
               static_cast<int>(name.size()), name.data(), precision_names());
}

}  // namespace twinbit
