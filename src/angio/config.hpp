#pragma once
// `simkit angio run --config run.toml`: every key optional; command-line flags override them.
// The keys and their meaning are listed in docs/angio.md ("Configuration file").
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "angio/angio.hpp"
#include "angio/hybrid.hpp"

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

// "expanded" | "flux", "fp32" | "fp64", "linear" | "tumour" (also "tumor"); nullopt otherwise.
std::optional<Form> parse_form(std::string_view text);
std::optional<Precision> parse_precision(std::string_view text);
std::optional<InitialTaf> parse_taf(std::string_view text);

}  // namespace simkit::angio
