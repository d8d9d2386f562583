// Unit tests of the timing core, without Python or torch (run by ctest).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "harness/harness.h"

static int failures = 0;

#define CHECK(cond)                                                       \
  do {                                                                    \
    if (!(cond)) {                                                        \
      std::fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                         \
    }                                                                     \
  } while (0)

static bool near(double a, double b, double tol = 1e-9) { return std::fabs(a - b) <= tol; }

static void test_stats_hand_computed() {
  // Sorted: 1 2 3 4 10 -> median 3, p25 2, p75 4, mean 4,
  // sample var = (9+4+1+0+36)/4 = 12.5.
  harness::Stats s = harness::compute_stats({10, 2, 4, 1, 3});
  CHECK(s.n == 5);
  CHECK(near(s.median, 3));
  CHECK(near(s.p25, 2));
  CHECK(near(s.p75, 4));
  CHECK(near(s.iqr(), 2));
  CHECK(near(s.mean, 4));
  CHECK(near(s.stddev, std::sqrt(12.5)));
  CHECK(near(s.min, 1));
  CHECK(near(s.max, 10));
  // Even count interpolates: 1 2 3 4 -> median 2.5, p25 1.75, p75 3.25.
  harness::Stats e = harness::compute_stats({4, 3, 2, 1});
  CHECK(near(e.median, 2.5));
  CHECK(near(e.p25, 1.75));
  CHECK(near(e.p75, 3.25));
  harness::Stats one = harness::compute_stats({7});
  CHECK(near(one.median, 7) && near(one.stddev, 0));
  CHECK(std::isnan(harness::compute_stats({}).median));
}

static void test_clock_monotonic() {
  int64_t prev = harness::now_ns();
  for (int i = 0; i < 100000; ++i) {
    int64_t t = harness::now_ns();
    CHECK(t >= prev);
    prev = t;
  }
  CHECK(harness::clock_resolution_ns() > 0);
  CHECK(harness::clock_read_cost_ns() > 0);
}

static void test_loop_not_optimised_away() {
  // A body whose result is only passed to do_not_optimize must still run:
  // 10x the iterations must take clearly longer.
  auto body = [] {
    double x = 1.0;
    for (int i = 0; i < 100; ++i) {
      x = x * 1.0000001 + 1e-9;
      harness::do_not_optimize(x);
    }
  };
  int64_t small = INT64_MAX, large = INT64_MAX;
  for (int r = 0; r < 5; ++r) {
    small = std::min(small, harness::time_loop(1000, body));
    large = std::min(large, harness::time_loop(10000, body));
  }
  CHECK(large > 5 * small);
  CHECK(harness::empty_loop_cost_ns(1'000'000) < 5.0);
}

static void test_calibration_reaches_min_run_time() {
  auto body = [] {
    volatile int x = 0;
    for (int i = 0; i < 50; ++i) x = x + i;
  };
  harness::Result r = harness::run(body, {.min_run_time_s = 0.05});
  double total = 0;
  for (double s : r.samples_ns) total += s * static_cast<double>(r.number_per_run);
  CHECK(total >= 0.05e9);
  CHECK(r.number_per_run >= 1);
  CHECK(r.stats.median > 0);
  // Each block must be long enough for clock overhead to be negligible.
  CHECK(r.stats.median * static_cast<double>(r.number_per_run) >= 0.05e9 / 1000);
}

static void test_adaptive_stops_and_respects_max() {
  harness::Sampler sleepy = [](int64_t n) {
    auto t0 = harness::now_ns();
    std::this_thread::sleep_for(std::chrono::microseconds(100 * n));
    return harness::now_ns() - t0;
  };
  harness::Blocks b = harness::adaptive_autorange(sleepy, 0.1, 0.01e9, 0.5e9);
  double total = 0;
  for (double x : b.raw_ns) total += x;
  CHECK(b.raw_ns.size() > 3 || total > 0.5e9);
  CHECK(total < 0.5e9 + 0.5e9);  // stops soon after max_run_time
}

static void test_invalid_arguments() {
  bool threw = false;
  try {
    harness::run([] {}, {.min_run_time_s = 0});
  } catch (const harness::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
  threw = false;
  try {
    harness::fixed_blocks([](int64_t) { return int64_t{1}; }, 0, 1);
  } catch (const harness::invalid_argument&) {
    threw = true;
  }
  CHECK(threw);
}

static void test_callgrind_markers_are_noops_outside_valgrind() {
  if (harness::callgrind::running_on_valgrind()) return;
  harness::callgrind::region_begin();
  harness::callgrind::region_end();
  harness::callgrind::zero_stats();
  CHECK(harness::callgrind::toggle_region() == 0 && harness::callgrind::toggle_region() == 0);
  harness::callgrind::stop_instrumentation();
}

static void test_perf_counter_open_never_fails_silently() {
  auto counter = harness::perf::InstructionCounter::open();
  if (!counter.ok()) {
    CHECK(!counter.reason().empty());  // says why (no PMU, paranoid setting, ...)
    CHECK(counter.toggle() == 0 && counter.toggle() == 0 && counter.last() == -1);
    return;
  }
  volatile int64_t sink = 0;
  const int64_t small = counter.count([&] { for (int i = 0; i < 1000; ++i) sink = sink + i; });
  const int64_t large = counter.count([&] { for (int i = 0; i < 100000; ++i) sink = sink + i; });
  CHECK(small > 0 && large > 10 * small);
}

int main() {
  test_stats_hand_computed();
  test_clock_monotonic();
  test_loop_not_optimised_away();
  test_calibration_reaches_min_run_time();
  test_adaptive_stops_and_respects_max();
  test_invalid_arguments();
  test_callgrind_markers_are_noops_outside_valgrind();
  test_perf_counter_open_never_fails_silently();
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::puts("all core tests passed");
  return 0;
}
