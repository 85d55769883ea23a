#include <twinbit/status.hpp>

#include <cstdio>
#include <cstring>
#include <vector>

extern "C" const char* tb_code_name(tb_code code) {
  switch (code) {
    case TB_OK: return "OK";
    case TB_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case TB_UNIMPLEMENTED: return "UNIMPLEMENTED";
    case TB_UNAVAILABLE: return "UNAVAILABLE";
    case TB_FAILED_PRECONDITION: return "FAILED_PRECONDITION";
    case TB_RESOURCE_EXHAUSTED: return "RESOURCE_EXHAUSTED";
    case TB_DATA_LOSS: return "DATA_LOSS";
    case TB_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN";
}

namespace twinbit {
namespace {
std::string vformat(const char* fmt, va_list args) {
  va_list copy;
  va_copy(copy, args);
  int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  if (n < 0) return fmt;
  std::vector<char> buf(static_cast<size_t>(n) + 1);
  std::vsnprintf(buf.data(), buf.size(), fmt, args);
  return std::string(buf.data(), static_cast<size_t>(n));
}
}  // namespace

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(tb_code_name(code_)) + ": " + message_;
}

tb_code Status::to_c(tb_error* err) const {
  if (!ok() && err) {
    std::snprintf(err->message, sizeof(err->message), "%s", message_.c_str());
  }
  return code_;
}

Status Status::from_c(tb_code code, const tb_error& err) {
  if (code == TB_OK) return Status();
  size_t len = strnlen(err.message, sizeof(err.message));
  std::string msg(err.message, len);
  if (msg.empty()) msg = "(the backend gave no message)";
  return Status(code, msg);
}

Status Error(tb_code code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string msg = vformat(fmt, args);
  va_end(args);
  return Status(code, std::move(msg));
}

std::string Format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string msg = vformat(fmt, args);
  va_end(args);
  return msg;
}

}  // namespace twinbit
