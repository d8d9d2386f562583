#include "harness/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace harness {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  const std::size_t n = sorted.size();
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  const double pos = q * static_cast<double>(n - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, n - 1);
  const double frac = pos - static_cast<double>(lo);
  const double below = sorted[lo], above = sorted[hi];
  // torch.lerp's two-sided form: quantiles equal torch.quantile's to the last
  // bit, so a median printed by harness and by torch never differs in a digit.
  return frac < 0.5 ? below + frac * (above - below) : above - (above - below) * (1.0 - frac);
}

Stats compute_stats(std::vector<double> samples) {
  Stats s;
  s.n = samples.size();
  if (s.n == 0) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    s.min = s.max = s.mean = s.stddev = s.p25 = s.median = s.p75 = nan;
    return s;
  }
  std::sort(samples.begin(), samples.end());
  s.min = samples.front();
  s.max = samples.back();
  s.mean = std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(s.n);
  if (s.n > 1) {
    double ss = 0;
    for (double x : samples) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1));
  }
  s.p25 = quantile_sorted(samples, 0.25);
  s.median = quantile_sorted(samples, 0.5);
  s.p75 = quantile_sorted(samples, 0.75);
  return s;
}

}  // namespace harness
