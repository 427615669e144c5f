#include "simkit/core/error.hpp"

#include <fmt/format.h>

namespace simkit {

UserError input_error(std::string_view file, std::size_t line, std::string_view field, std::string_view problem) {
  std::string where(file);
  if (line > 0) where += fmt::format(":{}", line);
  if (!field.empty()) return UserError(fmt::format("{}: field '{}': {}", where, field, problem));
  return UserError(fmt::format("{}: {}", where, problem));
}

}  // namespace simkit
