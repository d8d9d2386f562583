// Callgrind region markers.
//
// Guarantees: outside valgrind every call is a handful of no-op instructions
// (valgrind's client-request magic sequence), so they can stay in production
// loops. Under `valgrind --tool=callgrind --instr-atstart=no
// --collect-atstart=no`, instructions are counted only between
// region_begin() and region_end().
#pragma once

#include <cstdint>

namespace harness::callgrind {

// True when running under any valgrind tool.
bool running_on_valgrind() noexcept;

// Switch instrumentation on (once, until stop_instrumentation()) and start
// collecting. Idempotent: inside a region it does nothing.
void region_begin() noexcept;

// Stop collecting (idempotent). Instrumentation stays on so the next region
// does not pay for re-instrumentation.
void region_end() noexcept;

// region_begin() outside a region, region_end() inside one; returns 0. A
// generated Python block calls it where it would read the clock, so the
// region is exactly its loop.
int64_t toggle_region() noexcept;

// Switch instrumentation on without collecting: code run now is translated
// with instrumentation, so a region entered later (also in a forked child)
// does not pay for translating it.
void start_instrumentation() noexcept;

// Switch instrumentation off (callgrind flushes its translations): code
// outside regions then runs at valgrind's uninstrumented speed, and the next
// region_begin() switches it on again. Counts are unaffected: they depend on
// the instructions executed, not on when they were translated.
void stop_instrumentation() noexcept;

// Reset the counters collected so far (callgrind's ZERO_STATS).
void zero_stats() noexcept;

// Write a profile dump tagged with `reason` (callgrind's DUMP_STATS_AT).
void dump_stats(const char* reason) noexcept;

// Runs fn(args...) with collection on around exactly that call (also when
// it throws), so nothing of the caller is counted.
template <class Fn, class... Args>
decltype(auto) in_region(Fn&& fn, Args&&... args) {
  struct End {
    ~End() { region_end(); }
  };
  region_begin();
  End end;
  return fn(static_cast<Args&&>(args)...);
}

}  // namespace harness::callgrind
