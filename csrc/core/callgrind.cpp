#include "harness/callgrind.h"

#include "valgrind/callgrind.h"

namespace harness::callgrind {

namespace {
// START_INSTRUMENTATION flushes callgrind's translation cache even when
// instrumentation is already on; issue it only on a switch.
bool instrumented = false;
// Collection is toggled, not set: track it so begin/end are idempotent (the
// workers start valgrind with --collect-atstart=no).
bool collecting = false;
}  // namespace

bool running_on_valgrind() noexcept { return RUNNING_ON_VALGRIND != 0; }

void start_instrumentation() noexcept {
  if (!instrumented) {
    CALLGRIND_START_INSTRUMENTATION;
    instrumented = true;
  }
}

void region_begin() noexcept {
  if (collecting) return;
  start_instrumentation();
  CALLGRIND_TOGGLE_COLLECT;
  collecting = true;
}

void region_end() noexcept {
  if (!collecting) return;
  CALLGRIND_TOGGLE_COLLECT;
  collecting = false;
}

int64_t toggle_region() noexcept {
  if (collecting) {
    region_end();
  } else {
    region_begin();
  }
  return 0;
}

void stop_instrumentation() noexcept {
  region_end();
  if (instrumented) {
    CALLGRIND_STOP_INSTRUMENTATION;
    instrumented = false;
  }
}

void zero_stats() noexcept { CALLGRIND_ZERO_STATS; }

void dump_stats(const char* reason) noexcept { CALLGRIND_DUMP_STATS_AT(reason); }

}  // namespace harness::callgrind
