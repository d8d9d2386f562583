#include "harness/perf_counter.h"

#include <cerrno>
#include <cstring>

#if defined(__linux__)
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace harness::perf {

#if defined(__linux__)

namespace {

struct ReadFormat {
  uint64_t value;
  uint64_t time_enabled;
  uint64_t time_running;
};

std::string open_error(int err) {
  switch (err) {
    case ENOENT:
    case EOPNOTSUPP:
    case ENODEV:
      return "the CPU or hypervisor exposes no hardware instruction counter (perf_event_open: " +
             std::string(std::strerror(err)) + "); virtual machines often have no virtual PMU";
    case EACCES:
    case EPERM:
      return "perf_event_open is not permitted (" + std::string(std::strerror(err)) +
             "); lower /proc/sys/kernel/perf_event_paranoid to 2 or less, or grant CAP_PERFMON";
    case ENOSYS:
      return "the kernel has no perf_event_open (built without CONFIG_PERF_EVENTS)";
    default:
      return "perf_event_open failed: " + std::string(std::strerror(err));
  }
}

}  // namespace

InstructionCounter InstructionCounter::open() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.type = PERF_TYPE_HARDWARE;
  attr.size = sizeof(attr);
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
  const long fd = syscall(SYS_perf_event_open, &attr, 0 /* this thread */, -1 /* any cpu */, -1, PERF_FLAG_FD_CLOEXEC);
  if (fd < 0) return InstructionCounter(-1, open_error(errno));
  InstructionCounter counter(static_cast<int>(fd), "");
  // Some hypervisors accept the event but never count it.
  volatile uint64_t sink = 0;
  const int64_t n = counter.count([&] {
    for (int i = 0; i < 10000; ++i) sink = sink + static_cast<uint64_t>(i);
  });
  if (n <= 0) {
    ::close(counter.fd_);
    counter.fd_ = -1;
    counter.reason_ = n == 0 ? "the hardware instruction counter opens but counts nothing (a VM without a virtual PMU)"
                             : "the hardware instruction counter is multiplexed with other events (is `perf` running?)";
  }
  return counter;
}

InstructionCounter::~InstructionCounter() {
  if (fd_ >= 0) ::close(fd_);
}


void InstructionCounter::start() noexcept {
  running_ = true;
  if (fd_ < 0) return;
  ioctl(fd_, PERF_EVENT_IOC_RESET, 0);
  // The enabled/running times accumulate over the counter's life (RESET
  // clears only the count): keep this period's starting point.
  ReadFormat r{};
  if (::read(fd_, &r, sizeof(r)) == static_cast<ssize_t>(sizeof(r))) {
    enabled0_ = r.time_enabled;
    running0_ = r.time_running;
  }
  ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0);
}

int64_t InstructionCounter::stop() noexcept {
  running_ = false;
  if (fd_ < 0) return -1;
  ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0);
  ReadFormat r{};
  if (::read(fd_, &r, sizeof(r)) != static_cast<ssize_t>(sizeof(r))) return -1;
  // Running for less of this period than enabled: the PMU was shared
  // (multiplexed) and the count is only an estimate.
  if (r.time_running - running0_ < r.time_enabled - enabled0_) return -1;
  return static_cast<int64_t>(r.value);
}

#else  // not Linux

InstructionCounter InstructionCounter::open() {
  return InstructionCounter(-1, "hardware instruction counters are only supported on Linux (perf_event_open)");
}
InstructionCounter::~InstructionCounter() = default;
void InstructionCounter::start() noexcept { running_ = true; }
int64_t InstructionCounter::stop() noexcept {
  running_ = false;
  return -1;
}

#endif

// Platform-independent: one region marker opens a period, the next closes it.
int64_t InstructionCounter::toggle() noexcept {
  if (running_) {
    last_ = stop();
  } else {
    start();
  }
  return 0;
}

}  // namespace harness::perf
