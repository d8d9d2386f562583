// Times a few functions with the harness core and prints median and IQR.
//
//   cpp_embed [min_run_time_s]     (default 0.2 s per function)
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <harness/harness.h>

namespace {

void report(const char* name, const harness::Result& r) {
  std::printf("%-22s %12.1f %12.1f %8zu x %-10lld\n", name, r.stats.median, r.stats.iqr(), r.samples_ns.size(),
              static_cast<long long>(r.number_per_run));
}

}  // namespace

int main(int argc, char** argv) {
  harness::RunOptions options;
  if (argc > 1) options.min_run_time_s = std::atof(argv[1]);

  std::vector<int> data(1000);
  std::mt19937 rng(0);
  for (int& x : data) x = static_cast<int>(rng() % 100000);
  std::map<int, int> table;
  for (int i = 0; i < 1000; ++i) table[i * 7] = i;

  std::printf("%-22s %12s %12s %21s\n", "function", "median ns", "IQR ns", "blocks x runs");
  try {
    report("empty", harness::run([] {}, options));
    report("sum 1000 ints", harness::run([&] {
             long sum = std::accumulate(data.begin(), data.end(), 0L);
             harness::do_not_optimize(sum);
           }, options));
    report("sort 1000 ints", harness::run([&] {
             std::vector<int> copy = data;
             std::sort(copy.begin(), copy.end());
             harness::do_not_optimize(copy.data());
           }, options));
    report("map lookup", harness::run([&, key = 0]() mutable {
             key = (key + 7) % 7000;
             auto it = table.find(key);
             harness::do_not_optimize(it);
           }, options));
    report("std::to_string", harness::run([] {
             std::string s = std::to_string(1234567);
             harness::do_not_optimize(s.data());
           }, options));
  } catch (const harness::invalid_argument& e) {
    std::fprintf(stderr, "cpp_embed: %s (usage: cpp_embed [min_run_time_s > 0])\n", e.what());
    return 2;
  }
  return 0;
}
