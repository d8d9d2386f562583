#include "harness/callgrind.h"

#include "valgrind/callgrind.h"

namespace harness::callgrind {

bool running_on_valgrind() noexcept { return RUNNING_ON_VALGRIND != 0; }

void region_begin() noexcept {
  // START_INSTRUMENTATION is a no-op once instrumentation is on, but it
  // flushes the translation cache the first time; do it once.
  static bool instrumented = false;
  if (!instrumented) {
    CALLGRIND_START_INSTRUMENTATION;
    instrumented = true;
  }
  CALLGRIND_TOGGLE_COLLECT;
}

void region_end() noexcept { CALLGRIND_TOGGLE_COLLECT; }

void zero_stats() noexcept { CALLGRIND_ZERO_STATS; }

void dump_stats(const char* reason) noexcept { CALLGRIND_DUMP_STATS_AT(reason); }

}  // namespace harness::callgrind
