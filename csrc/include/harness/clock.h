// Monotonic clock for the timing loops.
//
// Guarantees: now_ns() never goes backwards (CLOCK_MONOTONIC / steady_clock),
// and is cheap enough (a vDSO call, ~20 ns) that reading it twice per sample
// is negligible next to a calibrated block. Resolution and read cost are
// measured, not assumed, because VMs differ.
#pragma once

#include <cstdint>
#include <ctime>

namespace harness {

// Nanoseconds since an arbitrary fixed point. Inline so that code built
// outside the core (generated C++ statement modules) times its loops with the
// same clock without linking clock.cpp.
inline int64_t now_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Smallest non-zero step the clock reports, in ns (clock_getres).
double clock_resolution_ns() noexcept;

// Median cost of one now_ns() call, in ns, measured over `reads` reads.
double clock_read_cost_ns(int reads = 10000) noexcept;

}  // namespace harness
