/* The C side of tests/test_c_api.cpp, compiled as C (C11) to prove that include/twinbit/twinbit.h
 * is a C header and that its calls work from C: a gemm through the C API (whose bits the C++ side
 * compares with the reference), and bad calls that must return the right code and message. */
#include "tests/c_api/c_api_calls.h"

#include <stdio.h>
#include <string.h>

#include "tests/c_api/failure_list.h"

#include "twinbit/twinbit.h"

tb_code c_api_gemm(const char* artifact, const char* const* specs, size_t n_specs, const char* overrides,
                   const char* profile, const char* entry, int64_t m, tb_act_mode mode, const float* x, float* y, char* placement,
                   size_t placement_capacity) {
  tb_runtime* rt = NULL;
  tb_code code = tb_runtime_open(artifact, specs, n_specs, overrides, profile, &rt);
  if (code != TB_OK) return code;
  int64_t n = 0, k = 0;
  code = tb_runtime_entry_shape(rt, entry, &n, &k);
  if (code == TB_OK) code = tb_runtime_gemm(rt, entry, m, mode, x, k, y, n);
  if (code == TB_OK) code = tb_runtime_describe(rt, entry, m, mode, placement, placement_capacity, NULL);
  tb_runtime_close(rt);
  return code;
}

int c_api_bad_calls(const char* artifact, char* failures, size_t capacity) {
  int wrong = 0;
  failures[0] = '\0';
  tb_runtime* rt = (tb_runtime*)&wrong; /* not NULL, so a failed open must set it to NULL */
  const char* specs[] = {"cpu", "cpu,isa=sse2"};
  const char* bad_spec[] = {"cpu", NULL};
  const char* no_such[] = {"tpu"};

  EXPECT(tb_runtime_open(artifact, specs, 2, NULL, NULL, NULL), TB_INVALID_ARGUMENT, "tb_runtime_open: out must not be NULL");
  EXPECT(tb_runtime_open(NULL, specs, 2, NULL, NULL, &rt), TB_INVALID_ARGUMENT, "tb_runtime_open: artifact must not be NULL");
  CHECK_THAT(rt == NULL);
  EXPECT(tb_runtime_open(artifact, NULL, 1, NULL, NULL, &rt), TB_INVALID_ARGUMENT, "backend_specs must not be NULL when n_specs is 1");
  EXPECT(tb_runtime_open(artifact, bad_spec, 2, NULL, NULL, &rt), TB_INVALID_ARGUMENT, "backend_specs[1] must not be NULL");
  EXPECT(tb_runtime_open(artifact, no_such, 1, NULL, NULL, &rt), TB_INVALID_ARGUMENT, "tpu");
  EXPECT(tb_runtime_open("/nonexistent/model.tbc", specs, 2, NULL, NULL, &rt), TB_INVALID_ARGUMENT, "cannot open /nonexistent/model.tbc");
  EXPECT(tb_runtime_open(artifact, specs, 2, "lm_head.q8=cpu\nlm_head.q4", NULL, &rt), TB_INVALID_ARGUMENT,
         "overrides text line 2: 'lm_head.q4'");
  EXPECT(tb_runtime_open(artifact, specs, 2, "lm_head.q8=cpu,isa=avx9", NULL, &rt), TB_INVALID_ARGUMENT, "avx9");
  EXPECT(tb_runtime_open(artifact, specs, 1, "lm_head.q8=cpu,isa=sse2", NULL, &rt), TB_INVALID_ARGUMENT,
         "is not one of the runtime's backends");
  CHECK_THAT(rt == NULL);

  EXPECT(tb_runtime_open(artifact, specs, 2, "lm_head.*=cpu*0.5+cpu,isa=sse2*0.5", NULL, &rt), TB_OK, NULL);
  if (rt == NULL) return wrong + failure("the good open gave no runtime", failures, capacity);
  float x[256] = {0}, y[1000] = {0};
  int64_t n = 0, k = 0;
  char text[256];
  size_t length = 0;
  EXPECT(tb_runtime_gemm(NULL, "lm_head.q8", 1, TB_ACT_F32, x, 256, y, 1000), TB_INVALID_ARGUMENT, "tb_runtime_gemm: rt must not be NULL");
  EXPECT(tb_runtime_gemm(rt, NULL, 1, TB_ACT_F32, x, 256, y, 1000), TB_INVALID_ARGUMENT, "entry must not be NULL");
  EXPECT(tb_runtime_gemm(rt, "lm_head.q8", 1, TB_ACT_F32, NULL, 256, y, 1000), TB_INVALID_ARGUMENT, "x must not be NULL");
  EXPECT(tb_runtime_gemm(rt, "lm_head.q8", 1, TB_ACT_F32, x, 256, NULL, 1000), TB_INVALID_ARGUMENT, "y must not be NULL");
  EXPECT(tb_runtime_gemm(rt, "nope", 1, TB_ACT_F32, x, 256, y, 1000), TB_INVALID_ARGUMENT, "no entry 'nope'");
  EXPECT(tb_runtime_gemm(rt, "ssm_beta", 1, TB_ACT_F32, x, 256, y, 1000), TB_INVALID_ARGUMENT, "not a strip set");
  EXPECT(tb_runtime_gemm(rt, "lm_head.q8", 0, TB_ACT_F32, x, 256, y, 1000), TB_INVALID_ARGUMENT, "tb_runtime_gemm: ");
  EXPECT(tb_runtime_gemm(rt, "lm_head.q8", 1, (tb_act_mode)7, x, 256, y, 1000), TB_INVALID_ARGUMENT, "activation mode 7");
  EXPECT(tb_runtime_gemm(rt, "lm_head.q8", 1, TB_ACT_F32, x, 255, y, 1000), TB_INVALID_ARGUMENT, "ldx 255 must be >= K");
  EXPECT(tb_runtime_gemm(rt, "lm_head.q8", 1, TB_ACT_I8, x, 256, y, 999), TB_INVALID_ARGUMENT, "ldy 999 >= N");
  EXPECT(tb_runtime_entry_shape(NULL, "lm_head.q8", &n, &k), TB_INVALID_ARGUMENT, "rt must not be NULL");
  EXPECT(tb_runtime_entry_shape(rt, NULL, &n, &k), TB_INVALID_ARGUMENT, "entry must not be NULL");
  EXPECT(tb_runtime_entry_shape(rt, "lm_head.q8", NULL, &k), TB_INVALID_ARGUMENT, "n must not be NULL");
  EXPECT(tb_runtime_entry_shape(rt, "lm_head.q8", &n, NULL), TB_INVALID_ARGUMENT, "k must not be NULL");
  EXPECT(tb_runtime_entry_shape(rt, "ssm_beta", &n, &k), TB_INVALID_ARGUMENT, "'ssm_beta' is a float matrix");
  EXPECT(tb_runtime_entry_shape(rt, "lm_head.q8", &n, &k), TB_OK, NULL);
  CHECK_THAT(n == 1000 && k == 256);
  EXPECT(tb_runtime_describe(NULL, "lm_head.q8", 1, TB_ACT_F32, text, sizeof text, NULL), TB_INVALID_ARGUMENT, "rt must not be NULL");
  EXPECT(tb_runtime_describe(rt, NULL, 1, TB_ACT_F32, text, sizeof text, NULL), TB_INVALID_ARGUMENT, "entry must not be NULL");
  EXPECT(tb_runtime_describe(rt, "lm_head.q8", 1, TB_ACT_F32, NULL, 8, NULL), TB_INVALID_ARGUMENT, "text must not be NULL when capacity is 8");
  EXPECT(tb_runtime_describe(rt, "lm_head.q8", 0, TB_ACT_F32, text, sizeof text, NULL), TB_INVALID_ARGUMENT, "m must be >= 1 (got 0)");
  EXPECT(tb_runtime_describe(rt, "lm_head.q8", 1, (tb_act_mode)-1, text, sizeof text, NULL), TB_INVALID_ARGUMENT, "activation mode -1");
  EXPECT(tb_runtime_describe(rt, "nope", 1, TB_ACT_F32, text, sizeof text, NULL), TB_INVALID_ARGUMENT, "no entry 'nope'");
  /* Sizing a buffer: capacity 0 writes nothing and gives the length; a short buffer is cut. */
  EXPECT(tb_runtime_describe(rt, "lm_head.q8", 1, TB_ACT_F32, NULL, 0, &length), TB_OK, NULL);
  EXPECT(tb_runtime_describe(rt, "lm_head.q8", 1, TB_ACT_F32, text, 5, NULL), TB_OK, NULL);
  CHECK_THAT(strcmp(text, "cpu*") == 0);
  EXPECT(tb_runtime_describe(rt, "lm_head.q8", 1, TB_ACT_F32, text, sizeof text, NULL), TB_OK, NULL);
  CHECK_THAT(strlen(text) == length);
  CHECK_THAT(strstr(text, "cpu*0.5+cpu,isa=sse2*0.5 (override overrides text line 1") == text);
  tb_runtime_close(rt);
  tb_runtime_close(NULL);
#undef EXPECT
#undef CHECK_THAT
  return wrong;
}
