#include "simkit/core/memory.hpp"

#include <fmt/format.h>

#include <fstream>
#include <sstream>
#include <string>

#include "simkit/core/error.hpp"

namespace simkit {

std::string gib_text(double bytes) { return fmt::format("{:.2f} GiB", bytes / 1073741824.0); }

void require_host_memory(double bytes, const std::string& field, const std::string& detail, const std::string& hint) {
  const std::size_t available = host_available_bytes();
  if (available == 0 || bytes <= static_cast<double>(available)) return;
  throw UserError(field, fmt::format("{}: needs {} of host memory, {} available; {}", detail, gib_text(bytes),
                                     gib_text(static_cast<double>(available)), hint));
}

std::size_t host_available_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("MemAvailable:", 0) == 0) {
      std::istringstream fields(line.substr(13));
      std::size_t kb = 0;
      fields >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

}  // namespace simkit
