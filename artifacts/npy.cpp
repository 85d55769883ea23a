#include "artifacts/npy.h"

#include <algorithm>
#include <cstring>
#include <optional>

#include "core/op_checks.h"

namespace twinbit::npy {
namespace {

// A cursor over the header text with the few Python literals a .npy header holds.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& source) : t_(text), source_(source) {}

  Status parse(std::string& descr, std::optional<bool>& fortran, std::optional<std::vector<int64_t>>& shape) {
    skip_space();
    TB_RETURN_IF_ERROR(expect('{', "'{' opening the header dict"));
    bool have_descr = false;
    for (;;) {
      skip_space();
      if (peek() == '}') break;
      std::string key;
      TB_RETURN_IF_ERROR(string_literal(key, "a quoted key or '}'"));
      skip_space();
      TB_RETURN_IF_ERROR(expect(':', "':' after the key"));
      skip_space();
      if (key == "descr") {
        if (have_descr) return duplicate(key);
        have_descr = true;
        TB_RETURN_IF_ERROR(string_literal(descr, "a quoted dtype such as '<f4'"));
      } else if (key == "fortran_order") {
        if (fortran) return duplicate(key);
        TB_RETURN_IF_ERROR(boolean(fortran));
      } else if (key == "shape") {
        if (shape) return duplicate(key);
        shape.emplace();
        TB_RETURN_IF_ERROR(tuple(*shape));
      } else {
        return Error(TB_INVALID_ARGUMENT, "%s: the .npy header has a key '%s' (expected only "
                     "'descr', 'fortran_order' and 'shape')", source_.c_str(), printable(key).c_str());
      }
      skip_space();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') return unexpected("',' or '}' after a value");
    }
    ++pos_;
    skip_space();
    if (pos_ != t_.size()) return unexpected("only spaces and a newline after the dict's '}'");
    if (!have_descr) return missing("descr");
    if (!fortran) return missing("fortran_order");
    if (!shape) return missing("shape");
    return Status();
  }

 private:
  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\0'; }
  void skip_space() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r')) ++pos_;
  }
  static std::string printable(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 40)) {
      const auto u = static_cast<unsigned char>(c);
      out += u >= 0x20 && u < 0x7f ? std::string(1, c) : Format("\\x%02x", u);
    }
    return s.size() > 40 ? out + "..." : out;
  }
  Status unexpected(const char* expected) const {
    const std::string found = pos_ < t_.size() ? "'" + printable(t_.substr(pos_, 12)) + "'" : "the end of the header";
    return Error(TB_INVALID_ARGUMENT, "%s: malformed .npy header at offset %zu: found %s, expected %s",
                 source_.c_str(), pos_, found.c_str(), expected);
  }
  Status duplicate(const std::string& key) const {
    return Error(TB_INVALID_ARGUMENT, "%s: the .npy header gives '%s' twice", source_.c_str(), key.c_str());
  }
  Status missing(const char* key) const {
    return Error(TB_INVALID_ARGUMENT, "%s: the .npy header has no '%s' (expected 'descr', "
                 "'fortran_order' and 'shape')", source_.c_str(), key);
  }
  Status expect(char c, const char* what) {
    if (peek() != c) return unexpected(what);
    ++pos_;
    return Status();
  }
  Status string_literal(std::string& out, const char* what) {
    const char quote = peek();
    if (quote != '\'' && quote != '"') return unexpected(what);
    const size_t start = ++pos_;
    while (pos_ < t_.size() && t_[pos_] != quote) {
      if (t_[pos_] == '\\' || t_[pos_] == '\n') return unexpected("a string without escapes or line breaks");
      ++pos_;
    }
    if (pos_ == t_.size()) return unexpected("the string's closing quote");
    out.assign(t_.substr(start, pos_ - start));
    ++pos_;
    return Status();
  }
  Status boolean(std::optional<bool>& out) {
    for (const auto& [word, value] : {std::pair<std::string_view, bool>{"True", true}, {"False", false}}) {
      if (t_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        out = value;
        return Status();
      }
    }
    return unexpected("True or False");
  }
  Status integer(int64_t& out) {
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9') {
      v = v * 10 + (t_[pos_] - '0');
      ++pos_;
      if (v > kMaxDim) {
        return Error(TB_INVALID_ARGUMENT, "%s: a .npy shape dimension is larger than %lld (found "
                     "'%s...')", source_.c_str(), (long long)kMaxDim, printable(t_.substr(start, pos_ - start)).c_str());
      }
    }
    if (pos_ == start) return unexpected("a non-negative integer");
    if (t_[start] == '0' && pos_ - start > 1) {
      pos_ = start;
      return unexpected("an integer without leading zeros");
    }
    out = v;
    return Status();
  }
  Status tuple(std::vector<int64_t>& out) {
    TB_RETURN_IF_ERROR(expect('(', "'(' opening the shape tuple"));
    bool trailing_comma = false;
    for (;;) {
      skip_space();
      if (peek() == ')') break;
      if (out.size() == kNpyMaxDims) {
        return Error(TB_INVALID_ARGUMENT, "%s: the .npy shape has more than %zu dimensions",
                     source_.c_str(), kNpyMaxDims);
      }
      int64_t d = 0;
      TB_RETURN_IF_ERROR(integer(d));
      out.push_back(d);
      skip_space();
      trailing_comma = peek() == ',';
      if (trailing_comma) {
        ++pos_;
      } else if (peek() != ')') {
        return unexpected("',' or ')' in the shape tuple");
      }
    }
    // "(5)" is the integer 5 in Python, not a tuple: NumPy would refuse it, and so do we.
    if (out.size() == 1 && !trailing_comma) return unexpected("',' after the only dimension, as in (5,)");
    ++pos_;
    return Status();
  }

  std::string_view t_;
  const std::string& source_;
  size_t pos_ = 0;
};

uint32_t read_le(const uint8_t* p, int bytes) {
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

int64_t Array::count() const {
  int64_t c = 1;
  for (int64_t d : shape) c *= d;
  return c;
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

Result<Array> parse(std::span<const uint8_t> bytes, const std::string& source) {
  const size_t magic_seen = std::min<size_t>(bytes.size(), 6);
  if (magic_seen == 0) return Error(TB_DATA_LOSS, "%s is empty (expected a .npy file)", source.c_str());
  if (std::memcmp(bytes.data(), kNpyMagic, magic_seen) != 0) {
    return Error(TB_INVALID_ARGUMENT, "%s is not a .npy file: it does not start with the magic "
                 "\\x93NUMPY", source.c_str());
  }
  if (bytes.size() < 8) {
    return Error(TB_DATA_LOSS, "%s: the file ends after %zu bytes, inside the .npy preamble",
                 source.c_str(), bytes.size());
  }
  const unsigned major = bytes[6], minor = bytes[7];
  if (major < 1 || major > 3 || minor != 0) {
    return Error(TB_INVALID_ARGUMENT, "%s is .npy version %u.%u; this reader knows versions 1.0, "
                 "2.0 and 3.0", source.c_str(), major, minor);
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t header_start = 8 + len_bytes;
  if (bytes.size() < header_start) {
    return Error(TB_DATA_LOSS, "%s: the file ends after %zu bytes, inside the .npy preamble",
                 source.c_str(), bytes.size());
  }
  const uint64_t hlen = read_le(bytes.data() + 8, static_cast<int>(len_bytes));
  if (hlen > bytes.size() - header_start) {
    return Error(TB_DATA_LOSS, "%s: the .npy header says it is %llu bytes long, but only %zu "
                 "bytes follow the preamble", source.c_str(), (unsigned long long)hlen,
                 bytes.size() - header_start);
  }
  const std::string_view text(reinterpret_cast<const char*>(bytes.data() + header_start), hlen);
  std::string descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  TB_RETURN_IF_ERROR(HeaderParser(text, source).parse(descr, fortran, shape));
  if (descr != "<f4") {
    return Error(TB_INVALID_ARGUMENT, "%s holds dtype '%s'; only '<f4' (little-endian float32) "
                 "is accepted (convert with x.astype('<f4'))", source.c_str(), descr.c_str());
  }
  if (*fortran) {
    return Error(TB_INVALID_ARGUMENT, "%s is stored in Fortran (column-major) order; expected "
                 "'fortran_order': False (save np.ascontiguousarray(x))", source.c_str());
  }
  Array a;
  a.shape = std::move(*shape);
  uint64_t count = 1;
  for (int64_t d : a.shape) {
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(d), &count) || count > (uint64_t{1} << 60)) {
      return Error(TB_INVALID_ARGUMENT, "%s: the .npy shape %s holds too many elements",
                   source.c_str(), shape_text(a.shape).c_str());
    }
  }
  const uint64_t want = count * 4, have = bytes.size() - header_start - hlen;
  if (want != have) {
    return Error(TB_DATA_LOSS, "%s: the .npy payload is %llu bytes, but shape %s of float32 needs "
                 "%llu (%s)", source.c_str(), (unsigned long long)have, shape_text(a.shape).c_str(),
                 (unsigned long long)want, have < want ? "truncated" : "extra bytes follow");
  }
  a.payload = bytes.subspan(header_start + hlen);
  return a;
}

std::string header(const std::vector<int64_t>& shape) {
  const std::string dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + shape_text(shape) + ", }";
  const size_t v1_start = 10;
  const bool v2 = v1_start + dict.size() + 1 > 65535 + v1_start;
  const size_t start = v2 ? 12 : v1_start;
  // Pad with spaces so that the payload starts at a multiple of 64; the header ends in '\n'.
  const size_t padded = (start + dict.size() + 1 + 63) / 64 * 64;
  const size_t hlen = padded - start;
  std::string out(kNpyMagic, 6);
  out += static_cast<char>(v2 ? 2 : 1);
  out += '\0';
  for (size_t i = 0; i < (v2 ? 4u : 2u); ++i) out += static_cast<char>((hlen >> (8 * i)) & 0xff);
  out += dict;
  out.append(hlen - dict.size() - 1, ' ');
  out += '\n';
  return out;
}

}  // namespace twinbit::npy
