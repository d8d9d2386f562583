// The embeddable timing core: include this one header, link harness::core.
//
//   #include <harness/harness.h>
//
//   std::vector<int> v(1000, 1);
//   harness::RunOptions options;
//   options.min_run_time_s = 0.2;
//   harness::Result r = harness::run([&] {
//     long sum = 0;
//     for (int x : v) sum += x;
//     harness::do_not_optimize(sum);   // keep the work; see barrier.h
//   }, options);
//   std::printf("sum: %.1f ns median, IQR %.1f ns, %zu blocks of %lld runs\n",
//               r.stats.median, r.stats.iqr(), r.samples_ns.size(),
//               static_cast<long long>(r.number_per_run));
//
// What it does: run() calibrates a run count N so that one block of N runs
// takes at least min_run_time / 1000 and the clock's own cost is at most
// 1e-4 of a block (after one warm-up run), then times blocks of N runs,
// reading the clock only before and after each block, until the blocks add up
// to min_run_time (at least one block). Each block gives one sample: its time
// divided by N. The rule is the one torch.utils.benchmark's
// blocked_autorange uses, so the numbers are comparable.
//
// Guarantees:
//  - No Python and no torch: only the C++17 standard library (and GCC/Clang,
//    for the inline-asm barriers). Everything lives in namespace harness.
//  - Times are nanoseconds of the monotonic clock (clock.h), per run.
//  - An exception thrown by the body propagates out of run() unchanged;
//    invalid options throw harness::invalid_argument (a std::invalid_argument).
//  - run() keeps no global state: concurrent calls on different threads are
//    independent (they do compete for the CPU, so their times influence
//    each other).
//
// Lower-level pieces, for other policies: time_loop(), Sampler,
// blocked_autorange(), adaptive_autorange() and fixed_blocks() in runner.h;
// compute_stats() in stats.h; callgrind markers in callgrind.h.
#pragma once

#include <cstdint>
#include <vector>

#include "harness/barrier.h"
#include "harness/callgrind.h"
#include "harness/clock.h"
#include "harness/perf_counter.h"
#include "harness/runner.h"
#include "harness/stats.h"

namespace harness {

struct RunOptions {
  // Seconds of measured blocks to collect; must be > 0. A warm-up run and
  // calibration come on top (about 1% more for fast bodies; a few extra runs
  // for bodies slower than min_run_time / 1000).
  double min_run_time_s = 0.2;
  // Put callgrind region markers (callgrind.h) around every timed block, so
  // `valgrind --tool=callgrind --collect-atstart=no` counts the instructions
  // of the measured runs only. Costs nothing measurable outside valgrind.
  bool callgrind_region = false;
};

struct Result {
  // Runs per block, as calibrated.
  int64_t number_per_run = 1;
  // One sample per block: the block's elapsed ns divided by number_per_run.
  std::vector<double> samples_ns;
  // Statistics of samples_ns (median, IQR, mean, ...), in ns per run.
  Stats stats;
};

// Times any Sampler (runner.h: a callable that runs the work `number` times
// and returns the elapsed ns) with run()'s policy. Use it when a block needs
// more than a loop around a body, e.g. a device synchronisation before the
// closing clock read, or fresh inputs prepared before the clock starts.
inline Result run_sampler(const Sampler& sample, const RunOptions& options = {}) {
  if (!(options.min_run_time_s > 0)) {
    throw invalid_argument("harness::run: min_run_time_s must be > 0");
  }
  Sampler measured = sample;
  if (options.callgrind_region) {
    measured = [&sample](int64_t n) {
      callgrind::region_begin();
      const int64_t ns = sample(n);
      callgrind::region_end();
      return ns;
    };
  }
  const Blocks blocks = blocked_autorange(measured, options.min_run_time_s * 1e9);
  Result result;
  result.number_per_run = blocks.number_per_run;
  result.samples_ns = blocks.per_run_ns();
  result.stats = compute_stats(result.samples_ns);
  return result;
}

// Times `body()` (any callable taking no arguments; a lambda is inlined into
// the loop, so the loop adds well under 1 ns per run). Pass values the body
// computes to do_not_optimize() so the compiler cannot drop the work.
template <class Body>
Result run(Body&& body, const RunOptions& options = {}) {
  return run_sampler([&body](int64_t n) { return time_loop(n, body); }, options);
}

}  // namespace harness
