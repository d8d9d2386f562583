#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ATen/Parallel.h>
#include <torch/cuda.h>

#include "harness/torch.h"

namespace harness {

NumThreadsGuard::NumThreadsGuard(int num_threads) : previous_(at::get_num_threads()) {
  if (num_threads < 1) {
    throw invalid_argument("harness::NumThreadsGuard: num_threads must be >= 1, got " +
                           std::to_string(num_threads));
  }
  at::set_num_threads(num_threads);
}

NumThreadsGuard::~NumThreadsGuard() { at::set_num_threads(previous_); }

torch::jit::Module load_torchscript(const std::string& path, const std::optional<c10::Device>& device) {
  // torch's own message for a missing file is an fopen errno dump with a C++
  // backtrace; say it plainly.
  if (!std::ifstream(path, std::ios::binary).good()) {
    throw invalid_argument("cannot read TorchScript file '" + path +
                           "': no such file or not readable (save one with torch.jit.save)");
  }
  try {
    return torch::jit::load(path, device);
  } catch (const c10::Error& e) {
    throw invalid_argument("'" + path + "' is not a loadable TorchScript archive: " +
                           e.what_without_backtrace());
  }
}

namespace {

std::optional<c10::DeviceIndex> cuda_device_of(const torch::jit::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    if (t.defined() && t.is_cuda()) return t.get_device();
  } else if (v.isList()) {
    for (const torch::jit::IValue& e : v.toListRef()) {
      if (auto d = cuda_device_of(e)) return d;
    }
  } else if (v.isTuple()) {
    for (const torch::jit::IValue& e : v.toTupleRef().elements()) {
      if (auto d = cuda_device_of(e)) return d;
    }
  }
  return std::nullopt;
}

// The CUDA device whose queue a forward() call may leave work on, if any.
std::optional<c10::DeviceIndex> cuda_device_of(const torch::jit::Module& module,
                                               const std::vector<torch::jit::IValue>& inputs) {
  for (const torch::jit::IValue& v : inputs) {
    if (auto d = cuda_device_of(v)) return d;
  }
  for (const at::Tensor& p : module.parameters()) {
    if (p.is_cuda()) return p.get_device();
  }
  for (const at::Tensor& b : module.buffers()) {
    if (b.defined() && b.is_cuda()) return b.get_device();
  }
  return std::nullopt;
}

}  // namespace

Sampler forward_sampler(torch::jit::Module module, std::vector<torch::jit::IValue> inputs) {
  if (!module.find_method("forward")) {
    throw invalid_argument("harness::forward_sampler: the TorchScript module has no forward method");
  }
  const std::optional<c10::DeviceIndex> cuda = cuda_device_of(module, inputs);
  if (cuda) {
    return [module, inputs, device = *cuda](int64_t number) mutable {
      torch::cuda::synchronize(device);
      const int64_t t0 = now_ns();
      for (int64_t i = 0; i < number; ++i) module.forward(inputs);
      torch::cuda::synchronize(device);
      return now_ns() - t0;
    };
  }
  return [module, inputs](int64_t number) mutable {
    return time_loop(number, [&] { module.forward(inputs); });
  };
}

Result time_forward(const torch::jit::Module& module, std::vector<torch::jit::IValue> inputs,
                    const RunOptions& options) {
  Sampler sample = forward_sampler(module, std::move(inputs));
  // The profiling executor runs the first call(s) instrumented and then
  // optimises the graph, which can take tens of ms; calibration seeing that
  // would settle on one run per block. Calls 1..kWarmupCalls absorb it.
  constexpr int64_t kWarmupCalls = 5;
  sample(kWarmupCalls);
  return run_sampler(sample, options);
}

}  // namespace harness
