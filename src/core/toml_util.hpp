#pragma once
// Small helpers for reading TOML configs with toml++: typed values whose errors name the file,
// the line and the field (exit code 2). Include only from targets that link simkit_tomlpp.
#include <fmt/format.h>

#include <cstddef>
#include <string>
#include <string_view>

#include "core/tomlpp.hpp"
#include "simkit/core/error.hpp"

namespace simkit::toml_util {

inline std::size_t line_of(const toml::node& node) { return node.source().begin.line; }

inline std::size_t line_of(const toml::key& key, const toml::node& node) {
  const std::size_t line = key.source().begin.line;
  return line > 0 ? line : line_of(node);
}

inline const char* type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table:
      return "a table";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a floating-point number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::date:
      return "a date";
    case toml::node_type::time:
      return "a time";
    case toml::node_type::date_time:
      return "a date-time";
    default:
      return "nothing";
  }
}

// TOML integers are accepted wherever a number is expected (`phi_min = 11`).
inline double number(const toml::node& node, std::string_view field, const std::string& file) {
  if (const auto* f = node.as_floating_point()) return f->get();
  if (const auto* i = node.as_integer()) return static_cast<double>(i->get());
  throw input_error(file, line_of(node), field, fmt::format("expected a number, got {}", type_name(node)));
}

inline std::int64_t integer(const toml::node& node, std::string_view field, const std::string& file) {
  if (const auto* i = node.as_integer()) return i->get();
  throw input_error(file, line_of(node), field, fmt::format("expected an integer, got {}", type_name(node)));
}

inline std::string string(const toml::node& node, std::string_view field, const std::string& file) {
  if (const auto* s = node.as_string()) return s->get();
  throw input_error(file, line_of(node), field, fmt::format("expected a string, got {}", type_name(node)));
}

inline bool boolean(const toml::node& node, std::string_view field, const std::string& file) {
  if (const auto* b = node.as_boolean()) return b->get();
  throw input_error(file, line_of(node), field, fmt::format("expected true or false, got {}", type_name(node)));
}

}  // namespace simkit::toml_util
