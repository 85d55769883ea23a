// Runs one projection of an artifact through twinbit's C API and writes its input and output as
// raw float32 (compare the output with `twinbit run ... --input X.f32 -o Y.f32`).
// Usage: consumer_c ARTIFACT ENTRY X.f32 Y.f32
#include <stdio.h>
#include <stdlib.h>

#include <twinbit/twinbit.h>

static int write_floats(const char* path, const float* v, size_t count) {
  FILE* f = fopen(path, "wb");
  int ok = f != NULL && fwrite(v, sizeof *v, count, f) == count;
  if (f != NULL && fclose(f) != 0) ok = 0;
  if (!ok) fprintf(stderr, "cannot write %s\n", path);
  return ok;
}

int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: %s ARTIFACT ENTRY X.f32 Y.f32\n", argv[0]);
    return 2;
  }
  const char* entry = argv[2];
  const char* backends[] = {"cpu"};
  tb_runtime* rt = NULL;
  int64_t n = 0, k = 0;
  const int64_t m = 3;  // rows of activations
  if (tb_runtime_open(argv[1], backends, 1, NULL, NULL, &rt) != TB_OK ||
      tb_runtime_entry_shape(rt, entry, &n, &k) != TB_OK) {
    fprintf(stderr, "%s\n", tb_runtime_last_error());
    tb_runtime_close(rt);
    return 1;
  }
  float* x = malloc((size_t)(m * k) * sizeof *x);
  float* y = malloc((size_t)(m * n) * sizeof *y);
  int ok = x != NULL && y != NULL;
  if (!ok) fprintf(stderr, "out of memory for %lld x %lld activations\n", (long long)m, (long long)k);
  if (ok) {
    for (int64_t i = 0; i < m * k; ++i) x[i] = (float)(i % 17 - 8) / 8.0f;
    ok = tb_runtime_gemm(rt, entry, m, TB_ACT_F32, x, k, y, n) == TB_OK;
    if (!ok) fprintf(stderr, "%s\n", tb_runtime_last_error());
  }
  ok = ok && write_floats(argv[3], x, (size_t)(m * k)) && write_floats(argv[4], y, (size_t)(m * n));
  if (ok) printf("%s: y[%lld][%lld] = %g\n", entry, (long long)m, (long long)n, y[0]);
  free(x);
  free(y);
  tb_runtime_close(rt);
  return ok ? 0 : 1;
}
