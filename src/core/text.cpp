#include "core/text.hpp"

#include <fmt/format.h>

#include <limits>
#include <type_traits>

namespace simkit::text {

std::string shown(std::string_view token, std::size_t max_chars) {
  if (token.size() > max_chars) return fmt::format("'{}...'", token.substr(0, max_chars));
  return fmt::format("'{}'", token);
}

UserError Line::error(std::string_view field, std::string_view problem) const {
  return input_error(file, number, field, problem);
}

// ---- lines ----

LineReader::LineReader(std::string_view content, std::string_view file) noexcept : rest_(content), file_(file) {
  // Editors on Windows may start UTF-8 files with a byte order mark; it is not part of the text.
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  if (rest_.starts_with(kBom)) rest_.remove_prefix(kBom.size());
}

// ---- fields ----

void split(std::string_view line, Separator separator, std::vector<std::string_view>& fields) {
  fields.clear();
  if (separator == Separator::Comma) {
    while (true) {
      const std::size_t comma = line.find(',');
      fields.push_back(trim(line.substr(0, comma)));
      if (comma == std::string_view::npos) return;
      line.remove_prefix(comma + 1);
    }
  }
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    const std::size_t start = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    if (i > start) fields.push_back(line.substr(start, i - start));
  }
}

std::vector<std::string_view> split(std::string_view line, Separator separator) {
  std::vector<std::string_view> fields;
  split(line, separator, fields);
  return fields;
}

// ---- numbers ----

namespace {

template <Number T>
std::string_view expected_kind() {
  if constexpr (std::is_floating_point_v<T>)
    return "a number";
  else if constexpr (std::is_signed_v<T>)
    return "an integer";
  else
    return "a non-negative integer";
}

template <Number T>
std::string out_of_range(std::string_view token) {
  if constexpr (std::is_floating_point_v<T>) {
    return fmt::format("out of the range of {}, got '{}'", std::is_same_v<T, float> ? "a float" : "a double", token);
  } else if constexpr (std::is_signed_v<T>) {
    return fmt::format("out of range ({} to {}), got '{}'", std::numeric_limits<T>::min(),
                       std::numeric_limits<T>::max(), token);
  } else {
    return fmt::format("out of range (at most {}), got '{}'", std::numeric_limits<T>::max(), token);
  }
}

}  // namespace

template <Number T>
T parse_field(std::string_view token, std::string_view file, std::size_t line, std::string_view field) {
  const Parsed<T> p = parse_number<T>(token);
  switch (p.problem) {
    case ParseProblem::None:
      return p.value;
    case ParseProblem::Empty:
      throw input_error(file, line, field, fmt::format("empty; expected {}", expected_kind<T>()));
    case ParseProblem::Syntax:
      throw input_error(file, line, field, fmt::format("expected {}, got '{}'", expected_kind<T>(), token));
    case ParseProblem::OutOfRange:
      throw input_error(file, line, field, out_of_range<T>(token));
  }
  throw InternalError("parse_field: unknown ParseProblem");
}

#define SIMKIT_TEXT_INSTANTIATE(T) \
  template T parse_field<T>(std::string_view, std::string_view, std::size_t, std::string_view);
SIMKIT_TEXT_INSTANTIATE(int)
SIMKIT_TEXT_INSTANTIATE(long)
SIMKIT_TEXT_INSTANTIATE(long long)
SIMKIT_TEXT_INSTANTIATE(unsigned)
SIMKIT_TEXT_INSTANTIATE(unsigned long)
SIMKIT_TEXT_INSTANTIATE(unsigned long long)
SIMKIT_TEXT_INSTANTIATE(float)
SIMKIT_TEXT_INSTANTIATE(double)
#undef SIMKIT_TEXT_INSTANTIATE

}  // namespace simkit::text
