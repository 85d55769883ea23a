#include "backends/npu_layout/npu_mapping.h"

#include <algorithm>

#include "backends/npu_layout/npu_layout.h"

namespace twinbit::npu {

std::vector<Chunk> column_chunks(int64_t np, int cores) {
  const int64_t share = round_up((np + cores - 1) / cores, kNAlign);
  const int64_t width = std::min(kMaxN, std::max(kNAlign, share));
  std::vector<Chunk> out;
  for (int64_t b = 0, i = 0; b < np; b += width, ++i) {
    out.push_back(Chunk{b, std::min(width, np - b), static_cast<int>(i % cores)});
  }
  return out;
}

const char* mapping_name(Mapping m) { return m == Mapping::per_group ? "per-group" : "expanded"; }

MappingCost mapping_cost(Mapping mapping, int64_t m, int64_t n, int64_t k, int cores,
                         const ChipModel& chip) {
  const int64_t np = round_up(n, kNAlign), kp = round_up(k, kKAlign);
  const int64_t groups = kp / 32;
  MappingCost out;
  std::vector<double> core_us(static_cast<size_t>(cores), 0.0);
  out.bind_bytes = static_cast<double>(np) * static_cast<double>(kp);
  for (const Chunk& c : column_chunks(np, cores)) {
    int64_t calls = 0;
    double macs = 0, b = 0, ac = 0;
    if (mapping == Mapping::per_group) {
      const int64_t blocks = (m + kMaxRowsPerRun - 1) / kMaxRowsPerRun;
      calls = groups * blocks;
      macs = double(m) * double(c.count) * double(kp);
      b = double(blocks) * double(c.count) * double(kp);       // every block reads the chunk's B
      ac = double(groups) * (double(m) * 32 + double(m) * double(c.count) * 4);
    } else {
      const double rows = double(groups) * double(m);  // M' = groups x M, one call
      calls = 1;
      macs = rows * double(c.count) * double(kp);
      b = double(c.count) * double(kp);
      ac = rows * double(kp) + rows * double(c.count) * 4;
    }
    out.calls += calls;
    out.macs += macs;
    out.b_bytes += b;
    out.ac_bytes += ac;
    core_us[static_cast<size_t>(c.core)] += double(calls) * chip.call_us + macs / chip.macs_per_s_per_core * 1e6;
  }
  out.model_us = *std::max_element(core_us.begin(), core_us.end());
  return out;
}

}  // namespace twinbit::npu
