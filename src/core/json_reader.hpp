#pragma once
// Reading JSON documents that simkit writes and reads back (run.json, checkpoint headers) with one
// clear message per problem: the key's dotted path, what was expected and what was found. Unknown
// keys are errors, so that a misspelt key never passes silently. Private to the library.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <functional>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "simkit/core/error.hpp"
#include "simkit/core/names.hpp"
#include "core/input.hpp"

namespace simkit {

class JsonReader {
 public:
  explicit JsonReader(std::string source) : source_(std::move(source)) {}

  using Handler = std::function<void(const nlohmann::json&, const std::string&)>;

  // Calls the handler of every key of the object at `path`; unknown keys are errors.
  void object(const nlohmann::json& j, const std::string& path,
              const std::vector<std::pair<std::string, Handler>>& handlers) const {
    if (!j.is_object()) throw fail(path, expected("an object", j));
    for (auto item = j.begin(); item != j.end(); ++item) {
      const std::string& key = item.key();
      const nlohmann::json& value = item.value();
      const std::string where = path.empty() ? key : path + "." + key;
      const auto it = std::find_if(handlers.begin(), handlers.end(), [&](const auto& h) { return h.first == key; });
      if (it == handlers.end()) {
        std::vector<std::string> known;
        for (const auto& h : handlers) known.push_back(h.first);
        throw fail(where, fmt::format("unknown key (expected one of: {})", fmt::join(known, ", ")));
      }
      it->second(value, where);
    }
  }

  double number(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_number()) throw fail(where, expected("a number", j));
    return j.get<double>();
  }

  std::int64_t int64(const nlohmann::json& j, const std::string& where) const {
    if (j.is_number_unsigned()) {
      const auto v = j.get<std::uint64_t>();
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        throw fail(where, fmt::format("{} is too large (at most 2^63 - 1)", v));
      }
      return static_cast<std::int64_t>(v);
    }
    if (!j.is_number_integer()) throw fail(where, expected("an integer", j));
    return j.get<std::int64_t>();
  }

  std::uint64_t uint64(const nlohmann::json& j, const std::string& where) const {
    if (j.is_number_unsigned()) return j.get<std::uint64_t>();
    if (j.is_number_integer()) throw fail(where, fmt::format("must be >= 0, got {}", j.dump()));
    throw fail(where, expected("a non-negative integer", j));
  }

  int integer(const nlohmann::json& j, const std::string& where) const {
    const std::int64_t v = int64(j, where);
    if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
      throw fail(where, fmt::format("{} does not fit a 32-bit integer", v));
    }
    return static_cast<int>(v);
  }

  std::string string(const nlohmann::json& j, const std::string& where) const {
    if (!j.is_string()) throw fail(where, expected("a string", j));
    return j.get<std::string>();
  }

  // A string naming one value of an enum's name table (core/names.hpp).
  template <class E, std::size_t N>
  E choice(const nlohmann::json& j, const std::string& where, const Named<E> (&table)[N]) const {
    const std::string s = string(j, where);
    std::vector<std::string> names;
    for (const Named<E>& entry : table) {
      if (s == entry.name) return entry.value;
      names.push_back(fmt::format("\"{}\"", entry.name));
    }
    throw fail(where, fmt::format("expected one of {}, got \"{}\"", fmt::join(names, ", "), s));
  }

  UserError fail(const std::string& where, const std::string& problem) const {
    return input_error(source_, 0, where, problem);
  }

 private:
  static std::string expected(std::string_view what, const nlohmann::json& j) {
    std::string text = j.dump();
    if (text.size() > 40) text = text.substr(0, 37) + "...";
    return fmt::format("expected {}, got {} {}", what, j.type_name(), text);
  }

  std::string source_;
};

}  // namespace simkit
