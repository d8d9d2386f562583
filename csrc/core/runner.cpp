#include "harness/runner.h"

#include <algorithm>
#include <cstdint>

namespace harness {

std::vector<double> Blocks::per_run_ns() const {
  std::vector<double> out;
  out.reserve(raw_ns.size());
  for (double r : raw_ns) out.push_back(r / static_cast<double>(number_per_run));
  return out;
}

int64_t estimate_block_size(const Sampler& sample, double min_block_ns) {
  // The empty block measures what one sample costs besides the body (clock
  // reads, the call into the block); it must be <= 1e-4 of a block.
  // Warm up first: a body's first run often pays one-time costs (lazy
  // initialisation, caches) that would otherwise pass for a long block and
  // stop calibration at number = 1.
  sample(1);
  std::vector<double> empties;
  for (int i = 0; i < 5; ++i) empties.push_back(static_cast<double>(sample(0)));
  const double overhead = compute_stats(empties).median;
  int64_t number = 1;
  int rechecks = 0;
  while (true) {
    const double taken = static_cast<double>(sample(number));
    const double relative_overhead = taken > 0 ? overhead / taken : 1.0;
    const bool done = (relative_overhead <= 1e-4 && taken >= min_block_ns) ||
                      taken > min_block_ns * 1000;  // one block already exceeds the whole budget
    if (done && number == 1 && rechecks < 3) {
      // A single run filled the block. Some bodies pay a second one-time
      // cost after the first call (TorchScript's profiling executor
      // optimises on its second run): if one run is now 10x faster, that
      // was warm-up, so calibrate again from the warm cost.
      if (static_cast<double>(sample(1)) * 10 < taken) {
        ++rechecks;
        continue;
      }
    }
    if (done || number > INT32_MAX / 10) break;
    number *= 10;
  }
  return number;
}

namespace {

template <class StopHook>
Blocks measure(const Sampler& sample, int64_t number, double min_run_time_ns,
               double max_run_time_ns, const BlockCallback& callback, StopHook can_stop) {
  Blocks blocks;
  blocks.number_per_run = number;
  double total = 0;
  bool stop = false;
  while (total < min_run_time_ns || !stop) {
    const int64_t elapsed = sample(number);
    blocks.raw_ns.push_back(static_cast<double>(elapsed));
    total += static_cast<double>(elapsed);
    if (callback) callback(number, elapsed);
    stop = can_stop(blocks);
    if (max_run_time_ns > 0 && total > max_run_time_ns) break;
  }
  return blocks;
}

}  // namespace

Blocks blocked_autorange(const Sampler& sample, double min_run_time_ns,
                         const BlockCallback& callback) {
  if (!(min_run_time_ns > 0)) throw invalid_argument("min_run_time must be > 0");
  const int64_t number = estimate_block_size(sample, min_run_time_ns / 1000);
  return measure(sample, number, min_run_time_ns, 0, callback,
                 [](const Blocks&) { return true; });
}

Blocks adaptive_autorange(const Sampler& sample, double threshold, double min_run_time_ns,
                          double max_run_time_ns, const BlockCallback& callback) {
  if (!(min_run_time_ns > 0)) throw invalid_argument("min_run_time must be > 0");
  if (!(max_run_time_ns > 0)) throw invalid_argument("max_run_time must be > 0");
  if (!(threshold > 0)) throw invalid_argument("threshold must be > 0");
  // Same block size rule as torch: calibrate against 50 ms, not min_run_time,
  // so short min_run_times still give blocks long enough to be stable.
  const int64_t number = estimate_block_size(sample, 0.05e9 / 1000);
  return measure(sample, number, min_run_time_ns, max_run_time_ns, callback,
                 [threshold](const Blocks& b) {
                   if (b.raw_ns.size() <= 3) return false;
                   const Stats s = b.stats();
                   return s.iqr() / s.median < threshold;
                 });
}

Blocks fixed_blocks(const Sampler& sample, int64_t number, int64_t repeats) {
  if (number <= 0) throw invalid_argument("number must be > 0");
  if (repeats <= 0) throw invalid_argument("repeats must be > 0");
  Blocks blocks;
  blocks.number_per_run = number;
  for (int64_t i = 0; i < repeats; ++i) blocks.raw_ns.push_back(static_cast<double>(sample(number)));
  return blocks;
}

double empty_loop_cost_ns(int64_t iterations) {
  std::vector<double> per_iter;
  for (int i = 0; i < 11; ++i) {
    const int64_t ns = time_loop(iterations, [] {});
    per_iter.push_back(static_cast<double>(ns) / static_cast<double>(iterations));
  }
  return compute_stats(per_iter).median;
}

}  // namespace harness
