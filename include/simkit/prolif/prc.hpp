#pragma once
// ProCell project files (.prc): a Python pickle, protocol 0, of ProCell's `Project` object. simkit
// reads the subset of the pickle machine that such files use (text opcodes, the memo, globals,
// REDUCE and BUILD; PyQt4 QString names as sip._unpickle_type calls) without running Python, and
// writes files that ProCell (Python 3) loads. docs/prolif.md, "ProCell projects".
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "simkit/prolif/fit.hpp"

namespace simkit::prolif {

struct ProcellProject {
  std::string project_name;
  // populations as a fit specification: proportions free (stick-breaking, as ProCell fits them)
  // when there are two or more populations; each mean and sd free within the row's bounds when
  // both bounds are set (ProCell leaves unset bounds at 0); phi_min = fluorescence_threshold,
  // times = {simulation_time}, start = procell-async when `asynchronous`.
  FitSpec spec;
  // "NAME.mean" / "NAME.sd" of proliferating rows whose bounds are not set (0): ProCell refuses to
  // calibrate such a project; simkit asks for them (--free) or for the value to be kept (--fix).
  std::vector<std::string> unset_bounds;
  std::optional<std::string> initial_file, target_file, validation_file;  // as written (may be Windows paths)
  double simulation_time = 0, validation_time = 0;
  double fluorescence_threshold = 0;
  int swarm_size = 50, iterations = 100, bins = 100;
  double lowest_bin = 10, highest_bin = 10000;
  bool normalize_to_target = true, asynchronous = false;
  std::string algorithm = "Fuzzy Self-Tuning PSO";
};

// UserError "FILE:LINE: field 'F': ..." for a file that is not such a pickle, or whose fields
// have the wrong types (LINE: the pickle's text line).
ProcellProject read_prc(const std::filesystem::path& path);

// The bytes of a .prc holding `project` (protocol 0; names and paths as unicode strings).
std::string prc_bytes(const ProcellProject& project);

// The file name part of a path written on Windows or POSIX ("C:\\data\\t.txt" -> "t.txt").
std::string portable_file_name(const std::string& path);

}  // namespace simkit::prolif
