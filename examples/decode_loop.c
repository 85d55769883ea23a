/* A tiny decode loop in C over twinbit's host C API (twinbit/twinbit.h; docs/C_API.md): opens an
 * artifact, lists its entries, opens a backend, binds the projections of the first layer and runs
 * a few tokens, each one's output fed back as the next token's input, printing a checksum of every
 * token's outputs. The checksums are the same on every backend (each gives the scalar reference's
 * bits), which is what ctest checks by running this twice with different backends.
 *
 *   decode_loop ARTIFACT [SPEC] [TOKENS]
 *
 * SPEC: a backend spec ("cpu", "cpu,isa=sse2", "cuda:0", "plugin:PATH"); without one, the first of
 * "cuda", "cpu" that opens here. Stdout holds only what every backend must agree on (entries,
 * checksums); stderr says which backend ran. Exit: 0 ok, 1 a call failed, 2 usage. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <twinbit/twinbit.h>

#define MAX_BOUND 16

static int failed(const char* what) {
  fprintf(stderr, "decode_loop: %s: %s\n", what, tb_last_error());
  return 1;
}

/* FNV-1a over the bytes of n floats: equal bits, equal checksum. */
static uint64_t checksum(uint64_t h, const float* v, int64_t n) {
  const unsigned char* p = (const unsigned char*)v;
  for (size_t i = 0; i < (size_t)n * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

/* The entries of the layer the first strip entry belongs to ("blk.0." of "blk.0.attn_q.q8"; the
 * whole file when names have no layer), in the same precision. */
static int same_layer(const tb_entry_info* first, const tb_entry_info* e) {
  const char* dot = strchr(first->name, '.');
  size_t prefix = 0;
  if (strncmp(first->name, "blk.", 4) == 0 && dot != NULL && strchr(dot + 1, '.') != NULL) {
    prefix = (size_t)(strchr(dot + 1, '.') - first->name) + 1;
  }
  return e->kind == TB_WEIGHTS_STRIPS && e->prec == first->prec && strncmp(first->name, e->name, prefix) == 0;
}

static tb_code open_backend(const char* spec, tb_engine** engine) {
  static const char* const preferred[] = {"cuda", "cpu"};
  if (spec != NULL) return tb_backend_open(spec, engine);
  tb_code code = TB_UNAVAILABLE;
  for (size_t i = 0; i < sizeof preferred / sizeof preferred[0]; ++i) {
    code = tb_backend_open(preferred[i], engine);
    if (code == TB_OK) break;
  }
  return code;
}

int main(int argc, char** argv) {
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: decode_loop ARTIFACT [SPEC] [TOKENS]\n");
    return 2;
  }
  const int tokens = argc > 3 ? atoi(argv[3]) : 4;
  if (tokens < 1) {
    fprintf(stderr, "decode_loop: TOKENS must be >= 1 (got '%s')\n", argv[3]);
    return 2;
  }
  fprintf(stderr, "twinbit %s, backend ABI %u\n", tb_version_string(), (unsigned)tb_backend_abi_version());

  tb_artifact* art = NULL;
  if (tb_artifact_open(argv[1], &art) != TB_OK) return failed("open");
  if (tb_artifact_verify(art) != TB_OK) return failed("verify");
  size_t count = 0;
  tb_artifact_entry_count(art, &count);
  tb_entry_info first = {0};
  int have_first = 0;
  for (size_t i = 0; i < count; ++i) {
    tb_entry_info e;
    if (tb_artifact_entry(art, i, &e) != TB_OK) return failed("entry");
    if (e.kind == TB_WEIGHTS_STRIPS) {
      printf("entry %s: strips %s, N %lld, K %lld\n", e.name, e.prec == TB_PREC_Q8 ? "q8" : "q4", (long long)e.n,
             (long long)e.k);
      if (!have_first) first = e;
      have_first = 1;
    } else {
      printf("entry %s: float rows, %lld x %lld\n", e.name, (long long)e.rows, (long long)e.cols);
    }
  }
  if (!have_first) {
    fprintf(stderr, "decode_loop: %s has no strip entry to run\n", argv[1]);
    return 1;
  }

  tb_engine* engine = NULL;
  if (open_backend(argc > 2 ? argv[2] : NULL, &engine) != TB_OK) return failed("backend");
  tb_backend_info about;
  tb_backend_describe(engine, &about);
  fprintf(stderr, "backend %s: %s\n", about.name, about.device);

  /* Bind the layer; the handles of the artifact and the backend are not needed after that (each
   * binding keeps what it uses), so they are closed now. */
  tb_bound* bound[MAX_BOUND];
  tb_entry_info info[MAX_BOUND];
  int n_bound = 0;
  for (size_t i = 0; i < count && n_bound < MAX_BOUND; ++i) {
    tb_entry_info e;
    tb_artifact_entry(art, i, &e);
    if (!same_layer(&first, &e)) continue;
    if (tb_bind(engine, art, e.name, &bound[n_bound]) != TB_OK) return failed("bind");
    tb_bound_entry(bound[n_bound], &info[n_bound]);
    ++n_bound;
  }
  tb_backend_close(engine);
  tb_artifact_close(art);

  /* The residual stream h has the layer's input width H. Each projection reads h when its K is H,
   * else the previous projection's output (ffn_down after ffn_up); outputs of width H are added
   * to the next h, which is scaled to max |h| = 1 so values stay finite. */
  const int64_t H = info[0].k;
  int64_t widest = H;
  for (int i = 0; i < n_bound; ++i) widest = info[i].n > widest ? info[i].n : widest;
  float* h = calloc((size_t)H, sizeof(float));
  float* next = calloc((size_t)H, sizeof(float));
  float* out = calloc((size_t)widest, sizeof(float));
  float* prev = calloc((size_t)widest, sizeof(float));
  if (!h || !next || !out || !prev) return 1;
  for (int64_t j = 0; j < H; ++j) h[j] = (float)((j * 7) % 13) / 13.0f - 0.5f; /* the first token */

  for (int t = 0; t < tokens; ++t) {
    const tb_act_mode mode = t % 2 == 0 ? TB_ACT_F32 : TB_ACT_I8;
    uint64_t sum = 1469598103934665603ull;
    int64_t prev_n = 0;
    memcpy(next, h, (size_t)H * sizeof(float));
    for (int i = 0; i < n_bound; ++i) {
      const float* in = info[i].k == H ? h : info[i].k == prev_n ? prev : NULL;
      if (in == NULL) continue; /* a projection this chain cannot feed */
      if (tb_bound_gemm(bound[i], 1, mode, in, info[i].k, out, info[i].n) != TB_OK) return failed(info[i].name);
      sum = checksum(sum, out, info[i].n);
      if (info[i].n == H) {
        for (int64_t j = 0; j < H; ++j) next[j] += out[j];
      }
      memcpy(prev, out, (size_t)info[i].n * sizeof(float));
      prev_n = info[i].n;
    }
    float amax = 0.0f;
    for (int64_t j = 0; j < H; ++j) amax = fabsf(next[j]) > amax ? fabsf(next[j]) : amax;
    for (int64_t j = 0; j < H; ++j) h[j] = amax > 0.0f && isfinite(amax) ? next[j] / amax : 0.0f;
    printf("token %d (%s): checksum %016llx\n", t, mode == TB_ACT_F32 ? "f32" : "i8", (unsigned long long)sum);
  }

  for (int i = 0; i < n_bound; ++i) tb_unbind(bound[i]);
  free(h);
  free(next);
  free(out);
  free(prev);
  return 0;
}
