#include "simkit/prolif/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace simkit::prolif {

std::vector<double> Binning::edges() const {
  const double a = std::ceil(std::log10(low)), b = std::ceil(std::log10(high));
  std::vector<double> e(static_cast<std::size_t>(bins));
  for (int i = 0; i < bins; ++i) {
    const double x = bins == 1 ? a : a + (b - a) * static_cast<double>(i) / static_cast<double>(bins - 1);
    e[static_cast<std::size_t>(i)] = std::pow(10.0, x);
  }
  return e;
}

Binned bin_values(const std::vector<double>& values, const std::vector<double>& weights, const Binning& binning) {
  const std::vector<double> e = binning.edges();
  Binned out;
  out.counts.assign(e.size(), 0.0);
  for (std::size_t n = 0; n < values.size(); ++n) {
    const double v = values[n], w = weights[n];
    if (v < binning.low || v < binning.phi_min) {
      out.skipped += w;
      continue;
    }
    const auto it = std::lower_bound(e.begin(), e.end(), v);  // first e_i >= v
    if (it == e.end()) {
      out.overflow += w;
    } else {
      out.counts[static_cast<std::size_t>(it - e.begin())] += w;
    }
  }
  return out;
}

Binned bin_histogram(const InitialHistogram& histogram, const Binning& binning) {
  std::vector<double> w(histogram.counts.begin(), histogram.counts.end());
  return bin_values(histogram.values, w, binning);
}

Binned bin_result(const Result& result, const InitialHistogram& initial, std::size_t t, const Binning& binning) {
  std::vector<double> values, weights;
  for (std::size_t i = 0; i < result.rows; ++i) {
    for (std::size_t k = 0; k < result.generations; ++k) {
      std::uint64_t c = 0;
      for (std::size_t p = 0; p < result.populations; ++p) c += result.at(t, i, k, p);
      if (c == 0) continue;
      values.push_back(std::ldexp(initial.values[i], -static_cast<int>(k)));
      weights.push_back(static_cast<double>(c));
    }
  }
  return bin_values(values, weights, binning);
}

std::optional<Hellinger> hellinger(const std::vector<double>& simulated, const std::vector<double>& target) {
  double ssum = 0, tsum = 0;
  for (double v : simulated) ssum += v;
  for (double v : target) tsum += v;
  if (!(ssum > 0) || !(tsum > 0) || simulated.size() != target.size()) return std::nullopt;
  const double ratio = ssum / tsum;
  double sq = 0;
  for (std::size_t i = 0; i < target.size(); ++i) {
    const double d = std::sqrt(simulated[i] / ratio) - std::sqrt(target[i]);
    sq += d * d;
  }
  Hellinger h;
  h.distance = std::sqrt(sq) / std::sqrt(2.0);
  h.normalized = h.distance / std::sqrt(tsum);
  return h;
}

double percentile(std::vector<double> values, double q) {
  if (values.empty()) return std::nan("");
  std::sort(values.begin(), values.end());
  const double pos = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, values.size() - 1);
  return values[lo] + (values[hi] - values[lo]) * (pos - static_cast<double>(lo));
}

std::vector<std::pair<double, std::uint64_t>> exact_histogram(const Result& result, const InitialHistogram& initial,
                                                              std::size_t t) {
  std::map<double, std::uint64_t> merged;
  for (std::size_t i = 0; i < result.rows; ++i) {
    for (std::size_t k = 0; k < result.generations; ++k) {
      std::uint64_t c = 0;
      for (std::size_t p = 0; p < result.populations; ++p) c += result.at(t, i, k, p);
      if (c > 0) merged[std::ldexp(initial.values[i], -static_cast<int>(k))] += c;
    }
  }
  return {merged.begin(), merged.end()};
}

}  // namespace simkit::prolif
