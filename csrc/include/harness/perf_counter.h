// The hardware instruction counter (Linux perf_event_open), for this thread.
//
// Guarantees: open() never throws; when the counter cannot be used it
// returns a counter whose ok() is false and whose reason() says why (no
// kernel support, perf_event_paranoid, a VM without a virtual PMU, a counter
// that opens but never counts). count(fn) returns the user-space
// instructions retired by this thread while fn() ran (kernel and hypervisor
// excluded), or -1 when the counter was multiplexed (shared with other
// events and so only estimated): the caller retries or reports it.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

namespace harness::perf {

class InstructionCounter {
 public:
  static InstructionCounter open();
  InstructionCounter(InstructionCounter&& other) noexcept
      : fd_(std::exchange(other.fd_, -1)), reason_(std::move(other.reason_)), running_(other.running_),
        last_(other.last_), enabled0_(other.enabled0_), running0_(other.running0_) {}
  InstructionCounter& operator=(InstructionCounter&&) = delete;
  InstructionCounter(const InstructionCounter&) = delete;
  ~InstructionCounter();

  bool ok() const noexcept { return fd_ >= 0; }
  const std::string& reason() const noexcept { return reason_; }

  void start() noexcept;  // reset and enable
  // Disable; the instructions since start(), or -1 when multiplexed.
  int64_t stop() noexcept;
  // start() when stopped, else stop() (its result kept in last()); returns
  // 0. A generated Python block calls it where it would read the clock.
  int64_t toggle() noexcept;
  int64_t last() const noexcept { return last_; }

  template <class Fn, class... Args>
  int64_t count(Fn&& fn, Args&&... args) {
    struct Stop {
      InstructionCounter* self;
      int64_t* out;
      ~Stop() { *out = self->stop(); }
    };
    int64_t n = -1;
    {
      start();
      Stop stop{this, &n};
      fn(static_cast<Args&&>(args)...);
    }
    return n;
  }

 private:
  InstructionCounter(int fd, std::string reason) : fd_(fd), reason_(std::move(reason)) {}
  int fd_ = -1;
  std::string reason_;
  bool running_ = false;
  int64_t last_ = -1;
  uint64_t enabled0_ = 0;  // time_enabled / time_running when start() was called
  uint64_t running0_ = 0;
};

}  // namespace harness::perf
