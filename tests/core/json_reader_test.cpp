// core/json_reader.hpp: every problem of a JSON document is one UserError naming the source, the
// key's dotted path, what was expected and what was found.
#include "core/json_reader.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "support/test_support.hpp"

namespace simkit {
namespace {

using nlohmann::json;
using test::user_error;

enum class Colour { Red, Blue };
constexpr Named<Colour> kColourNames[] = {{Colour::Red, "red"}, {Colour::Blue, "blue"}};

TEST(CoreJsonReader, ReadsEveryKeyThroughItsHandler) {
  const JsonReader r("run.json");
  const json doc = json::parse(R"({"a": 1.5, "n": -3, "big": 18446744073709551615, "s": "x", "c": "blue",
                                  "sub": {"k": 7}})");
  double a = 0;
  std::int64_t n = 0;
  std::uint64_t big = 0;
  std::string s;
  Colour c = Colour::Red;
  int k = 0;
  r.object(doc, "",
           {{"a", [&](const json& j, const std::string& w) { a = r.number(j, w); }},
            {"n", [&](const json& j, const std::string& w) { n = r.int64(j, w); }},
            {"big", [&](const json& j, const std::string& w) { big = r.uint64(j, w); }},
            {"s", [&](const json& j, const std::string& w) { s = r.string(j, w); }},
            {"c", [&](const json& j, const std::string& w) {
               c = r.choice(j, w, kColourNames);
             }},
            {"sub", [&](const json& j, const std::string& w) {
               r.object(j, w, {{"k", [&](const json& v, const std::string& w2) { k = r.integer(v, w2); }}});
             }}});
  EXPECT_EQ(a, 1.5);
  EXPECT_EQ(n, -3);
  EXPECT_EQ(big, UINT64_MAX);
  EXPECT_EQ(s, "x");
  EXPECT_EQ(c, Colour::Blue);
  EXPECT_EQ(k, 7);
}

TEST(CoreJsonReader, EveryProblemNamesTheSourceAndTheDottedPath) {
  const JsonReader r("run.json");
  const auto ignore = [](const json&, const std::string&) {};
  EXPECT_EQ(user_error([&] { r.object(json::parse(R"({"sub": {"x": 1}})"), "", {{"sub", [&](const json& j, const std::string& w) {
                                                                                 r.object(j, w, {{"k", ignore}});
                                                                               }}}); }),
            "run.json: field 'sub.x': unknown key (expected one of: k)");
  EXPECT_EQ(user_error([&] { r.object(json::parse("[1]"), "top", {}); }),
            "run.json: field 'top': expected an object, got array [1]");
  EXPECT_EQ(user_error([&] { r.number(json("7"), "a"); }), "run.json: field 'a': expected a number, got string \"7\"");
  EXPECT_EQ(user_error([&] { r.int64(json(UINT64_MAX), "n"); }),
            "run.json: field 'n': 18446744073709551615 is too large (at most 2^63 - 1)");
  EXPECT_EQ(user_error([&] { r.int64(json(1.5), "n"); }), "run.json: field 'n': expected an integer, got number 1.5");
  EXPECT_EQ(user_error([&] { r.uint64(json(-2), "step"); }), "run.json: field 'step': must be >= 0, got -2");
  EXPECT_EQ(user_error([&] { r.integer(json(std::int64_t{1} << 40), "k"); }),
            "run.json: field 'k': 1099511627776 does not fit a 32-bit integer");
  EXPECT_EQ(user_error([&] { r.choice(json("green"), "c", kColourNames); }),
            "run.json: field 'c': expected one of \"red\", \"blue\", got \"green\"");
  // Long values are cut in the message: 37 characters of the value's JSON, then "...".
  EXPECT_EQ(user_error([&] { r.number(json(std::string(100, 'z')), "s"); }),
            "run.json: field 's': expected a number, got string \"" + std::string(36, 'z') + "...");
}

}  // namespace
}  // namespace simkit
