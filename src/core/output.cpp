#include "core/output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <system_error>

#include "simkit/core/error.hpp"

namespace simkit {

namespace {
std::filesystem::path temp_name(const std::filesystem::path& target) {
  static std::atomic<unsigned> counter{0};
  return target.parent_path() /
         fmt::format(".{}.tmp.{}.{}", target.filename().string(), static_cast<long>(::getpid()), counter++);
}
}  // namespace

AtomicFile::AtomicFile(std::filesystem::path target) : target_(std::move(target)), temp_(temp_name(target_)) {
  out_.open(temp_, std::ios::binary | std::ios::trunc);
  if (!out_) {
    throw UserError(fmt::format("{}: cannot write: {}", target_.string(), std::strerror(errno)));
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::error_code ec;
    std::filesystem::remove(temp_, ec);
  }
}

void AtomicFile::commit() {
  out_.flush();
  const bool ok = static_cast<bool>(out_);
  out_.close();
  if (!ok || out_.fail()) {
    throw UserError(fmt::format("{}: write failed (disk full or file system error)", target_.string()));
  }
  std::error_code ec;
  std::filesystem::rename(temp_, target_, ec);
  if (ec) throw UserError(fmt::format("{}: cannot move into place: {}", target_.string(), ec.message()));
  committed_ = true;
}

void write_file_atomic(const std::filesystem::path& target, std::string_view content) {
  AtomicFile file(target);
  file.stream().write(content.data(), static_cast<std::streamsize>(content.size()));
  file.commit();
}

void ensure_output_directory(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw UserError("out", fmt::format(" {}: cannot create the output directory: {}", dir.string(),
                                ec ? ec.message() : "a file of that name exists"));
  }
}

void refuse_input_as_output(const std::filesystem::path& output, bool output_is_directory,
                            std::string_view input_name, const std::filesystem::path& input,
                            std::string_view output_name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (input.empty() || output.empty() || !fs::exists(input, ec)) return;
  const auto clash = [&](std::string_view how) {
    throw UserError(fmt::format("{} {}: {} {} {}; the run would overwrite its input (write elsewhere, or move the input "
                                "out of the way)",
                                input_name, input.string(), how, output_name, output.string()));
  };
  if (fs::exists(output, ec) && fs::equivalent(input, output, ec)) clash("is the same file as");
  if (!output_is_directory) return;
  // Inside the directory: compare the input's real path with the directory's (which may not exist
  // yet: weakly_canonical resolves the part that does).
  fs::path dir = fs::weakly_canonical(output, ec);
  if (!dir.has_filename()) dir = dir.parent_path();  // "out/" ends in an empty element
  const fs::path file = fs::canonical(input, ec);
  if (ec || dir.empty()) return;
  auto d = dir.begin();
  auto f = file.begin();
  for (; d != dir.end() && f != file.end(); ++d, ++f) {
    if (*d != *f) return;
  }
  if (d == dir.end() && f != file.end()) clash("lies inside");
}

}  // namespace simkit
