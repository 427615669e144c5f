#pragma once
// Reading input files whole, with the UserError (exit code 2) that names the file.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "simkit/core/error.hpp"

namespace simkit {

// The whole file as bytes; `file` is the name used in messages.
inline std::string read_whole_file(const std::filesystem::path& path, const std::string& file) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw input_error(file, 0, "", "is a directory, expected a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw input_error(file, 0, "", "cannot open the file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw input_error(file, 0, "", "cannot read the file");
  return buffer.str();
}

}  // namespace simkit
