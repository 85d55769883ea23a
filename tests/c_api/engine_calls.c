/* The C side of tests/test_c_api_errors.cpp, compiled as C11 (-Wpedantic -Werror): the artifact,
 * backend and operation calls of include/twinbit/twinbit.h driven from C - a binding used after
 * every other handle is closed, and bad calls that must return the right code and message. */
#include "tests/c_api/engine_calls.h"

#include <stdio.h>
#include <string.h>

#include "tests/c_api/failure_list.h"

tb_code c_api_gemm_after_closes(const char* artifact, const char* spec, const char* entry, int64_t m,
                                tb_act_mode mode, const float* x, float* y, int remove_file) {
  tb_artifact* art = NULL;
  tb_engine* engine = NULL;
  tb_bound* bound = NULL;
  tb_entry_info info;
  tb_code code = tb_artifact_open(artifact, &art);
  if (code == TB_OK) code = tb_backend_open(spec, &engine);
  if (code == TB_OK) code = tb_bind(engine, art, entry, &bound);
  tb_backend_close(engine);
  tb_artifact_close(art);
  if (code != TB_OK) return code;
  if (remove_file && remove(artifact) != 0) {
    tb_unbind(bound);
    return TB_INTERNAL;
  }
  code = tb_bound_entry(bound, &info);
  if (code == TB_OK) code = tb_bound_gemm(bound, m, mode, x, info.k, y, info.n);
  tb_unbind(bound);
  return code;
}

int c_api_engine_bad_calls(const char* artifact, const char* truncated, char* failures, size_t capacity) {
  int wrong = 0;
  failures[0] = '\0';
  tb_artifact* art = (tb_artifact*)&wrong; /* not NULL, so a failed open must set it to NULL */
  tb_engine* engine = (tb_engine*)&wrong;
  tb_bound* bound = (tb_bound*)&wrong;
  tb_entry_info info;
  tb_backend_info about;
  tb_device_entry devices[2];
  size_t count = 0, index = 0;
  const char* name = NULL;
  float x[600], y[600], ya[100], yb[100];
  int8_t xq[640];
  memset(x, 0, sizeof x);

  /* artifacts */
  EXPECT(tb_artifact_open(artifact, NULL), TB_INVALID_ARGUMENT, "tb_artifact_open: out must not be NULL");
  EXPECT(tb_artifact_open(NULL, &art), TB_INVALID_ARGUMENT, "tb_artifact_open: path must not be NULL");
  CHECK_THAT(art == NULL);
  EXPECT(tb_artifact_open("/nonexistent/model.tbc", &art), TB_INVALID_ARGUMENT, "/nonexistent/model.tbc");
  EXPECT(tb_artifact_open(truncated, &art), TB_DATA_LOSS, truncated);
  CHECK_THAT(art == NULL);
  EXPECT(tb_artifact_open(artifact, &art), TB_OK, NULL);
  if (art == NULL) return wrong + failure("the good open gave no artifact", failures, capacity);
  EXPECT(tb_artifact_verify(NULL), TB_INVALID_ARGUMENT, "tb_artifact_verify: art must not be NULL");
  EXPECT(tb_artifact_entry_count(NULL, &count), TB_INVALID_ARGUMENT, "art must not be NULL");
  EXPECT(tb_artifact_entry_count(art, NULL), TB_INVALID_ARGUMENT, "count must not be NULL");
  EXPECT(tb_artifact_entry(art, 11, &info), TB_INVALID_ARGUMENT, "index 11 is out of range");
  EXPECT(tb_artifact_entry(art, 0, NULL), TB_INVALID_ARGUMENT, "info must not be NULL");
  EXPECT(tb_artifact_find(art, "nope", &index), TB_INVALID_ARGUMENT, "no entry 'nope' in ");
  EXPECT(tb_artifact_find(art, NULL, &index), TB_INVALID_ARGUMENT, "name must not be NULL");
  EXPECT(tb_artifact_find(art, "s0", NULL), TB_INVALID_ARGUMENT, "index must not be NULL");

  /* backends */
  EXPECT(tb_backend_name(99, &name), TB_INVALID_ARGUMENT, "index 99 is out of range");
  EXPECT(tb_backend_name(0, NULL), TB_INVALID_ARGUMENT, "name must not be NULL");
  EXPECT(tb_devices(NULL, devices, 2, &count), TB_INVALID_ARGUMENT, "tb_devices: spec must not be NULL");
  EXPECT(tb_devices("cpu", NULL, 2, &count), TB_INVALID_ARGUMENT, "out must not be NULL when capacity is 2");
  EXPECT(tb_devices("cpu", devices, 2, NULL), TB_INVALID_ARGUMENT, "count must not be NULL");
  EXPECT(tb_devices("tpu", devices, 2, &count), TB_INVALID_ARGUMENT, "tpu");
  EXPECT(tb_backend_open("cpu", NULL), TB_INVALID_ARGUMENT, "tb_backend_open: out must not be NULL");
  EXPECT(tb_backend_open(NULL, &engine), TB_INVALID_ARGUMENT, "spec must not be NULL");
  CHECK_THAT(engine == NULL);
  EXPECT(tb_backend_open("tpu", &engine), TB_INVALID_ARGUMENT, "unknown backend 'tpu'");
  EXPECT(tb_backend_open("cpu,isa=avx9", &engine), TB_INVALID_ARGUMENT, "avx9");
  EXPECT(tb_backend_open("cpu,", &engine), TB_INVALID_ARGUMENT, "'cpu,'");
  EXPECT(tb_backend_open("plugin:", &engine), TB_INVALID_ARGUMENT, "no path after 'plugin:'");
  EXPECT(tb_backend_open("plugin:/nonexistent/libnone.so", &engine), TB_UNAVAILABLE, "/nonexistent/libnone.so");
  CHECK_THAT(engine == NULL);
  EXPECT(tb_backend_open("cpu", &engine), TB_OK, NULL);
  if (engine == NULL) return wrong + failure("the good open gave no backend", failures, capacity);
  EXPECT(tb_backend_describe(NULL, &about), TB_INVALID_ARGUMENT, "engine must not be NULL");
  EXPECT(tb_backend_describe(engine, NULL), TB_INVALID_ARGUMENT, "info must not be NULL");

  /* binding */
  EXPECT(tb_bind(engine, art, "s1", NULL), TB_INVALID_ARGUMENT, "tb_bind: out must not be NULL");
  EXPECT(tb_bind(NULL, art, "s1", &bound), TB_INVALID_ARGUMENT, "engine must not be NULL");
  CHECK_THAT(bound == NULL);
  EXPECT(tb_bind(engine, NULL, "s1", &bound), TB_INVALID_ARGUMENT, "art must not be NULL");
  EXPECT(tb_bind(engine, art, NULL, &bound), TB_INVALID_ARGUMENT, "entry_name must not be NULL");
  EXPECT(tb_bind(engine, art, "nope", &bound), TB_INVALID_ARGUMENT, "no entry 'nope' in ");
  /* a handle of another type: refused by type, never read as the wrong object */
  EXPECT(tb_bind(engine, (const tb_artifact*)engine, "s1", &bound), TB_INVALID_ARGUMENT, "art is a tb_engine, not a tb_artifact");
  EXPECT(tb_bind(engine, art, "s1", &bound), TB_OK, NULL);
  if (bound == NULL) return wrong + failure("the good bind gave no binding", failures, capacity);
  EXPECT(tb_bound_entry(bound, &info), TB_OK, NULL);
  CHECK_THAT(strcmp(info.name, "s1") == 0 && info.kind == TB_WEIGHTS_STRIPS && info.prec == TB_PREC_Q4);
  EXPECT(tb_bound_entry(NULL, &info), TB_INVALID_ARGUMENT, "bound must not be NULL");
  EXPECT(tb_bound_entry(bound, NULL), TB_INVALID_ARGUMENT, "info must not be NULL");

  /* gemm: s1 is K x N = info.k x info.n */
  const int64_t K = info.k, N = info.n;
  EXPECT(tb_bound_gemm(NULL, 1, TB_ACT_F32, x, K, y, N), TB_INVALID_ARGUMENT, "tb_bound_gemm: bound must not be NULL");
  EXPECT(tb_bound_gemm(bound, 1, TB_ACT_F32, NULL, K, y, N), TB_INVALID_ARGUMENT, "x must not be NULL");
  EXPECT(tb_bound_gemm(bound, 1, TB_ACT_F32, x, K, NULL, N), TB_INVALID_ARGUMENT, "y must not be NULL");
  EXPECT(tb_bound_gemm(bound, 1, (tb_act_mode)7, x, K, y, N), TB_INVALID_ARGUMENT, "activation mode 7");
  EXPECT(tb_bound_gemm(bound, 0, TB_ACT_F32, x, K, y, N), TB_INVALID_ARGUMENT, "m = 0 is out of range");
  EXPECT(tb_bound_gemm(bound, -3, TB_ACT_I8, x, K, y, N), TB_INVALID_ARGUMENT, "m = -3 is out of range");
  EXPECT(tb_bound_gemm(bound, 1, TB_ACT_F32, x, K - 1, y, N), TB_INVALID_ARGUMENT, "ldx = ");
  EXPECT(tb_bound_gemm(bound, 1, TB_ACT_F32, x, K, y, N - 1), TB_INVALID_ARGUMENT, "ldy = ");
  EXPECT(tb_bound_gemm(bound, 1, TB_ACT_I8, x, K - 1, y, N), TB_INVALID_ARGUMENT, "ldx = ");
  EXPECT(tb_bound_gemm(bound, 1, TB_ACT_I8, x, K, y, N - 1), TB_INVALID_ARGUMENT, "ldy = ");
  EXPECT(tb_bound_gemm(bound, 1, TB_ACT_I8, x, K, y, N), TB_OK, NULL);
  EXPECT(tb_bound_gemv_f32(bound, x, y), TB_INVALID_ARGUMENT, "entry 's1' is a strip set, not float rows");

  /* float rows: rows_a and rows_b are 77 x 45, rows_c 3 x 45 */
  tb_bound *rows_a = NULL, *rows_b = NULL, *rows_c = NULL, *other = NULL;
  tb_engine* engine2 = NULL;
  EXPECT(tb_bind(engine, art, "rows_a", &rows_a), TB_OK, NULL);
  EXPECT(tb_bind(engine, art, "rows_b", &rows_b), TB_OK, NULL);
  EXPECT(tb_bind(engine, art, "rows_c", &rows_c), TB_OK, NULL);
  EXPECT(tb_backend_open("cpu,isa=sse2", &engine2), TB_OK, NULL);
  EXPECT(tb_bind(engine2, art, "rows_b", &other), TB_OK, NULL);
  EXPECT(tb_bound_gemm(rows_a, 1, TB_ACT_F32, x, 45, y, 77), TB_INVALID_ARGUMENT, "entry 'rows_a' is float rows, not a strip set");
  EXPECT(tb_bound_gemv_f32(NULL, x, y), TB_INVALID_ARGUMENT, "bound must not be NULL");
  EXPECT(tb_bound_gemv_f32(rows_a, NULL, y), TB_INVALID_ARGUMENT, "x must not be NULL");
  EXPECT(tb_bound_gemv_f32(rows_a, x, NULL), TB_INVALID_ARGUMENT, "y must not be NULL");
  EXPECT(tb_bound_gemv_pair(rows_a, NULL, x, ya, yb), TB_INVALID_ARGUMENT, "b must not be NULL");
  EXPECT(tb_bound_gemv_pair(rows_a, rows_b, x, ya, NULL), TB_INVALID_ARGUMENT, "yb must not be NULL");
  EXPECT(tb_bound_gemv_pair(rows_a, bound, x, ya, yb), TB_INVALID_ARGUMENT, "entry 's1' is a strip set");
  EXPECT(tb_bound_gemv_pair(rows_a, rows_c, x, ya, yb), TB_INVALID_ARGUMENT, "same-shape");
  EXPECT(tb_bound_gemv_pair(rows_a, other, x, ya, yb), TB_FAILED_PRECONDITION, "bound on different backends");
  EXPECT(tb_bound_gemv_pair(rows_a, rows_b, x, ya, yb), TB_OK, NULL);

  /* gdn_delta and the quantiser */
  {
    float state[2 * 4 * 3], q[4], k[4], v[6], g[2], beta[2], o[6];
    tb_gdn_args args = {2, 1, 4, 3, state, q, k, v, g, beta, o};
    memset(state, 0, sizeof state);
    memset(q, 0, sizeof q);
    memset(k, 0, sizeof k);
    memset(v, 0, sizeof v);
    memset(g, 0, sizeof g);
    memset(beta, 0, sizeof beta);
    EXPECT(tb_gdn_delta(engine, &args), TB_OK, NULL);
    EXPECT(tb_gdn_delta(NULL, &args), TB_INVALID_ARGUMENT, "tb_gdn_delta: engine must not be NULL");
    EXPECT(tb_gdn_delta(engine, NULL), TB_INVALID_ARGUMENT, "args must not be NULL");
    args.beta = NULL;
    EXPECT(tb_gdn_delta(engine, &args), TB_INVALID_ARGUMENT, "args->beta must not be NULL");
    args.beta = beta;
    args.kh = 3;
    EXPECT(tb_gdn_delta(engine, &args), TB_INVALID_ARGUMENT, "not a multiple of key heads");
    args.kh = 1;
    args.vd = 0;
    EXPECT(tb_gdn_delta(engine, &args), TB_INVALID_ARGUMENT, "vd = 0 is out of range");
  }
  EXPECT(tb_quantize_i8(engine, 2, 300, x, 300, xq, 320, y, 10), TB_OK, NULL);
  EXPECT(tb_quantize_i8(NULL, 2, 300, x, 300, xq, 320, y, 10), TB_INVALID_ARGUMENT, "engine must not be NULL");
  EXPECT(tb_quantize_i8(engine, 2, 300, NULL, 300, xq, 320, y, 10), TB_INVALID_ARGUMENT, "x must not be NULL");
  EXPECT(tb_quantize_i8(engine, 2, 300, x, 300, NULL, 320, y, 10), TB_INVALID_ARGUMENT, "xq must not be NULL");
  EXPECT(tb_quantize_i8(engine, 2, 300, x, 300, xq, 320, NULL, 10), TB_INVALID_ARGUMENT, "xd must not be NULL");
  EXPECT(tb_quantize_i8(engine, 0, 300, x, 300, xq, 320, y, 10), TB_INVALID_ARGUMENT, "m = 0 is out of range");
  EXPECT(tb_quantize_i8(engine, 2, 0, x, 300, xq, 320, y, 10), TB_INVALID_ARGUMENT, "K = 0 is out of range");
  EXPECT(tb_quantize_i8(engine, 2, 300, x, 299, xq, 320, y, 10), TB_INVALID_ARGUMENT, "ldx = 299");
  EXPECT(tb_quantize_i8(engine, 2, 300, x, 300, xq, 319, y, 10), TB_INVALID_ARGUMENT, "ldxq = 319");
  EXPECT(tb_quantize_i8(engine, 2, 300, x, 300, xq, 320, y, 9), TB_INVALID_ARGUMENT, "ldxd = 9");

  /* closed handles are refused, not read; closing twice, or NULL, is harmless */
  tb_unbind(rows_c);
  EXPECT(tb_bound_gemv_f32(rows_c, x, y), TB_INVALID_ARGUMENT, "bound is not an open tb_bound (closed already");
  tb_unbind(rows_c);
  tb_unbind(NULL);
  tb_unbind(other);
  tb_backend_close(engine2);
  EXPECT(tb_backend_describe(engine2, &about), TB_INVALID_ARGUMENT, "engine is not an open tb_engine");
  EXPECT(tb_bind(engine2, art, "s1", &other), TB_INVALID_ARGUMENT, "engine is not an open tb_engine");
  tb_backend_close(engine2);
  tb_backend_close(NULL);

  /* The binding outlives both handles. */
  tb_backend_close(engine);
  tb_artifact_close(art);
  EXPECT(tb_artifact_entry_count(art, &count), TB_INVALID_ARGUMENT, "art is not an open tb_artifact");
  EXPECT(tb_artifact_verify(art), TB_INVALID_ARGUMENT, "art is not an open tb_artifact");
  tb_artifact_close(art);
  tb_artifact_close(NULL);
  EXPECT(tb_bound_gemm(bound, 1, TB_ACT_F32, x, K, y, N), TB_OK, NULL);
  EXPECT(tb_bound_gemv_pair(rows_a, rows_b, x, ya, yb), TB_OK, NULL);

  /* the runtime's last error is the same text */
  EXPECT(tb_bound_gemm(bound, 1, TB_ACT_F32, x, K, NULL, N), TB_INVALID_ARGUMENT, "y must not be NULL");
  CHECK_THAT(tb_runtime_last_error() == tb_last_error());
  tb_unbind(bound);
  tb_unbind(rows_a);
  tb_unbind(rows_b);
#undef EXPECT
#undef CHECK_THAT
  return wrong;
}
