#pragma once
// Reading line-based text input (CSV and whitespace-separated files): lines with their 1-based
// numbers, fields, and exact whole-token numbers. Private to the library. The engines' text formats
// are described in docs/ddm.md ("File formats", "Regions, CSV") and docs/prolif.md ("File formats");
// every one of them reads lines the way LineReader does, so that a message's line number is the one
// an editor shows.
#include <charconv>
#include <concepts>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "simkit/core/error.hpp"

namespace simkit::text {

// ---------------------------------------------------------------------------------------------
// Characters and tokens

// The C locale's white space. '\n' is included so that the same rule splits text that spans lines
// (an XML attribute, an inline data array); a line from LineReader never holds one.
constexpr bool is_space(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

constexpr std::string_view trim(std::string_view s) noexcept {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

// Nothing but white space (or nothing at all).
constexpr bool is_blank(std::string_view line) noexcept { return trim(line).empty(); }

// The first character that is not white space is '#'. A '#' after data does not start a comment:
// docs/ddm.md ("Regions, CSV") makes such a field a bad number rather than silently cut it.
constexpr bool is_comment(std::string_view line) noexcept {
  const auto t = trim(line);
  return !t.empty() && t.front() == '#';
}

constexpr bool is_blank_or_comment(std::string_view line) noexcept {
  const auto t = trim(line);
  return t.empty() || t.front() == '#';
}

// One or more of 0-9 and nothing else: no sign, point or exponent. Formats that keep integer and
// real values apart by their spelling (ddm's automatic coordinate type, docs/ddm.md "Coordinates")
// test this before parse<T>, which also takes a leading '+'.
constexpr bool is_digits(std::string_view token) noexcept {
  if (token.empty()) return false;
  for (const char c : token)
    if (c < '0' || c > '9') return false;
  return true;
}

// The token in single quotes for a message, cut to `max_chars` characters and "..." when longer, so
// that one bad field of a long line still gives a one-line message of sensible length.
std::string shown(std::string_view token, std::size_t max_chars = 40);

// ---------------------------------------------------------------------------------------------
// Lines

// One line of a file. `file` is the name used in messages (the reader's).
struct Line {
  std::string_view file;
  std::size_t number = 0;  // 1-based, counting every physical line (blank and comment lines too)
  std::string_view text;   // without its "\n" or "\r\n"

  // input_error(file, number, field, problem): "FILE:LINE: field 'FIELD': PROBLEM".
  [[nodiscard]] UserError error(std::string_view field, std::string_view problem) const;
};

// The lines of a whole file already in memory; views into `content`, which must outlive them.
// - A line ends at '\n'; a '\r' that ends a line is dropped (CRLF files). A lone '\r' elsewhere is
//   text, not a line end.
// - A last line without '\n' is a line; an empty content has no lines, "a\n" has one.
// - A UTF-8 byte order mark (EF BB BF) at the very start is skipped; it does not change numbering.
// Nothing is allocated: a line is two pointers and a number.
class LineReader {
 public:
  explicit LineReader(std::string_view content, std::string_view file = {}) noexcept;

  // The next line, or nullopt after the last. Inline, as next_data(): they run once a line of files
  // with millions of lines (docs/ddm.md, "Regions, CSV").
  std::optional<Line> next() noexcept {
    if (rest_.empty()) return std::nullopt;
    const std::size_t end = rest_.find('\n');
    std::string_view text = rest_.substr(0, end);
    rest_ = end == std::string_view::npos ? std::string_view{} : rest_.substr(end + 1);
    if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
    return Line{file_, ++number_, text};
  }

  // The next line that is neither blank nor a comment (is_blank_or_comment), or nullopt.
  std::optional<Line> next_data() noexcept {
    while (auto line = next())
      if (!is_blank_or_comment(line->text)) return line;
    return std::nullopt;
  }

  // Lines read so far (skipped ones included): once next() or next_data() has returned nullopt,
  // the number of lines in the content, which messages about the file as a whole point at.
  std::size_t lines_read() const noexcept { return number_; }
  std::string_view file() const noexcept { return file_; }

 private:
  std::string_view rest_;
  std::string_view file_;
  std::size_t number_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Fields

enum class Separator {
  // Fields between commas, each trimmed: "a, b,,c" is {"a", "b", "", "c"}. Any line, an empty one
  // too, has at least one field; empty fields are kept so that a reader can name the missing one.
  Comma,
  // Runs of white space separate fields; leading and trailing space are ignored, so there are no
  // empty fields (a blank line has none).
  Whitespace,
};

// Splits `line` into `fields` (views into `line`). `fields` is cleared first and keeps its capacity:
// a reader that passes the same vector for every line allocates only while lines grow wider.
void split(std::string_view line, Separator separator, std::vector<std::string_view>& fields);
std::vector<std::string_view> split(std::string_view line, Separator separator);

// ---------------------------------------------------------------------------------------------
// Numbers
//
// The whole token must be the number: no white space around it (split trims), nothing after it.
// - Integers: decimal digits with an optional sign; '-' only for signed types ("-0" too is refused
//   by unsigned ones). No point, exponent or hex prefix: "1e3" and "12.0" are not integers.
// - Floating point: std::from_chars' general format ("1", "-2.5", ".5", "5.", "1e-3", "1E+3"),
//   rounded to nearest. "nan", "nan(chars)", "inf" and "infinity" (any case, signed or not) are
//   read as NaN and infinities: they are numbers of the type, and a caller that refuses them checks
//   std::isfinite so as to say "must be finite, got 'nan'" rather than "not a number". Hex floats
//   are refused.
// - Every type takes one leading '+' ("+5", "+1.5", "+inf"), but not "+" alone, "++5" or "+-5".
// - A value the type cannot hold is OutOfRange: an integer above the maximum (or below the
//   minimum), a real whose magnitude overflows the type ("1e400") or is too small for even its
//   smallest subnormal ("1e-400" for a double); subnormal values themselves are returned.

// The types std::from_chars reads and the engines use.
template <class T>
concept Number = std::same_as<T, int> || std::same_as<T, long> || std::same_as<T, long long> ||
    std::same_as<T, unsigned> || std::same_as<T, unsigned long> || std::same_as<T, unsigned long long> ||
    std::same_as<T, float> || std::same_as<T, double>;

enum class ParseProblem {
  None,
  Empty,       // the token is empty
  Syntax,      // not a number of the type, or something after it
  OutOfRange,  // a number, but the type cannot hold it
};

template <Number T>
struct Parsed {
  T value{};  // the number when ok(), else 0
  ParseProblem problem = ParseProblem::None;

  bool ok() const noexcept { return problem == ParseProblem::None; }
};

// The token as a T, or why not (for readers whose messages tell the problems apart). Inline: it runs
// once a field, and a call to it costs a measurable part of reading a region file.
template <Number T>
inline Parsed<T> parse_number(std::string_view token) noexcept {
  if (token.empty()) return {T{}, ParseProblem::Empty};
  // from_chars takes no '+'; one is allowed, but not before another sign ("+-5" is no number).
  if (token.size() > 1 && token.front() == '+' && token[1] != '-' && token[1] != '+') token.remove_prefix(1);
  T value{};
  const char* const end = token.data() + token.size();
  const auto [ptr, ec] = std::from_chars(token.data(), end, value);
  // Out of range counts only when the number is the whole token: "1e400x" is a syntax error.
  if (ptr != end || (ec != std::errc{} && ec != std::errc::result_out_of_range)) return {T{}, ParseProblem::Syntax};
  if (ec == std::errc::result_out_of_range) return {T{}, ParseProblem::OutOfRange};
  return {value, ParseProblem::None};
}

// The token as a T, or nullopt.
template <Number T>
std::optional<T> parse(std::string_view token) noexcept {
  const Parsed<T> p = parse_number<T>(token);
  if (!p.ok()) return std::nullopt;
  return p.value;
}

// The token as a T, or a UserError from input_error(file, line, field, problem) that says what was
// expected: "empty; expected a number", "expected a non-negative integer, got 'x'", "out of range
// (at most 4294967295), got '5000000000'", "out of the range of a double, got '1e400'". NaN and
// infinities are returned, as by parse<T>.
template <Number T>
T parse_field(std::string_view token, std::string_view file, std::size_t line, std::string_view field);

template <Number T>
T parse_field(std::string_view token, const Line& line, std::string_view field) {
  return parse_field<T>(token, line.file, line.number, field);
}

}  // namespace simkit::text
