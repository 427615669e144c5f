#pragma once
// Output files of `simkit prolif simulate`, each written atomically (temp file + rename).
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simkit/prolif/analysis.hpp"
#include "simkit/prolif/prolif.hpp"

namespace simkit::prolif {

struct Report {
  InitialHistogram initial;
  Model model;
  std::vector<Result> runs;                // replicates; runs[0] is the first (seed S)
  std::optional<InitialHistogram> target;  // compared at t_max
  Binning binning;
  std::string backend, device;
  double wall_seconds = 0;
};

// The result.json document (also used by tests and the CLI summary).
nlohmann::json result_json(const Report& report);

// histogram.tsv, exact.csv, binned.csv, result.json and plot.svg into `dir` (created when missing),
// all or nothing: they are staged and moved into place together. Returns the result.json document.
nlohmann::json write_outputs(const std::filesystem::path& dir, const Report& report);

}  // namespace simkit::prolif
