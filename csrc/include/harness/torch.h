// The torch-linked part of the core (target harness::torch): torch's intra-op
// thread count, and TorchScript modules loaded from a file and timed through
// forward() with the core's loop and calibration.
//
//   #include <harness/torch.h>
//
//   torch::jit::Module m = harness::load_torchscript("add_one.pt");
//   harness::NumThreadsGuard threads(1);
//   harness::Result r = harness::time_forward(m, {torch::ones({4, 4})});
//   // r.stats.median: ns per forward() call
//
// Guarantees:
//  - NumThreadsGuard restores the thread count it found, also when the scope
//    is left by an exception.
//  - load_torchscript() and time_forward() report bad input as
//    harness::invalid_argument naming the file or the problem; an exception
//    thrown by the module's code (c10::Error) propagates unchanged.
//  - forward_sampler() runs exactly `number` forward() calls between two
//    clock reads. When an input tensor or a module parameter lives on a CUDA
//    device it synchronises that device before the first read and before the
//    second, so asynchronous kernels are inside the measured time.
//  - Grad mode is the caller's: wrap a call in torch::NoGradGuard to time
//    inference without autograd bookkeeping.
//
// Needs C++20 (torch's headers do) and libtorch; link harness::torch, which
// brings both harness::core and torch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/script.h>

#include "harness/harness.h"

namespace harness {

// Sets torch's intra-op thread count (at::set_num_threads) for its lifetime.
class NumThreadsGuard {
 public:
  // num_threads must be >= 1 (else harness::invalid_argument).
  explicit NumThreadsGuard(int num_threads);
  ~NumThreadsGuard();
  NumThreadsGuard(const NumThreadsGuard&) = delete;
  NumThreadsGuard& operator=(const NumThreadsGuard&) = delete;

  int previous() const { return previous_; }

 private:
  int previous_;
};

// torch::jit::load(path), optionally onto `device`. A missing or unreadable
// file, or one that is not a TorchScript archive, throws
// harness::invalid_argument with the path and torch's reason.
torch::jit::Module load_torchscript(const std::string& path,
                                    const std::optional<c10::Device>& device = std::nullopt);

// A Sampler that calls module.forward(inputs) `number` times per block. The
// module and inputs are held by the sampler (Modules are reference types, so
// this shares, not copies, the module's state). Throws
// harness::invalid_argument if the module has no forward method.
Sampler forward_sampler(torch::jit::Module module, std::vector<torch::jit::IValue> inputs);

// Times module.forward(inputs) with run_sampler()'s policy (harness.h),
// after a few untimed calls that let the JIT's profiling executor specialise
// and optimise the graph (its first calls are far slower than the rest).
Result time_forward(const torch::jit::Module& module, std::vector<torch::jit::IValue> inputs,
                    const RunOptions& options = {});

}  // namespace harness
