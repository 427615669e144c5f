#pragma once
// Readers for prolif's input formats. Every problem is a UserError naming file, line and field.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "simkit/prolif/fit.hpp"
#include "simkit/prolif/prolif.hpp"

namespace simkit::prolif {

// A fluorescence histogram (H(0) or a target). Formats, detected per file:
//  - ProCell/cuProCell text: two whitespace-separated columns `value count` per line, CRLF tolerated,
//    blank lines and lines starting with '#' skipped;
//  - CSV with a header line (file ending in .csv, or a first line containing a comma): the first
//    column is the value, the second the count; a header is required for .csv.
// Counts may be written as integers or as integral reals (1e9, 12.0); they must be >= 0 and
// integral. Values must be finite and > 0. Rows with count 0 are skipped. A file with no cell
// at all (empty, or only zero counts) is an error.
InitialHistogram read_histogram(const std::filesystem::path& path);

// Flow Cytometry Standard 3.0/3.1 list-mode files: the events of one channel, chosen by its $PnN
// or $PnS name, become a histogram. Values are decoded as the file says ($PnE f1,f2 > 0:
// logarithmic amplification, 10^(f1 x / $PnR) f2; else linear, x / $PnG) unless `raw`; an
// optional gate keeps the events whose value on another channel lies in [min, max]; events with a
// value <= 0 are left out. Up to 65536 distinct values give an exact histogram (value, count);
// more are grouped into logarithmic bins of 1/256 decade from the smallest value, each at its
// geometric centre. Problems: UserError naming the file and the keyword.
struct FcsOptions {
  std::string channel;
  struct Gate {
    std::string channel;
    double min = 0, max = 0;
  };
  std::optional<Gate> gate;
  bool raw = false;
};
bool is_fcs_file(const std::filesystem::path& path);
InitialHistogram read_fcs_histogram(const std::filesystem::path& path, const FcsOptions& options);
// read_histogram, or read_fcs_histogram when the file starts with "FCS".
InitialHistogram read_histogram(const std::filesystem::path& path, const FcsOptions& fcs);

// What a model file gives; the command line overrides any of it.
struct ModelFile {
  Model model;                    // populations always; phi_min/times/start if given
  std::optional<double> phi_min;  // set when the file gave it
  std::optional<double> t_max;
  std::optional<std::vector<double>> times;
  std::optional<StartMode> start;
  std::optional<std::uint64_t> seed;
};

// TOML model: top-level keys phi_min, t_max, times (array), start ("sync" | "procell-async"),
// seed; `[[population]]` tables with name, proportion, and either `quiescent = true` or
// mean + sd (+ optional distribution = "normal" | "gamma" | "lognormal"). Unknown keys, wrong
// types, mean <= 0, sd < 0, proportions outside [0, 1] or not summing to 1 (within 1e-6), more
// than one quiescent population, duplicate names: UserError with file and line.
ModelFile read_model_toml(const std::filesystem::path& path);

// The same TOML with values a fit may change written as bounds: `mean = { min = 30, max = 63 }`
// (likewise sd, proportion and the top-level phi_min). spec.model holds the fixed values and a
// placeholder (the midpoint) for each free one; spec.free has one entry per population.
struct FitModelFile {
  ModelFile file;
  FitSpec spec;
};
FitModelFile read_fit_model_toml(const std::filesystem::path& path);

// cuProCell types file: one population per line, `proportion mean sd`; a quiescent population
// is written `proportion -1 -1`. Names: "quiescent" and "P1", "P2", ... in file order.
// Same checks and messages as the TOML reader.
ModelFile read_types_file(const std::filesystem::path& path);

// Parses "sync" / "procell-async" (UserError naming `what`, e.g. "--start").
StartMode parse_start_mode(const std::string& text, const std::string& what);
std::string to_string(StartMode mode);
std::string to_string(Distribution distribution);

}  // namespace simkit::prolif
