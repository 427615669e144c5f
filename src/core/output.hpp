#pragma once
// Atomic output: everything is written to a temporary file beside the target and renamed over
// it only when complete, so a failed or interrupted run never leaves a truncated result.
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace simkit {

class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path target);
  ~AtomicFile();  // removes the temporary file unless commit() succeeded
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return out_; }
  // Flushes, closes and renames into place; a UserError names the file if anything failed.
  void commit();

 private:
  std::filesystem::path target_, temp_;
  std::ofstream out_;
  bool committed_ = false;
};

void write_file_atomic(const std::filesystem::path& target, std::string_view content);

// Creates DIR (and parents) for outputs; a UserError says why it cannot.
void ensure_output_directory(const std::filesystem::path& dir);

// Checks, creating nothing, that a run could write its outputs into `dir`: it is a writable
// directory, or the nearest part of its path that exists is one. A UserError (field "out")
// otherwise, so that a run that computes first and writes last fails before the work.
void check_output_directory(const std::filesystem::path& dir);

// A run's output directory, changed only by a run that succeeds. The run writes into a hidden
// staging directory inside `target` (".simkit-staging-PID-N", same file system); commit() moves
// each file to its place in `target`, replacing files of the same name, and removes the files of
// earlier runs that `stale` names and this run did not write (a shorter run must not leave the
// longer run's last snapshots or checkpoint behind). Without a commit (an error, a stop on
// SIGINT), the destructor removes the staging directory and every directory it created for
// `target`: the output directory is left as it was, or absent as it was.
class StagedOutput {
 public:
  // Creates the staging directory now, so that an unwritable `target` is a UserError (field
  // "out") before any work.
  explicit StagedOutput(std::filesystem::path target);
  ~StagedOutput();
  StagedOutput(const StagedOutput&) = delete;
  StagedOutput& operator=(const StagedOutput&) = delete;

  // Where the run writes.
  const std::filesystem::path& dir() const { return staging_; }
  const std::filesystem::path& target() const { return target_; }
  // `relative`: a path relative to the output directory, such as "snapshots/angio_000100.vti".
  using StalePredicate = std::function<bool(const std::filesystem::path& relative)>;
  void commit(const StalePredicate& stale = nullptr);

 private:
  std::filesystem::path target_, staging_;
  std::vector<std::filesystem::path> created_;  // directories made for target_, outermost first
  bool committed_ = false;
};

// Whether `relative` is `dir`/NAME where NAME starts with `prefix` and ends with `suffix` (the stale
// predicates' pattern: "snapshots", "angio_", ".vti").
bool matches_output_pattern(const std::filesystem::path& relative, std::string_view dir, std::string_view prefix,
                            std::string_view suffix);

// An input a run could overwrite: `input` is the file `output` names (also through symbolic links
// or hard links), or, with `output_is_directory`, lies anywhere inside that directory (a run
// rewrites its output directory). Refused with a UserError naming both, before any work, so that
// a run never destroys its own input. Paths that do not exist yet cannot clash.
void refuse_input_as_output(const std::filesystem::path& output, bool output_is_directory,
                            std::string_view input_name, const std::filesystem::path& input,
                            std::string_view output_name);

}  // namespace simkit
