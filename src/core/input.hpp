#pragma once
// Reading input files whole, with the UserError (exit code 2) that names the file.
#include <fmt/format.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

#include "simkit/core/error.hpp"
#include "simkit/core/memory.hpp"

namespace simkit {

// No format limit: only the memory check applies.
inline constexpr std::uintmax_t kAnySize = std::numeric_limits<std::uintmax_t>::max();
// Configuration and model files (TOML, types files): far larger is a wrong file.
inline constexpr std::uintmax_t kConfigFileBytes = std::uintmax_t{16} << 20;

// Checks an input before a byte of it is read and returns its size: it must be a regular file (a
// device such as /dev/zero, a pipe or a directory is refused), at most `max_bytes` (the format's
// sanity limit), and no larger than half the host memory available now (a file read whole needs
// its size in memory, and usually as much again for what is parsed from it).
inline std::uintmax_t check_input_file(const std::filesystem::path& path, const std::string& file,
                                       std::uintmax_t max_bytes = kAnySize) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found) {
    throw input_error(file, 0, "", "cannot open the file for reading: no such file");
  }
  if (ec) throw input_error(file, 0, "", fmt::format("cannot open the file for reading: {}", ec.message()));
  if (fs::is_directory(status)) throw input_error(file, 0, "", "is a directory, expected a file");
  if (!fs::is_regular_file(status)) {
    throw input_error(file, 0, "", "is not a regular file (a device, pipe or socket); give a file");
  }
  const std::uintmax_t size = fs::file_size(path, ec);
  if (ec) throw input_error(file, 0, "", fmt::format("cannot read the file size: {}", ec.message()));
  if (size > max_bytes) {
    throw input_error(file, 0, "", fmt::format("is {} bytes; a file of this kind is at most {} MiB", size,
                                               max_bytes >> 20));
  }
  const std::size_t available = host_available_bytes();
  if (available > 0 && size > available / 2) {
    throw input_error(file, 0, "",
                      fmt::format("is {:.2f} GiB; reading it needs about twice that and {:.2f} GiB of memory are "
                                  "available",
                                  static_cast<double>(size) / 1073741824.0, static_cast<double>(available) / 1073741824.0));
  }
  return size;
}

// The whole file as bytes; `file` is the name used in messages.
inline std::string read_whole_file(const std::filesystem::path& path, const std::string& file,
                                   std::uintmax_t max_bytes = kAnySize) {
  const std::uintmax_t size = check_input_file(path, file, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(file, 0, "", "cannot open the file for reading");
  std::string content(static_cast<std::size_t>(size), '\0');
  in.read(content.data(), static_cast<std::streamsize>(size));
  if (in.bad() || static_cast<std::uintmax_t>(in.gcount()) != size) throw input_error(file, 0, "", "cannot read the file");
  // A UTF-8 byte-order mark (spreadsheet exports write one) is not part of the first field: left
  // in, it turned a CSV header into data and showed up invisibly in error messages.
  if (content.compare(0, 3, "\xEF\xBB\xBF") == 0) content.erase(0, 3);
  return content;
}

}  // namespace simkit
