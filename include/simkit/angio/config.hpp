#pragma once
// `simkit angio run --config run.toml`: every key optional; command-line flags override them.
// The keys and their meaning are listed in docs/angio.md ("Configuration file").
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "simkit/angio/angio.hpp"
#include "simkit/angio/hybrid.hpp"
#include "simkit/core/names.hpp"

namespace simkit::angio {

struct ConfigFile {
  std::string source;
  std::optional<std::string> model;  // "continuous" or "hybrid"
  std::optional<Form> form;
  std::optional<Precision> precision;
  std::optional<std::uint64_t> seed;
  std::optional<int> nx, ny, nz;
  std::optional<double> h, dt, t_max;
  std::optional<std::int64_t> steps, output_every, series_every, checkpoint_every;
  std::optional<bool> quicklook;
  std::optional<std::uint64_t> metrics_files;  // [output] metrics_files (the hybrid model's; "all" or N)
  std::size_t metrics_files_line = 0;          // its line in the file
  ModelParams parameters;  // defaults overridden by [parameters]
  InitialParams initial;   // defaults overridden by [initial]
  std::optional<InitialTaf> taf;
  std::optional<std::filesystem::path> initial_file;  // relative paths resolved against the config's directory
  // [hybrid]: the tip-cell model's settings (defaults overridden key by key)
  HybridParams hybrid;
  std::optional<int> replicates;
  bool hybrid_given = false;  // a [hybrid] table was present
};

// Reads and checks types and ranges; unknown keys, wrong types and bad values are UserErrors
// naming the file, the line and the key.
ConfigFile read_config(const std::filesystem::path& path);

// The names of the choices (config values, flags, run.json and result.json), one table each.
inline constexpr Named<Form> kFormNames[] = {{Form::Expanded, "expanded"}, {Form::Flux, "flux"}};
inline constexpr Named<Precision> kPrecisionNames[] = {{Precision::Fp32, "fp32"}, {Precision::Fp64, "fp64"}};
inline constexpr Named<InitialTaf> kTafNames[] = {{InitialTaf::Linear, "linear"}, {InitialTaf::Tumour, "tumour"}};
inline constexpr Named<Sensitivity> kSensitivityNames[] = {{Sensitivity::Receptor, "receptor"},
                                                           {Sensitivity::Constant, "constant"}};
inline constexpr Named<Uptake> kUptakeNames[] = {{Uptake::Trail, "trail"}, {Uptake::Tip, "tip"}};
inline constexpr Named<DaughterPlacement> kDaughterNames[] = {{DaughterPlacement::Weights, "weights"},
                                                              {DaughterPlacement::Uniform, "uniform"}};
inline constexpr Named<MoveWeights> kWeightsNames[] = {{MoveWeights::Central, "central"},
                                                       {MoveWeights::OneSided, "one-sided"}};
// Branch probability: from the P_n(c) table, or one (Named<bool>: branch_always).
inline constexpr Named<bool> kBranchProbabilityNames[] = {{false, "table"}, {true, "one"}};

// Values of the tables above ("tumor" too); nullopt otherwise.
std::optional<Form> parse_form(std::string_view text);
std::optional<Precision> parse_precision(std::string_view text);
std::optional<InitialTaf> parse_taf(std::string_view text);
// "receptor" | "constant".
std::optional<Sensitivity> parse_sensitivity(std::string_view text);

// The hybrid model's rule choices by name (config keys and flags), and back (result.json):
// anastomosis "other" | "other-active" | "any" | "window:N" (N >= 1 positions), uptake "trail" |
// "tip", daughter "weights" | "uniform", branch probability "table" | "one".
struct AnastomosisChoice {
  AnastomosisRule rule = AnastomosisRule::Other;
  int window = 10;
};
std::optional<AnastomosisChoice> parse_anastomosis(std::string_view text);
std::optional<Uptake> parse_uptake(std::string_view text);
std::optional<DaughterPlacement> parse_daughter(std::string_view text);
std::optional<bool> parse_branch_always(std::string_view text);
// "central" | "one-sided"
std::optional<MoveWeights> parse_weights(std::string_view text);
const char* weights_name(MoveWeights w);
std::string anastomosis_name(const HybridParams& h);
const char* uptake_name(Uptake u);
const char* daughter_name(DaughterPlacement d);
const char* sensitivity_name(Sensitivity s);

// "--sprouts-at" text: comma-separated y values, or y:z pairs in 3D (box fractions). nullopt when
// an entry is not a number or a pair of numbers.
std::optional<std::vector<SproutPosition>> parse_sprouts_at(std::string_view text);

// "--metrics-files" text: "all" (every realisation's metrics file: the largest uint64) or a count
// N >= 0 (the first N realisations'). nullopt otherwise.
std::optional<std::uint64_t> parse_metrics_files(std::string_view text);

}  // namespace simkit::angio
