// Unit tests of harness::torch (run by ctest when built with HARNESS_BUILD_TORCH).
// argv[1]: a scratch directory for the TorchScript files the tests save.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <ATen/Parallel.h>

#include "harness/torch.h"

static int failures = 0;

#define EXPECT(cond)                                                                 \
  do {                                                                              \
    if (!(cond)) {                                                                  \
      std::fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #cond); \
      ++failures;                                                                   \
    }                                                                               \
  } while (0)

static bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

static void test_threads_guard_restores() {
  at::set_num_threads(2);
  {
    harness::NumThreadsGuard guard(1);
    EXPECT(at::get_num_threads() == 1);
    EXPECT(guard.previous() == 2);
  }
  EXPECT(at::get_num_threads() == 2);
  try {
    harness::NumThreadsGuard guard(1);
    throw std::runtime_error("leave the scope by an exception");
  } catch (const std::runtime_error&) {
  }
  EXPECT(at::get_num_threads() == 2);
  bool threw = false;
  try {
    harness::NumThreadsGuard guard(0);
  } catch (const harness::invalid_argument& e) {
    threw = contains(e.what(), "num_threads");
  }
  EXPECT(threw);
  EXPECT(at::get_num_threads() == 2);
}

// A module that counts its forward() calls in an attribute, saved and loaded
// back, so the test sees the loaded module run, not the one built here.
static void test_time_forward_runs_the_loaded_module(const std::string& dir) {
  torch::jit::Module m("Counter");
  m.register_attribute("calls", c10::IntType::get(), int64_t{0});
  m.define(R"(
def forward(self, x):
    self.calls += 1
    return x + 1
)");
  const std::string path = dir + "/counter.pt";
  m.save(path);

  torch::jit::Module loaded = harness::load_torchscript(path);
  const at::Tensor out = loaded.forward({torch::ones({4, 4})}).toTensor();
  EXPECT(out.allclose(torch::full({4, 4}, 2.0)));
  const int64_t before = loaded.attr("calls").toInt();
  EXPECT(before == 1);

  harness::RunOptions options;
  options.min_run_time_s = 0.02;
  harness::Result r = harness::time_forward(loaded, {torch::ones({4, 4})}, options);
  EXPECT(!r.samples_ns.empty());
  EXPECT(r.number_per_run >= 1);
  EXPECT(r.stats.median > 0);
  const int64_t calls = loaded.attr("calls").toInt() - before;
  // Calibration and warm-up add calls; the measured ones are a lower bound.
  EXPECT(calls >= r.number_per_run * static_cast<int64_t>(r.samples_ns.size()));

  // fixed_blocks through the sampler: exactly number * repeats calls.
  const int64_t start = loaded.attr("calls").toInt();
  harness::fixed_blocks(harness::forward_sampler(loaded, {torch::ones({2})}), 7, 3);
  EXPECT(loaded.attr("calls").toInt() - start == 21);
}

static void test_bad_files_name_the_path(const std::string& dir) {
  const std::string missing = dir + "/missing.pt";
  std::string message;
  try {
    harness::load_torchscript(missing);
  } catch (const harness::invalid_argument& e) {
    message = e.what();
  }
  EXPECT(contains(message, missing));

  const std::string garbage = dir + "/garbage.pt";
  std::ofstream(garbage) << "not a zip archive";
  message.clear();
  try {
    harness::load_torchscript(garbage);
  } catch (const harness::invalid_argument& e) {
    message = e.what();
  }
  EXPECT(contains(message, garbage));
  EXPECT(contains(message, "not a loadable TorchScript archive"));
}

static void test_module_errors() {
  torch::jit::Module no_forward("NoForward");
  bool threw = false;
  try {
    harness::forward_sampler(no_forward, {});
  } catch (const harness::invalid_argument& e) {
    threw = contains(e.what(), "forward");
  }
  EXPECT(threw);

  // An exception raised by the module's own code reaches the caller as is.
  torch::jit::Module raising("Raising");
  raising.define(R"(
def forward(self, x):
    assert bool(x.sum() < 0), "boom from the module"
    return x
)");
  std::string message;
  try {
    harness::time_forward(raising, {torch::ones({1})});
  } catch (const harness::invalid_argument&) {
    message = "wrongly reported as harness::invalid_argument";
  } catch (const std::exception& e) {
    message = e.what();
  }
  EXPECT(contains(message, "boom from the module"));
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : std::filesystem::temp_directory_path().string();
  std::filesystem::create_directories(dir);
  test_threads_guard_restores();
  test_time_forward_runs_the_loaded_module(dir);
  test_bad_files_name_the_path(dir);
  test_module_errors();
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::puts("all torch tests passed");
  return 0;
}
