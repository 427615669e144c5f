#include "core/output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
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

void check_output_directory(const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p = dir.empty() ? fs::path(".") : dir;
  while (!fs::exists(p, ec) && p.has_relative_path() && p.has_parent_path() && p != p.parent_path()) p = p.parent_path();
  if (!fs::exists(p, ec)) p = ".";
  if (!fs::is_directory(p, ec)) {
    throw UserError("out", fmt::format(" {}: cannot create the output directory: {} is not a directory", dir.string(),
                                       p.string()));
  }
  if (::access(p.c_str(), W_OK | X_OK) != 0) {
    throw UserError("out", fmt::format(" {}: cannot write in {}: {}", dir.string(), p.string(), std::strerror(errno)));
  }
}

StagedOutput::StagedOutput(std::filesystem::path target) : target_(std::move(target)) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // The directories this run creates, outermost first, to remove again when it fails.
  std::vector<fs::path> missing;
  for (fs::path p = target_; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.insert(missing.begin(), p);
    if (p == p.parent_path() || !p.has_relative_path()) break;
  }
  ensure_output_directory(target_);
  created_ = std::move(missing);
  static std::atomic<unsigned> counter{0};
  staging_ = target_ / fmt::format(".simkit-staging-{}-{}", static_cast<long>(::getpid()), counter++);
  fs::create_directory(staging_, ec);
  if (ec) {
    const std::string why = ec.message();
    for (auto d = created_.rbegin(); d != created_.rend(); ++d) fs::remove(*d, ec);
    throw UserError("out", fmt::format(" {}: cannot write in the output directory: {}", target_.string(), why));
  }
}

StagedOutput::~StagedOutput() {
  if (committed_) return;
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::remove_all(staging_, ec);
  for (auto d = created_.rbegin(); d != created_.rend(); ++d) fs::remove(*d, ec);  // only if empty
}

void StagedOutput::commit(const StalePredicate& stale) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::vector<fs::path> written;
  for (auto it = fs::recursive_directory_iterator(staging_, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_directory(ec)) written.push_back(fs::relative(it->path(), staging_, ec));
  }
  if (ec) throw UserError("out", fmt::format(" {}: cannot list the run's outputs: {}", target_.string(), ec.message()));
  // Stale files first: a failure here leaves every earlier output in place and none of this run's.
  if (stale) {
    std::vector<fs::path> old;
    for (auto it = fs::recursive_directory_iterator(target_, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (it->path() == staging_) {
        it.disable_recursion_pending();
        continue;
      }
      const fs::path rel = fs::relative(it->path(), target_, ec);
      if (!it->is_directory(ec) && stale(rel) && std::find(written.begin(), written.end(), rel) == written.end()) {
        old.push_back(rel);
      }
    }
    for (const fs::path& rel : old) {
      if (!fs::remove(target_ / rel, ec) && ec) {
        throw UserError("out", fmt::format(" {}: cannot remove the earlier run's {}: {}", target_.string(),
                                           rel.string(), ec.message()));
      }
    }
  }
  for (const fs::path& rel : written) {
    const fs::path to = target_ / rel;
    if (rel.has_parent_path()) ensure_output_directory(to.parent_path());
    fs::rename(staging_ / rel, to, ec);
    if (ec) throw UserError("out", fmt::format(" {}: cannot move {} into place: {}", target_.string(), rel.string(), ec.message()));
  }
  committed_ = true;
  fs::remove_all(staging_, ec);
}

bool matches_output_pattern(const std::filesystem::path& relative, std::string_view dir, std::string_view prefix,
                            std::string_view suffix) {
  if (relative.parent_path() != std::filesystem::path(dir)) return false;
  const std::string name = relative.filename().string();
  return name.size() >= prefix.size() + suffix.size() && name.compare(0, prefix.size(), prefix) == 0 &&
         name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
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
