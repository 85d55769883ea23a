// C++ side of twinbit status values: a code plus a message, cheap when OK.
//
// Library code returns Status (or Result<T>) and never calls exit(); the CLI turns a failed
// Status into one line on stderr and a non-zero exit. Conversions to and from the C ABI
// (tb_code + tb_error) live here so every boundary does it the same way.
#pragma once

#include <cstdarg>
#include <string>
#include <utility>
#include <variant>

#include <twinbit/status.h>

namespace twinbit {

class Status {
 public:
  Status() = default;  // OK
  Status(tb_code code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == TB_OK; }
  tb_code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "DATA_LOSS: header checksum mismatch (stored 0x..., computed 0x...)"
  std::string to_string() const;

  // Writes the message into a C error struct (if non-null) and returns the code.
  tb_code to_c(tb_error* err) const;
  static Status from_c(tb_code code, const tb_error& err);

 private:
  tb_code code_ = TB_OK;
  std::string message_;
};

// printf-style message builders: Error(TB_DATA_LOSS, "payload %s: offset %llu past end", ...)
Status Error(tb_code code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
std::string Format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// Either a value or a non-OK Status.
template <class T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}        // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}  // NOLINT: must not be OK
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &std::get<T>(v_); }
  T& operator*() & { return std::get<T>(v_); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace twinbit

// Early return on failure, for functions returning Status or Result<T>.
#define TB_RETURN_IF_ERROR(expr)          \
  do {                                    \
    ::twinbit::Status tb_s_ = (expr);     \
    if (!tb_s_.ok()) return tb_s_;        \
  } while (0)
