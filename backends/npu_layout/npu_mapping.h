// How the numerics contract's I8 gemm maps onto the RK3588 int8 matmul, and what each candidate
// mapping costs a real chip (docs/NPU.md "The mapping study"). The backend executes the chosen
// mapping, PER GROUP; the model counts calls, multiply-adds and bytes of both, for the bench and
// the docs.
//
// Why a mapping is needed at all: the contract (docs/NUMERICS.md) needs the exact int32 dot of
// every 32-wide group before its scales are applied, and the NPU's one int32 accumulation runs
// over the whole K of a call (its per-group scale support is reported broken on RK3588).
//   PER GROUP  one matmul per group: K = 32, B = the group's tiles of a column chunk (a
//              group-major re-tiled copy of B made at bind), C = the group sums themselves.
//   EXPANDED   one matmul over the whole K with activations expanded to M' = groups x M rows:
//              row (g, m) holds row m's codes in group g's k-range and zeros elsewhere, so
//              C[(g, m)][n] is group g's sum. B is the artifact's own tiles (K <= 8192), but every
//              call does groups x the multiply-adds.
#pragma once

#include <cstdint>
#include <vector>

namespace twinbit::npu {

// Rows one matmul context takes (the dynamic shape's largest M); larger M runs in row blocks.
constexpr int64_t kMaxRowsPerRun = 256;

// The column chunks of a projection of np (padded) columns on `cores` cores: chunk i covers
// columns [begin, begin + count), count a multiple of 32 and <= 4096; chunk i runs on core
// i % cores. Chunks are about np / cores wide, so every core gets work.
struct Chunk {
  int64_t begin = 0, count = 0;
  int core = 0;
};
std::vector<Chunk> column_chunks(int64_t np, int cores);

// The chip's cost model: a fixed cost per matmul call and int8 multiply-add throughput per core
// (NPU.md: ~0.03 ms per call, ~20 GOPS int8 = 10 G multiply-adds/s per core, measured by users).
struct ChipModel {
  double call_us = 30.0;
  double macs_per_s_per_core = 10e9;
};

enum class Mapping { per_group, expanded };
const char* mapping_name(Mapping m);  // "per-group", "expanded"

struct MappingCost {
  int64_t calls = 0;          // matmul runs (all cores)
  double macs = 0;            // multiply-adds the NPU performs
  double b_bytes = 0;         // weight bytes the NPU reads (B), over all calls
  double ac_bytes = 0;        // activation (A) and result (C) bytes moved, over all calls
  double bind_bytes = 0;      // native B kept resident after bind (int8)
  double model_us = 0;        // modelled chip time: the slowest core's calls and multiply-adds
};

// The cost of one gemm of m rows on an (n x k) projection (k % 32 == 0) with `cores` cores.
MappingCost mapping_cost(Mapping mapping, int64_t m, int64_t n, int64_t k, int cores,
                         const ChipModel& chip = {});

}  // namespace twinbit::npu
