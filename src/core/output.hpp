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

}  // namespace simkit
