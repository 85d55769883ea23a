// The precision table: one row per tb_prec, describing everything that depends on the
// precision - its name, the packing of codes, the code range, dequantisation and the weight
// quantiser - so that sizing, naming and packing code looks a row up instead of branching on
// the precision. Adding a precision is a row here, its reference (core/reference.cpp reads codes
// through the row) and its kernels (docs/FORMAT.md "Adding a precision").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <twinbit/backend.h>
#include <twinbit/status.hpp>

namespace twinbit {

struct PrecisionTraits {
  tb_prec prec;
  const char* name;          // "q8", "q4": the name used in artifacts, the CLI and messages
  int group;                 // k per scale: TB_GROUP
  int bits_per_code;         // 8, 4
  int group_code_bytes;      // bytes of one column's group of codes: group * bits / 8
  int code_min, code_max;    // codes a quantiser writes ([-127, 127] for q8; -128 is still read)
  uint8_t padding_byte;      // a codes byte holding only code 0 (padding columns and k)
  const char* padding_text;  // code 0 as stored, for messages: "code 0", "nibble 8, code 0"
  const char* gguf_type;     // the GGUF block type of the same codes: "q8_0", "q4_0"

  // Code kk (0 <= kk < group) of one column's group of codes `run`, and its inverse.
  int (*load_code)(const uint8_t* run, int kk);
  void (*store_code)(uint8_t* run, int kk, int code);
  // The byte of the run that holds code kk.
  int (*code_byte)(int kk);
  // The weight a code stands for: code * d, one rounding (what a dequantiser writes; the
  // products of NUMERICS.md never form it).
  float (*dequantize)(int code, float d);
  // Quantises one group of `group` floats into a run of codes and its binary16 scale
  // (core/block_quantizers.h: llama.cpp's reference quantisers, bit for bit).
  void (*quantize_group)(const float* x, uint8_t* run, uint16_t* d);
};

// Number of rows in the table; the rows are indexed by tb_prec (0 .. kPrecisionCount - 1).
inline constexpr int kPrecisionCount = 2;

// True for a row of the table.
bool precision_known(tb_prec prec);

// The row of a precision that check_precision accepts (an unknown value is a caller's bug here:
// the row of TB_PREC_Q8 is returned after an assertion).
const PrecisionTraits& precision_traits(tb_prec prec);

// TB_OK for a row of the table; INVALID_ARGUMENT naming the value and the valid ones otherwise.
Status check_precision(tb_prec prec);

// The same check on a tb_prec field that C code filled (a tb_strips from a caller or a plugin),
// which may hold any int: the field's bytes are read as an int, because reading a tb_prec that
// names no enumerator is undefined behaviour in C++.
Status check_precision_field(const tb_prec& field);

// The row named `name` ("q8", "q4"); INVALID_ARGUMENT quoting the name and listing the valid
// names otherwise.
Result<const PrecisionTraits*> find_precision(std::string_view name);

// "q8, q4": the valid names, and "0 = q8, 1 = q4": the valid values, for messages.
const char* precision_names();
const char* precision_codes();
// The names in table order, for option parsers ("q8", "q4"), and joined by '|' ("q8|q4").
std::vector<std::string> precision_name_list();
std::string precision_alternatives();

}  // namespace twinbit
