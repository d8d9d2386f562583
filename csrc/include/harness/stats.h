// Sample statistics used by every report.
//
// Guarantees: quantiles use linear interpolation between closest ranks (the
// numpy/torch default), so median and IQR match torch.quantile exactly;
// stddev is the sample (n-1) standard deviation, 0 for a single sample.
// An empty input gives a Stats with n == 0 and NaN fields.
#pragma once

#include <cstddef>
#include <vector>

namespace harness {

struct Stats {
  std::size_t n = 0;
  double min = 0, max = 0, mean = 0, stddev = 0;
  double p25 = 0, median = 0, p75 = 0;
  double iqr() const { return p75 - p25; }
};

// q in [0, 1]; `sorted` must be sorted ascending and non-empty.
double quantile_sorted(const std::vector<double>& sorted, double q);

Stats compute_stats(std::vector<double> samples);

}  // namespace harness
