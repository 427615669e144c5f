#pragma once
// The harness shared by the fuzz targets (docs/reliability.md, "Sanitizers and fuzzing"). simkit's
// readers take paths: each input is written to one temporary file per process, with the extension
// the reader dispatches on, and the reader is called on it. A UserError (bad input: exit code 2,
// DeviceMemoryError included) is the reader's normal answer to a bad file; any other exception is
// a finding and aborts, as do crashes, leaks and sanitizer reports.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <string>
#include <typeinfo>

#include "simkit/core/error.hpp"

namespace simkit::fuzz {

// $TMPDIR, else /dev/shm (memory), else /tmp; the name holds the target and the process id so that
// targets running side by side never share a file.
inline std::filesystem::path scratch_file(const char* target, const char* extension) {
  namespace fs = std::filesystem;
  fs::path dir = "/tmp";
  if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp != '\0') {
    dir = tmp;
  } else if (::access("/dev/shm", W_OK) == 0) {
    dir = "/dev/shm";
  }
  return dir / (std::string("simkit-fuzz-") + target + "-" + std::to_string(::getpid()) + extension);
}

// Removes the scratch files that runs of `target` which crashed (no destructor ran) left behind.
inline void remove_stale_scratch_files(const std::filesystem::path& dir, const std::string& target) {
  namespace fs = std::filesystem;
  const std::string prefix = "simkit-fuzz-" + target + "-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    const long pid = std::strtol(name.c_str() + prefix.size(), nullptr, 10);
    if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) fs::remove(entry.path(), ec);
  }
}

class ScratchFile {
 public:
  ScratchFile(const char* target, const char* extension) : path_(scratch_file(target, extension)) {
    remove_stale_scratch_files(path_.parent_path(), target);
  }
  ~ScratchFile() {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  ScratchFile(const ScratchFile&) = delete;
  ScratchFile& operator=(const ScratchFile&) = delete;

  const std::filesystem::path& write(const std::uint8_t* data, std::size_t size) const {
    std::FILE* f = std::fopen(path_.c_str(), "wb");
    if (f == nullptr || (size > 0 && std::fwrite(data, 1, size, f) != size) || std::fclose(f) != 0) {
      std::perror(path_.c_str());
      std::abort();  // the machine, not the reader: stop rather than report a false finding
    }
    return path_;
  }

 private:
  std::filesystem::path path_;
};

// Calls read(); a UserError is a rejection, anything else escaping is reported and aborts.
template <class Read>
void expect_accept_or_user_error(Read&& read) {
  try {
    read();
  } catch (const UserError&) {
    // the documented answer to a bad file
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: %s escaped the reader (not a simkit::UserError): %s\n", typeid(e).name(), e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: a non-std exception escaped the reader\n");
    std::abort();
  }
}

}  // namespace simkit::fuzz

// One target: NAME (the binary fuzz_NAME), the file's EXTENSION, and a statement that reads `path`.
#define SIMKIT_FUZZ_TARGET(NAME, EXTENSION, ...)                                      \
  extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) { \
    static const simkit::fuzz::ScratchFile scratch(#NAME, EXTENSION);                 \
    const std::filesystem::path& path = scratch.write(data, size);                    \
    simkit::fuzz::expect_accept_or_user_error([&] { __VA_ARGS__; });                  \
    return 0;                                                                         \
  }
