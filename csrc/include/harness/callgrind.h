// Callgrind region markers.
//
// Guarantees: outside valgrind every call is a handful of no-op instructions
// (valgrind's client-request magic sequence), so they can stay in production
// loops. Under `valgrind --tool=callgrind --instr-atstart=no
// --collect-atstart=no`, instructions are counted only between
// region_begin() and region_end().
#pragma once

namespace harness::callgrind {

// True when running under any valgrind tool.
bool running_on_valgrind() noexcept;

// Switch instrumentation on (idempotent) and start collecting.
void region_begin() noexcept;

// Stop collecting. Instrumentation stays on so the next region does not pay
// for re-instrumentation (which would also perturb counts).
void region_end() noexcept;

// Reset the counters collected so far (callgrind's ZERO_STATS).
void zero_stats() noexcept;

// Write a profile dump tagged with `reason` (callgrind's DUMP_STATS_AT).
void dump_stats(const char* reason) noexcept;

}  // namespace harness::callgrind
