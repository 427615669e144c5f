#include "simkit/core/error.hpp"

#include <fmt/format.h>

namespace simkit {

std::string message_naming(const UserError& e, const std::function<std::string(std::string_view)>& name_of) {
  const std::string text = e.field().empty() ? std::string(e.what()) : name_of(e.field()) + e.detail();
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t open = text.find('`', i);
    const std::size_t close = open == std::string::npos ? std::string::npos : text.find('`', open + 1);
    if (close == std::string::npos) {
      out.append(text, i, std::string::npos);
      break;
    }
    out.append(text, i, open - i);
    out += name_of(std::string_view(text).substr(open + 1, close - open - 1));
    i = close + 1;
  }
  return out;
}

UserError input_error(std::string_view file, std::size_t line, std::string_view field, std::string_view problem) {
  std::string where(file);
  if (line > 0) where += fmt::format(":{}", line);
  if (!field.empty()) return UserError(fmt::format("{}: field '{}': {}", where, field, problem));
  return UserError(fmt::format("{}: {}", where, problem));
}

}  // namespace simkit
