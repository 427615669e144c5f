#pragma once
// One name table per enum: parsing, printing, error messages and a front end's list of accepted
// values all read the same table, so they cannot drift apart (docs/architecture.md, "Names").
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace simkit {

template <class E>
struct Named {
  E value;
  std::string_view name;
};

// The name of `value` in `table` ("" when the table lacks it).
template <class Table, class E>
constexpr std::string_view name_of(const Table& table, E value) {
  for (const auto& row : table)
    if (row.value == value) return row.name;
  return {};
}

// The value named `name`, if any.
template <class Table>
constexpr auto value_of(const Table& table, std::string_view name) -> std::optional<decltype(std::begin(table)->value)> {
  for (const auto& row : table)
    if (row.name == name) return row.value;
  return std::nullopt;
}

// The names in table order, e.g. for a command line's list of accepted values.
template <class Table>
std::vector<std::string> names_of(const Table& table) {
  std::vector<std::string> out;
  for (const auto& row : table) out.emplace_back(row.name);
  return out;
}

// "a, b or c", for messages that say what was expected.
template <class Table>
std::string names_text(const Table& table) {
  std::string out;
  const auto count = static_cast<std::size_t>(std::size(table));
  std::size_t k = 0;
  for (const auto& row : table) {
    if (k > 0) out += k + 1 == count ? " or " : ", ";
    out += row.name;
    ++k;
  }
  return out;
}

}  // namespace simkit
