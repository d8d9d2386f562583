// Monotonic clock for the timing loops.
//
// Guarantees: now_ns() never goes backwards (CLOCK_MONOTONIC / steady_clock),
// and is cheap enough (a vDSO call, ~20 ns) that reading it twice per sample
// is negligible next to a calibrated block. Resolution and read cost are
// measured, not assumed, because VMs differ.
#pragma once

#include <cstdint>

namespace harness {

// Nanoseconds since an arbitrary fixed point.
int64_t now_ns() noexcept;

// Smallest non-zero step the clock reports, in ns (clock_getres).
double clock_resolution_ns() noexcept;

// Median cost of one now_ns() call, in ns, measured over `reads` reads.
double clock_read_cost_ns(int reads = 10000) noexcept;

}  // namespace harness
