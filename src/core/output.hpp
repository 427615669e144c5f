#pragma once
// Atomic output: everything is written to a temporary file beside the target and renamed over
// it only when complete, so a failed or interrupted run never leaves a truncated result.
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

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

// An input a run could overwrite: `input` is the file `output` names (also through symbolic links
// or hard links), or, with `output_is_directory`, lies anywhere inside that directory (a run
// rewrites its output directory). Refused with a UserError naming both, before any work, so that
// a run never destroys its own input. Paths that do not exist yet cannot clash.
void refuse_input_as_output(const std::filesystem::path& output, bool output_is_directory,
                            std::string_view input_name, const std::filesystem::path& input,
                            std::string_view output_name);

}  // namespace simkit
