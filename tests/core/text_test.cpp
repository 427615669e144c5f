// The text reader shared by the engines' CSV and whitespace formats (src/core/text.hpp): line numbers
// count every physical line whatever the line ends, comments, blank lines and byte order mark; fields
// split and trim in both modes; parse<T> takes exactly whole numbers of the type; messages name
// file:line and field.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/text.hpp"
#include "simkit/core/error.hpp"
#include "support/test_support.hpp"

namespace simkit::text {
namespace {

using Numbered = std::vector<std::pair<std::size_t, std::string>>;

Numbered all_lines(std::string_view content) {
  Numbered out;
  LineReader reader(content, "f.txt");
  while (const auto line = reader.next()) out.emplace_back(line->number, std::string(line->text));
  return out;
}

Numbered data_lines(std::string_view content) {
  Numbered out;
  LineReader reader(content, "f.txt");
  while (const auto line = reader.next_data()) out.emplace_back(line->number, std::string(line->text));
  return out;
}

std::size_t line_count(std::string_view content) {
  LineReader reader(content);
  while (reader.next()) {
  }
  return reader.lines_read();
}

// ---- lines ----

TEST(LineReader, CrlfAndLfAndNoFinalNewline) {
  EXPECT_EQ(all_lines("a\r\nb\nc"), (Numbered{{1, "a"}, {2, "b"}, {3, "c"}}));
  EXPECT_EQ(all_lines("a\r\nb\r\n"), (Numbered{{1, "a"}, {2, "b"}}));
  // Only the '\r' just before '\n' is a line end; a lone one stays in the text.
  EXPECT_EQ(all_lines("a\rb\r\r\n"), (Numbered{{1, "a\rb\r"}}));
  EXPECT_EQ(all_lines("last\r"), (Numbered{{1, "last"}}));
}

TEST(LineReader, CountsLinesLikeAnEditor) {
  EXPECT_EQ(line_count(""), 0u);
  EXPECT_EQ(line_count("\n"), 1u);
  EXPECT_EQ(line_count("a"), 1u);
  EXPECT_EQ(line_count("a\n"), 1u);
  EXPECT_EQ(line_count("a\n\n"), 2u);
  EXPECT_EQ(line_count("a\r\n\r\nb"), 3u);
  EXPECT_EQ(all_lines("\n\nx\n"), (Numbered{{1, ""}, {2, ""}, {3, "x"}}));
}

TEST(LineReader, DataLinesSkipBlankAndCommentLinesButKeepTheirNumbers) {
  const std::string content =
      "# header comment\r\n"
      "\r\n"
      "  \t \r\n"
      "1 2\r\n"
      "   # indented comment\n"
      "3 4 # not a comment: the field is bad\n"
      "\n"
      "5 6";
  EXPECT_EQ(data_lines(content), (Numbered{{4, "1 2"}, {6, "3 4 # not a comment: the field is bad"}, {8, "5 6"}}));
  LineReader reader(content);
  while (reader.next_data()) {
  }
  EXPECT_EQ(reader.lines_read(), 8u);
  // Trailing blank and comment lines count too: a message about the whole file points at the end.
  LineReader trailing("1 2\n# end\n\n");
  ASSERT_TRUE(trailing.next_data());
  EXPECT_FALSE(trailing.next_data());
  EXPECT_EQ(trailing.lines_read(), 3u);
}

TEST(LineReader, SkipsAUtf8ByteOrderMarkAtTheStartOnly) {
  EXPECT_EQ(all_lines("\xEF\xBB\xBFset,id\r\nS,1\n"), (Numbered{{1, "set,id"}, {2, "S,1"}}));
  EXPECT_EQ(data_lines("\xEF\xBB\xBF# comment\nx\n"), (Numbered{{2, "x"}}));
  EXPECT_EQ(all_lines("\xEF\xBB\xBF"), Numbered{});
  // Elsewhere it is text, and a partial mark at the start is text too.
  const std::string bom = "\xEF\xBB\xBF";
  EXPECT_EQ(all_lines("a\n" + bom + "b"), (Numbered{{1, "a"}, {2, bom + "b"}}));
  const std::string partial = bom.substr(0, 2) + "x";
  EXPECT_EQ(all_lines(partial), (Numbered{{1, partial}}));
}

TEST(LineReader, LinesCarryTheFileAndMakeErrorsNamingFileLineAndField) {
  LineReader reader("\n\nS,1,x\n", "regions.csv");
  const auto line = reader.next_data();
  ASSERT_TRUE(line);
  EXPECT_EQ(line->file, "regions.csv");
  EXPECT_EQ(reader.file(), "regions.csv");
  EXPECT_EQ(std::string(line->error("upper0", "'x' is not a number").what()),
            "regions.csv:3: field 'upper0': 'x' is not a number");
  EXPECT_EQ(std::string(line->error("", "header has 3 columns").what()), "regions.csv:3: header has 3 columns");
}

TEST(Text, BlankCommentAndDigits) {
  EXPECT_TRUE(is_blank(""));
  EXPECT_TRUE(is_blank(" \t\r\v\f"));
  EXPECT_FALSE(is_blank(" x "));
  EXPECT_TRUE(is_comment("  # x"));
  EXPECT_TRUE(is_comment("#"));
  EXPECT_FALSE(is_comment("x # y"));
  EXPECT_FALSE(is_comment(""));
  EXPECT_TRUE(is_blank_or_comment("\t"));
  EXPECT_TRUE(is_blank_or_comment("\t#"));
  EXPECT_FALSE(is_blank_or_comment("1"));
  EXPECT_EQ(trim(" \t a b \r\n"), "a b");
  EXPECT_TRUE(is_digits("0123456789"));
  for (const char* no : {"", "+1", "-1", "1.0", "1e3", " 1", "1 ", "0x1"}) EXPECT_FALSE(is_digits(no)) << no;
}

TEST(Text, ShownCutsLongTokens) {
  EXPECT_EQ(text::shown("abc"), "'abc'");
  EXPECT_EQ(text::shown(std::string(40, 'x')), "'" + std::string(40, 'x') + "'");
  EXPECT_EQ(text::shown(std::string(41, 'x')), "'" + std::string(40, 'x') + "...'");
  EXPECT_EQ(text::shown("abcdef", 3), "'abc...'");
}

// ---- fields ----

using Fields = std::vector<std::string_view>;

TEST(Split, CommaFieldsAreTrimmedAndEmptyOnesKept) {
  EXPECT_EQ(split(" a , b,,c ", Separator::Comma), (Fields{"a", "b", "", "c"}));
  EXPECT_EQ(split("1,", Separator::Comma), (Fields{"1", ""}));
  EXPECT_EQ(split(",3", Separator::Comma), (Fields{"", "3"}));
  EXPECT_EQ(split("", Separator::Comma), (Fields{""}));
  EXPECT_EQ(split("\tS ,\t1\r", Separator::Comma), (Fields{"S", "1"}));
  EXPECT_EQ(split("a b,c", Separator::Comma), (Fields{"a b", "c"}));  // inner spaces stay
}

TEST(Split, WhitespaceRunsSeparateAndThereAreNoEmptyFields) {
  EXPECT_EQ(split("  1000.5 \t 3  ", Separator::Whitespace), (Fields{"1000.5", "3"}));
  EXPECT_EQ(split("a\fb\vc\rd", Separator::Whitespace), (Fields{"a", "b", "c", "d"}));
  EXPECT_EQ(split("0 1\n 2\n", Separator::Whitespace), (Fields{"0", "1", "2"}));  // text across lines
  EXPECT_EQ(split("", Separator::Whitespace), Fields{});
  EXPECT_EQ(split(" \t ", Separator::Whitespace), Fields{});
  EXPECT_EQ(split("a,b c", Separator::Whitespace), (Fields{"a,b", "c"}));
}

TEST(Split, ReusedVectorIsClearedAndKeepsItsCapacity) {
  std::vector<std::string_view> fields;
  split("a,b,c,d,e,f,g,h", Separator::Comma, fields);
  ASSERT_EQ(fields.size(), 8u);
  const auto* storage = fields.data();
  const auto capacity = fields.capacity();
  split("x,y", Separator::Comma, fields);
  EXPECT_EQ(fields, (Fields{"x", "y"}));
  split("p q r", Separator::Whitespace, fields);
  EXPECT_EQ(fields, (Fields{"p", "q", "r"}));
  EXPECT_EQ(fields.data(), storage);
  EXPECT_EQ(fields.capacity(), capacity);
}

// ---- numbers ----

TEST(Parse, UnsignedIntegers) {
  EXPECT_EQ(parse<std::uint64_t>("0"), 0u);
  EXPECT_EQ(parse<std::uint64_t>("007"), 7u);
  EXPECT_EQ(parse<std::uint64_t>("+42"), 42u);
  EXPECT_EQ(parse<std::uint64_t>("18446744073709551615"), std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(parse<std::uint32_t>("4294967295"), 4294967295u);
  for (const char* bad : {"", "-1", "-0", "+", "++1", "+-1", "1.0", "1e3", "12x", "x12", " 1", "1 ", "0x10", "1,2"})
    EXPECT_EQ(parse<std::uint64_t>(bad), std::nullopt) << "'" << bad << "'";
  EXPECT_EQ(parse_number<std::uint64_t>("18446744073709551616").problem, ParseProblem::OutOfRange);
  EXPECT_EQ(parse_number<std::uint64_t>("99999999999999999999999").problem, ParseProblem::OutOfRange);
  EXPECT_EQ(parse_number<std::uint32_t>("4294967296").problem, ParseProblem::OutOfRange);
  // Out of range only when the number is the whole token.
  EXPECT_EQ(parse_number<std::uint64_t>("99999999999999999999x").problem, ParseProblem::Syntax);
  EXPECT_EQ(parse_number<std::uint64_t>("").problem, ParseProblem::Empty);
  EXPECT_EQ(parse_number<std::uint64_t>("-1").problem, ParseProblem::Syntax);
  EXPECT_EQ(parse_number<std::uint64_t>("-1").value, 0u);
}

TEST(Parse, SignedIntegers) {
  EXPECT_EQ(parse<std::int64_t>("-9223372036854775808"), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(parse<std::int64_t>("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse<int>("-0"), 0);
  EXPECT_EQ(parse<int>("+17"), 17);
  EXPECT_EQ(parse<long long>("-5"), -5);
  for (const char* bad : {"", "-", "+", "+-5", "-+5", "--5", "5-", "1.5", "1e2", "nan"})
    EXPECT_EQ(parse<int>(bad), std::nullopt) << "'" << bad << "'";
  EXPECT_EQ(parse_number<std::int64_t>("9223372036854775808").problem, ParseProblem::OutOfRange);
  EXPECT_EQ(parse_number<std::int64_t>("-9223372036854775809").problem, ParseProblem::OutOfRange);
  EXPECT_EQ(parse_number<int>("2147483648").problem, ParseProblem::OutOfRange);
}

TEST(Parse, FloatingPoint) {
  EXPECT_EQ(parse<double>("1"), 1.0);
  EXPECT_EQ(parse<double>("-2.5"), -2.5);
  EXPECT_EQ(parse<double>("+2.5"), 2.5);
  EXPECT_EQ(parse<double>(".5"), 0.5);
  EXPECT_EQ(parse<double>("5."), 5.0);
  EXPECT_EQ(parse<double>("1e-3"), 1e-3);
  EXPECT_EQ(parse<double>("1E+3"), 1000.0);
  EXPECT_EQ(parse<double>("0.1"), 0.1);  // correctly rounded
  EXPECT_EQ(parse<double>("9007199254740993"), 9007199254740992.0);
  EXPECT_EQ(parse<double>("4.9e-324"), std::numeric_limits<double>::denorm_min());  // subnormals are fine
  EXPECT_TRUE(std::signbit(*parse<double>("-0")));
  EXPECT_EQ(parse<float>("0.1"), 0.1f);
  for (const char* bad : {"", "+", "-", "++1", "+-1", "1x", "1.5.2", "e5", "1e", "0x1p3", " 1", "1 ", "1,5", "--1"})
    EXPECT_EQ(parse<double>(bad), std::nullopt) << "'" << bad << "'";
  EXPECT_EQ(parse_number<double>("1e400").problem, ParseProblem::OutOfRange);
  EXPECT_EQ(parse_number<double>("-1e400").problem, ParseProblem::OutOfRange);
  EXPECT_EQ(parse_number<double>("1e-400").problem, ParseProblem::OutOfRange);
  EXPECT_EQ(parse_number<float>("1e39").problem, ParseProblem::OutOfRange);
  EXPECT_EQ(parse_number<double>("1e400x").problem, ParseProblem::Syntax);
  EXPECT_EQ(parse_number<double>("").problem, ParseProblem::Empty);
}

TEST(Parse, NanAndInfinityAreNumbersOfFloatingTypesOnly) {
  // Documented in text.hpp: callers that refuse them check std::isfinite, to say so clearly.
  for (const char* t : {"nan", "NaN", "-nan", "+nan", "nan(1)"}) {
    const auto v = parse<double>(t);
    ASSERT_TRUE(v) << t;
    EXPECT_TRUE(std::isnan(*v)) << t;
  }
  EXPECT_EQ(parse<double>("inf"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse<double>("+Infinity"), std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse<double>("-INF"), -std::numeric_limits<double>::infinity());
  EXPECT_EQ(parse<float>("inf"), std::numeric_limits<float>::infinity());
  EXPECT_EQ(parse<double>("infinit"), std::nullopt);  // "inf" then junk
  EXPECT_EQ(parse<double>("nanx"), std::nullopt);
  EXPECT_EQ(parse<std::uint64_t>("inf"), std::nullopt);
  EXPECT_EQ(parse<int>("nan"), std::nullopt);
}

// ---- parse_field: the message names file, line and field ----

TEST(ParseField, ReturnsTheValue) {
  EXPECT_EQ(parse_field<double>("2.5", "h.txt", 3, "value"), 2.5);
  EXPECT_EQ(parse_field<std::uint64_t>("+7", "h.txt", 3, "count"), 7u);
  EXPECT_TRUE(std::isinf(parse_field<double>("inf", "h.txt", 3, "value")));
}

TEST(ParseField, MessagesNameFileLineFieldAndTheProblem) {
  EXPECT_EQ(simkit::test::user_error([] { (void)parse_field<double>("1x", "h.txt", 3, "value"); }),
            "h.txt:3: field 'value': expected a number, got '1x'");
  EXPECT_EQ(simkit::test::user_error([] { (void)parse_field<double>("", "h.txt", 3, "value"); }),
            "h.txt:3: field 'value': empty; expected a number");
  EXPECT_EQ(simkit::test::user_error([] { (void)parse_field<double>("1e400", "h.txt", 3, "value"); }),
            "h.txt:3: field 'value': out of the range of a double, got '1e400'");
  EXPECT_EQ(simkit::test::user_error([] { (void)parse_field<std::uint64_t>("-2", "t.txt", 9, "count"); }),
            "t.txt:9: field 'count': expected a non-negative integer, got '-2'");
  EXPECT_EQ(simkit::test::user_error([] { (void)parse_field<std::uint32_t>("4294967296", "t.txt", 9, "n"); }),
            "t.txt:9: field 'n': out of range (at most 4294967295), got '4294967296'");
  EXPECT_EQ(simkit::test::user_error([] { (void)parse_field<std::int64_t>("1.5", "series.csv", 2, "step"); }),
            "series.csv:2: field 'step': expected an integer, got '1.5'");
  EXPECT_EQ(simkit::test::user_error([] { (void)parse_field<int>("-2147483649", "a.txt", 1, "k"); }),
            "a.txt:1: field 'k': out of range (-2147483648 to 2147483647), got '-2147483649'");
  // Line 0: the file as a whole (input_error leaves the line out).
  EXPECT_EQ(simkit::test::user_error([] { (void)parse_field<double>("x", "a.txt", 0, "k"); }),
            "a.txt: field 'k': expected a number, got 'x'");
}

TEST(ParseField, FromALine) {
  LineReader reader("# c\r\nvalue count\r\n1 abc\r\n", "h0.txt");
  ASSERT_TRUE(reader.next_data());
  const auto line = reader.next_data();
  ASSERT_TRUE(line);
  const auto fields = split(line->text, Separator::Whitespace);
  ASSERT_EQ(fields.size(), 2u);
  EXPECT_EQ(parse_field<double>(fields[0], *line, "value"), 1.0);
  EXPECT_EQ(simkit::test::user_error([&] { (void)parse_field<std::uint64_t>(fields[1], *line, "count"); }),
            "h0.txt:3: field 'count': expected a non-negative integer, got 'abc'");
}

}  // namespace
}  // namespace simkit::text
