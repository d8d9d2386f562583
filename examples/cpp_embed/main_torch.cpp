// Times a TorchScript model's forward() on one 4x4 tensor, from C++, with one
// intra-op thread. Make a model in Python:
//   torch.jit.script(torch.nn.Linear(4, 4)).save("linear.pt")
//
//   cpp_embed_torch MODEL.pt [min_run_time_s]
#include <cstdio>
#include <cstdlib>

#include <harness/torch.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: cpp_embed_torch MODEL.pt [min_run_time_s]\n");
    return 2;
  }
  harness::RunOptions options;
  if (argc > 2) options.min_run_time_s = std::atof(argv[2]);
  try {
    torch::jit::Module model = harness::load_torchscript(argv[1]);
    harness::NumThreadsGuard threads(1);
    torch::NoGradGuard no_grad;
    harness::Result r = harness::time_forward(model, {torch::ones({4, 4})}, options);
    std::printf("%s forward: median %.1f ns, IQR %.1f ns, %zu blocks x %lld runs\n", argv[1], r.stats.median,
                r.stats.iqr(), r.samples_ns.size(), static_cast<long long>(r.number_per_run));
  } catch (const harness::invalid_argument& e) {
    std::fprintf(stderr, "cpp_embed_torch: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {  // the model's own error (c10::Error)
    std::fprintf(stderr, "cpp_embed_torch: %s: forward failed: %s\n", argv[1], e.what());
    return 1;
  }
  return 0;
}
