// The statement header: what every generated C++ statement translation unit
// includes (the lean include set), precompiled once per toolchain.
//
// Each statement becomes a coroutine. Its first resume runs setup; every later
// resume runs one block (batch_setup, then `number` runs of stmt between two
// clock reads) and suspends with the elapsed ns. Setup's locals live in the
// coroutine frame, so setup runs once however many blocks are timed, and stmt
// sees them as it would in one function body, whatever their type.
//
// Why this set: a statement TU pays for every header it includes, with or
// without a PCH (templates the headers leave pending are instantiated, and
// inline code optimised, in every TU). Measured with g++ 12 -O2 -ftime-report,
// each with its own PCH: the old TU (torch/torch.h, torch/script.h, Python.h)
// took 11.5 s; an empty TU with ATen/ATen.h alone 1.26 s of CPU, with
// ATen/core/Tensor.h + ATen/Functions.h 1.21 s, with this header 1.33 s and a
// tensor statement 1.9 s. Nothing smaller than ATen's functions saves more
// than a tenth of a second, and torch/types.h gives statements the torch::
// names (torch::ones, torch::Tensor, requires_grad options) they are written
// with. So this header holds only what a tensor statement needs; the code that talks to Python (module table, DLPack,
// errors) is compiled once per toolchain in stmt_runtime.cpp, and statements
// that need more get harness/stmt_frontend.h (torch::nn, ...) or
// harness/stmt_full.h (torch::jit, ...).
//
// Guarantees:
//  - Slot::sample(number) is the native sampler handed to the timing core as
//    a "harness.sampler" capsule: no Python runs inside it.
//  - An exception escaping setup, batch_setup or stmt (c10::Error, any
//    std::exception, anything else) leaves sample()/prepare() as a
//    std::runtime_error whose what() names the phase, the exception's type and
//    its message (c10::Error without the C++ backtrace). The routine that
//    raised is finished; reset() and prepare() run setup again.
//  - Nothing here has static storage: one process may load many statement
//    modules, and inline statics would be merged across them.
#pragma once

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <c10/util/Type.h>
#include <torch/cuda.h>
#include <torch/types.h>

#include <coroutine>
#include <cstdint>
#include <exception>
#include <iterator>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "harness/barrier.h"
#include "harness/runner.h"

// The three CPython calls a statement needs (releasing the GIL), declared here
// rather than through Python.h, which would cost every statement TU its parse.
// They match Python.h's declarations, so a TU may include both.
extern "C" {
struct _ts;
int PyGILState_Check(void);
struct _ts* PyEval_SaveThread(void);
void PyEval_RestoreThread(struct _ts*);
}

namespace harness::stmt {

// A resume request that runs stmt once and records its output (see Slot::probe).
inline constexpr int64_t kProbe = -1;

class Routine {
 public:
  struct promise_type;
  using Handle = std::coroutine_handle<promise_type>;

  struct promise_type {
    int64_t request = 0;  // for the next resume: a run count, or kProbe
    int64_t elapsed = 0;  // what the last block measured
    std::exception_ptr error;

    Routine get_return_object() noexcept { return Routine(Handle::from_promise(*this)); }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void unhandled_exception() noexcept { error = std::current_exception(); }
    void return_void() noexcept {}

    // `number = co_yield elapsed;` hands back a block's time and receives the
    // next request.
    struct NextRequest {
      promise_type* promise;
      bool await_ready() const noexcept { return false; }
      void await_suspend(Handle) const noexcept {}
      int64_t await_resume() const noexcept { return promise->request; }
    };
    NextRequest yield_value(int64_t elapsed_ns) noexcept {
      elapsed = elapsed_ns;
      return NextRequest{this};
    }
  };

  explicit Routine(Handle handle) noexcept : handle_(handle) {}
  Routine(const Routine&) = delete;
  Routine& operator=(const Routine&) = delete;
  Routine(Routine&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  ~Routine() {
    if (handle_) handle_.destroy();
  }
  Handle release() noexcept { return std::exchange(handle_, {}); }

 private:
  Handle handle_;
};

[[noreturn]] inline void rethrow_described(std::exception_ptr error, const char* phase) {
  const std::string where = std::string(phase) + " raised ";
  try {
    std::rethrow_exception(error);
  } catch (const c10::Error& e) {
    throw std::runtime_error(where + c10::demangle(typeid(e).name()) + ": " + e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw std::runtime_error(where + c10::demangle(typeid(e).name()) + ": " + e.what());
  } catch (...) {
    throw std::runtime_error(where + "an exception that does not derive from std::exception");
  }
}

// Like harness::time_loop, but when CUDA is in use the device is synchronised
// before both clock reads, so a block's time includes the GPU work it queued
// (as torch.utils.benchmark's timer does for Python); once per block, not per
// run.
inline bool cuda_in_use() { return torch::cuda::is_available(); }

template <class Body>
int64_t timed_block(int64_t number, bool sync, Body&& body) {
  if (!sync) return harness::time_loop(number, std::forward<Body>(body));
  torch::cuda::synchronize();
  const int64_t t0 = harness::now_ns();
  for (int64_t i = 0; i < number; ++i) {
    body();
    harness::clobber_memory();
  }
  torch::cuda::synchronize();
  return harness::now_ns() - t0;
}

// batch_setup that binds `batch` must bind exactly `number` items: one per run.
template <class Batch>
void check_batch(const Batch& batch, int64_t number) {
  const auto size = static_cast<int64_t>(std::size(batch));
  if (size != number) {
    throw std::invalid_argument("batch_setup must bind `batch` to exactly `number` (" + std::to_string(number) +
                                ") items, got " + std::to_string(size));
  }
}

// Releases the GIL (if this thread holds it) while statement code runs: the
// autograd engine refuses to run while it is held, and C++ code has no use for
// it. Re-acquired before returning, also when the statement throws.
class WithoutGil {
 public:
  WithoutGil() noexcept : state_(PyGILState_Check() ? PyEval_SaveThread() : nullptr) {}
  ~WithoutGil() {
    if (state_) PyEval_RestoreThread(state_);
  }
  WithoutGil(const WithoutGil&) = delete;
  WithoutGil& operator=(const WithoutGil&) = delete;

 private:
  struct _ts* state_;
};

// One statement's routine and the outputs a probe recorded.
class Slot {
 public:
  using Make = Routine (*)();
  explicit Slot(Make make) noexcept : make_(make) {}
  Slot(const Slot&) = delete;
  Slot& operator=(const Slot&) = delete;
  // Deliberately no destructor: destroying frames that hold tensors during
  // static destruction at exit would race libtorch's own teardown.

  bool ready() const noexcept { return handle_ && !handle_.done(); }

  // Run setup (once: a no-op while the routine is alive).
  void prepare() {
    if (ready()) return;
    reset();
    handle_ = make_().release();
    phase_ = "setup";
    resume(0);
  }

  // Elapsed ns of one block of `number` runs.
  int64_t sample(int64_t number) {
    if (!ready()) {
      throw std::runtime_error(
          "the statement is not set up (setup has not run, or an earlier run raised); reset and prepare again");
    }
    return resume(number);
  }

  // Run stmt once; return [output, grad of each signature input] (undefined
  // tensors where there is none).
  std::vector<at::Tensor> probe() {
    kept_.clear();
    sample(kProbe);
    return std::exchange(kept_, {});
  }

  void reset() noexcept {
    if (handle_) handle_.destroy();
    handle_ = {};
    kept_.clear();
  }

  // Called by generated code.
  void set_phase(const char* phase) noexcept { phase_ = phase; }
  void keep(const at::Tensor& t) { kept_.push_back(t); }
  void keep(const c10::IValue& v) {
    if (v.isTensor()) {
      kept_.push_back(v.toTensor());
    } else if (v.isTuple() && !v.toTupleRef().elements().empty()) {
      keep(v.toTupleRef().elements()[0]);
    } else {
      kept_.emplace_back();
    }
  }
  template <class... Ts>
  void keep(const std::tuple<Ts...>& t) {
    keep(std::get<0>(t));
  }
  template <class T>
  void keep(const T&) {
    kept_.emplace_back();
  }
  // Probes clear input gradients first, so they report one backward's.
  void clear_grad(const at::Tensor& t) {
    if (t.defined() && t.grad().defined()) t.mutable_grad().reset();
  }
  template <class T>
  void clear_grad(const T&) {}
  void keep_grad(const at::Tensor& t) { kept_.push_back(t.defined() ? t.grad() : at::Tensor()); }
  template <class T>
  void keep_grad(const T&) {
    kept_.emplace_back();
  }

 private:
  int64_t resume(int64_t request) {
    auto& promise = handle_.promise();
    promise.request = request;
    {
      WithoutGil released;
      handle_.resume();
    }
    if (promise.error) {
      auto error = std::exchange(promise.error, nullptr);
      rethrow_described(error, phase_);
    }
    if (handle_.done()) throw std::logic_error("the statement's routine returned");
    return promise.elapsed;
  }
  Make make_;
  Routine::Handle handle_{};
  const char* phase_ = "setup";
  std::vector<at::Tensor> kept_;
};

// What a generated module exports per statement.
struct Entry {
  const char* key;
  Slot* slot;
  int64_t (*sample)(int64_t);
};

// What a generated module's `harness_stmt_module()` returns; the runtime
// (stmt_runtime.cpp) reads it after loading the module.
struct Module {
  int abi;  // kAbi of the header the module was built with
  const Entry* entries;
  int64_t count;
  bool pch_used;
  const char* include_set;  // "lean", "frontend", "script" or "full"
};

// Bump when Routine, Slot, Entry or Module change layout or meaning.
inline constexpr int kAbi = 1;

}  // namespace harness::stmt
