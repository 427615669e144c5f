#pragma once
// Comparison with flow-cytometry data: ProCell's logarithmic binning, the Hellinger distance, and
// replicate statistics (means and 5-95 % bands).
#include <cstdint>
#include <optional>
#include <vector>

#include "simkit/prolif/prolif.hpp"

namespace simkit::prolif {

struct Binning {
  int bins = 100;
  double low = 10, high = 1e4;  // LO, HI
  double phi_min = 0;           // values below are skipped, as in ProCell

  // e_i = 10^(a + i (b - a) / (N - 1)), a = ceil(log10 LO), b = ceil(log10 HI).
  std::vector<double> edges() const;
};

struct Binned {
  std::vector<double> counts;  // per bin
  double overflow = 0;         // above the last edge: counted and reported, never dropped
  double skipped = 0;          // below LO or below phi_min
};

// A value v goes to the first bin i with e_i >= v.
Binned bin_values(const std::vector<double>& values, const std::vector<double>& weights, const Binning& binning);
Binned bin_histogram(const InitialHistogram& histogram, const Binning& binning);
// Cells existing at output time t (index) binned by fluorescence values[i] / 2^k.
Binned bin_result(const Result& result, const InitialHistogram& initial, std::size_t t, const Binning& binning);

struct Hellinger {
  double distance = 0, normalized = 0;
};
// ProCell's distance: ratio = sum(sim) / sum(target); H = ||sqrt(sim / ratio) - sqrt(target)||_2 / sqrt(2);
// normalized = H / sqrt(sum(target)). Empty when either histogram has no cell in the bins.
std::optional<Hellinger> hellinger(const std::vector<double>& simulated, const std::vector<double>& target);

// Percentile with linear interpolation between order statistics (numpy's default).
double percentile(std::vector<double> values, double q);

// Exact values at output time t: each distinct values[i] / 2^k, ascending, with its count.
std::vector<std::pair<double, std::uint64_t>> exact_histogram(const Result& result, const InitialHistogram& initial,
                                                              std::size_t t);

}  // namespace simkit::prolif
