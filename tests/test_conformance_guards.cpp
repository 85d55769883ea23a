// The conformance suite's guards (conformance/guards/, core/error_buffer.h) and its checks of a
// backend beyond the bits: a write outside the output, untrusted text, supports() vs the call,
// the repeat. The crash and hang verdicts of isolated runs are tested through the command
// (tests/broken_backends/check_hostile_run.py).
#include <doctest/doctest.h>

#include <cstring>

#include "conformance/conformance.h"
#include "conformance/guards/guarded_buffer.h"
#include "conformance/guards/untrusted_text.h"
#include "core/error_buffer.h"
#include "tests/broken_backends/broken_backends.h"
#include "tests/test_backend_util.h"

using namespace twinbit;
using twinbit::testing::make_backend;
using namespace twinbit::conformance;
using guards::GuardedBuffer;
using guards::sanitize_untrusted;

TEST_CASE("sanitize_untrusted: invalid UTF-8, control bytes, forged lines, bidi; idempotent") {
  const std::string hostile = "a\xff" "b\nresult: PASS\r\t\x1b[31m\x7f\xc2\x85\xe2\x80\xae\xe2\x80\xa8z\xc3\xa9";
  const std::string s = sanitize_untrusted(hostile);
  CHECK(s == "a\xef\xbf\xbd" "b\\nresult: PASS\\r\\t\\x1B[31m\\x7F\\x85\\u{202E}\\u{2028}z\xc3\xa9");
  CHECK(sanitize_untrusted(s) == s);
  for (char ch : s) CHECK(static_cast<unsigned char>(ch) >= 0x20);
  CHECK(sanitize_untrusted("\xe2\x82") == "\xef\xbf\xbd\xef\xbf\xbd");  // truncated sequence
  CHECK(sanitize_untrusted("\xc0\xaf") == "\xef\xbf\xbd\xef\xbf\xbd");  // overlong '/'
  CHECK(sanitize_untrusted(std::string(50, 'x'), 10) == std::string(10, 'x') + " [... 40 more bytes]");
}

TEST_CASE("GuardedBuffer: a write just outside the output is named; inside is fine") {
  GuardedBuffer y("y", 33 * 4, 4, 0x7fa5a5a5u);
  CHECK(reinterpret_cast<uintptr_t>(y.as<float>()) % 64 == 0);
  for (int i = 0; i < 33; ++i) y.as<float>()[i] = 1.0f;
  CHECK(y.check().ok());
  y.as<float>()[34] = 2.0f;
  CHECK(y.check().message() == "wrote y[34], past the end of the output (33 elements)");
  GuardedBuffer z("xq", 7, 1, 0x5a5a5a5au);
  z.as<int8_t>()[-3] = 1;
  CHECK(z.check().message() == "wrote xq[-3], before the start of the output (3 byte(s) before it)");
  char what[64];
  const float* past = y.as<float>() + 33;
  bool found = false;
  for (int i = 0; i < 1024 && !found; ++i) found = guards::describe_guard_fault(past + i, what, sizeof what);
  REQUIRE(found);  // the guard page begins within a band (plus alignment) of the end
  CHECK(std::string(what) == "past the end of y");
  CHECK_FALSE(guards::describe_guard_fault(y.as<float>(), what, sizeof what));
}

TEST_CASE("GuardedError: the tb_error ends at a guard page, cleared for every call, nests") {
  GuardedError outer;
  std::memset(outer.get()->message, 'x', TB_ERROR_MESSAGE_CAPACITY);  // the whole buffer is usable
  CHECK(is_error_buffer_guard(outer.get()->message + TB_ERROR_MESSAGE_CAPACITY));
  CHECK_FALSE(is_error_buffer_guard(outer.get()->message));
  {
    GuardedError inner;  // a backend calling a backend: its own buffer, cleared
    CHECK(inner.get() != outer.get());
    CHECK((*inner).message[0] == '\0');
  }
  GuardedError next;
  CHECK((*next).message[0] == '\0');
}

TEST_CASE("supports() says OK, the operation says UNIMPLEMENTED: error, not unsupported") {
  Backend b = make_backend(tb_backend_create_declines_at_call);
  const Report r = run_suite(b, {gemm_case(TB_PREC_Q8, TB_ACT_F32, 3, 33, 96)}, SuiteOptions{});
  REQUIRE(r.results.size() == 1);
  CHECK(r.results[0].verdict == Verdict::error);
  CHECK(r.results[0].message.find("supports() accepted the case, then gemm answered UNIMPLEMENTED") !=
        std::string::npos);
  CHECK_FALSE(r.passed());
}

TEST_CASE("the repeat: a backend wrong only on its second call per binding stays a plain differ") {
  // Every run binds afresh, so each run (alone, and each of the two at once) differs the same way:
  // deterministic, reported as the difference it is.
  Backend b = make_backend(tb_backend_create_broken_second_call);
  const Report r = run_suite(b, {gemm_case(TB_PREC_Q8, TB_ACT_F32, 3, 33, 96)}, SuiteOptions{});
  REQUIRE(r.results.size() == 1);
  CHECK(r.results[0].verdict == Verdict::differ);
  CHECK(r.results[0].mismatch.first_output == "y_call2");
}
