// Timing loops and run-count calibration.
//
// Guarantees:
//  - time_loop(n, body) reads the clock exactly twice around n calls of body;
//    nothing else runs between the reads. body is inlined when it is a
//    lambda, so an empty body costs < 1 ns per iteration.
//  - A Sampler returns the elapsed ns of `number` runs; calibration and the
//    autorange policies only ever see Samplers, so native bodies, Python
//    blocks and generated C++ statements share one policy.
//  - estimate_block_size() returns a run count whose block takes at least
//    min_block_ns and whose clock overhead is <= 1e-4 of the block (same rule
//    as torch.utils.benchmark), capped so the count fits in int32.
//  - blocked_autorange() collects blocks until their total reaches
//    min_run_time_ns (at least one block). adaptive_autorange() stops once
//    IQR/median < threshold (after > 3 blocks) and total >= min_run_time_ns,
//    or when max_run_time_ns is exceeded.
#pragma once

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <vector>

#include "harness/barrier.h"
#include "harness/clock.h"
#include "harness/stats.h"

namespace harness {

template <class Body>
inline int64_t time_loop(int64_t n, Body&& body) {
  const int64_t t0 = now_ns();
  for (int64_t i = 0; i < n; ++i) {
    body();
    clobber_memory();
  }
  const int64_t t1 = now_ns();
  return t1 - t0;
}

// Elapsed ns of `number` runs. May throw; the exception propagates unchanged.
using Sampler = std::function<int64_t(int64_t number)>;

// Called after each block: (number, elapsed_ns). Returning false stops early.
using BlockCallback = std::function<void(int64_t number, int64_t elapsed_ns)>;

struct Blocks {
  int64_t number_per_run = 1;
  std::vector<double> raw_ns;  // elapsed ns of each block of number_per_run runs
  // Per-run times (raw / number) with their statistics.
  std::vector<double> per_run_ns() const;
  Stats stats() const { return compute_stats(per_run_ns()); }
};

class invalid_argument : public std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

int64_t estimate_block_size(const Sampler& sample, double min_block_ns);

Blocks blocked_autorange(const Sampler& sample, double min_run_time_ns,
                         const BlockCallback& callback = nullptr);

Blocks adaptive_autorange(const Sampler& sample, double threshold,
                          double min_run_time_ns, double max_run_time_ns,
                          const BlockCallback& callback = nullptr);

// Exactly `repeats` blocks of `number` runs.
Blocks fixed_blocks(const Sampler& sample, int64_t number, int64_t repeats);

// Per-iteration cost of time_loop with an empty body, in ns (median of 11).
double empty_loop_cost_ns(int64_t iterations = 10'000'000);

}  // namespace harness
