#include "simkit/core/error.hpp"

#include <fmt/format.h>

#include <algorithm>

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

namespace {
// The length of the valid UTF-8 sequence at s[i], or 0.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char b = byte(i);
  std::size_t n = 0;
  if (b >= 0xC2 && b <= 0xDF) {
    n = 2;
  } else if (b >= 0xE0 && b <= 0xEF) {
    n = 3;
  } else if (b >= 0xF0 && b <= 0xF4) {
    n = 4;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  const unsigned char second = byte(i + 1);
  if ((b == 0xE0 && second < 0xA0) || (b == 0xED && second > 0x9F) || (b == 0xF0 && second < 0x90) ||
      (b == 0xF4 && second > 0x8F)) {
    return 0;  // overlong, surrogate or above U+10FFFF
  }
  return n;
}
}  // namespace

std::string printable_line(std::string_view message, std::size_t max_bytes) {
  std::string out;
  out.reserve(std::min(message.size(), max_bytes) + 8);
  for (std::size_t i = 0; i < message.size();) {
    if (out.size() >= max_bytes) {
      out += "...";
      break;
    }
    const auto b = static_cast<unsigned char>(message[i]);
    if (b >= 0x20 && b < 0x7F) {
      out += static_cast<char>(b);
      ++i;
    } else if (const std::size_t n = b >= 0x80 ? utf8_length(message, i) : 0; n > 0) {
      out.append(message.substr(i, n));
      i += n;
    } else {
      out += fmt::format("\\x{:02X}", b);
      ++i;
    }
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
