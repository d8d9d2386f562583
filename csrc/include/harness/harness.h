// The embeddable timing core: include this one header.
//
//   #include <harness/harness.h>
//   auto r = harness::run([&] { work(); }, {.min_run_time_s = 0.2});
//   std::printf("%s: %.1f ns median, IQR %.1f ns\n", "work",
//               r.stats.median, r.stats.iqr());
//
// Guarantees: no Python and no torch; only the C++17 standard library.
// run() calibrates the run count so one block takes >= 1/1000 of
// min_run_time (at least 1 run), then collects blocks until min_run_time is
// spent; stats are per-run nanoseconds.
#pragma once

#include "harness/barrier.h"
#include "harness/callgrind.h"
#include "harness/clock.h"
#include "harness/perf_counter.h"
#include "harness/runner.h"
#include "harness/stats.h"

namespace harness {

struct RunOptions {
  double min_run_time_s = 0.2;
  // Count instructions of the measured blocks only when under callgrind.
  bool callgrind_region = false;
};

struct Result {
  int64_t number_per_run = 1;
  std::vector<double> samples_ns;  // per-run ns, one per block
  Stats stats;
};

template <class Body>
Result run(Body&& body, const RunOptions& options = {}) {
  if (!(options.min_run_time_s > 0)) {
    throw invalid_argument("harness::run: min_run_time_s must be > 0");
  }
  Sampler sampler = [&](int64_t n) {
    if (options.callgrind_region) callgrind::region_begin();
    const int64_t ns = time_loop(n, body);
    if (options.callgrind_region) callgrind::region_end();
    return ns;
  };
  Blocks blocks = blocked_autorange(sampler, options.min_run_time_s * 1e9);
  Result result;
  result.number_per_run = blocks.number_per_run;
  result.samples_ns = blocks.per_run_ns();
  result.stats = compute_stats(result.samples_ns);
  return result;
}

}  // namespace harness
