#include "harness/clock.h"

#include <algorithm>
#include <ctime>
#include <vector>

namespace harness {

double clock_resolution_ns() noexcept {
  timespec ts;
  if (clock_getres(CLOCK_MONOTONIC, &ts) != 0) return 1.0;
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

double clock_read_cost_ns(int reads) noexcept {
  if (reads < 1) reads = 1;
  // Time batches of 100 reads so the measurement is not dominated by the
  // clock's own resolution; report the median batch.
  constexpr int kBatch = 100;
  const int batches = std::max(1, reads / kBatch);
  std::vector<double> per_read;
  per_read.reserve(batches);
  volatile int64_t sink = 0;
  for (int b = 0; b < batches; ++b) {
    const int64_t t0 = now_ns();
    for (int i = 0; i < kBatch; ++i) sink = now_ns();
    const int64_t t1 = now_ns();
    per_read.push_back(static_cast<double>(t1 - t0) / kBatch);
  }
  (void)sink;
  std::nth_element(per_read.begin(), per_read.begin() + per_read.size() / 2, per_read.end());
  return per_read[per_read.size() / 2];
}

}  // namespace harness
