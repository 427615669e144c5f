#include "simkit/prolif/io.hpp"

#include <fmt/format.h>


#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/input.hpp"
#include "core/numbers.hpp"
#include "core/text.hpp"
#include "core/toml_util.hpp"
#include "core/tomlpp.hpp"

#include "simkit/core/error.hpp"

namespace simkit::prolif {

namespace {

namespace fs = std::filesystem;

constexpr double kProportionTolerance = 1e-6;

// Integers first (exact to 2^64 - 1), then integral reals such as 1e9 or 12.0 (docs/prolif.md,
// "File formats": counts).
std::uint64_t parse_count(std::string_view token, const text::Line& line) {
  const auto too_large = [&] {
    return line.error("count", fmt::format("too large (at most 2^64 - 1), got '{}'", token));
  };
  const auto integer = text::parse_number<std::uint64_t>(token);
  if (integer.ok()) return integer.value;
  if (integer.problem == text::ParseProblem::OutOfRange) throw too_large();
  const auto real = text::parse<double>(token);
  if (!real || !std::isfinite(*real) || *real < 0 || std::floor(*real) != *real)
    throw line.error("count", fmt::format("expected a non-negative integer, got '{}'", token));
  // 2^64 is exactly representable; anything at or above it does not fit.
  if (*real >= 18446744073709551616.0) throw too_large();
  return static_cast<std::uint64_t>(*real);
}

// parse<double> reads "nan" and "inf", so that they get the clearer "must be finite".
double parse_value(std::string_view token, const text::Line& line) {
  const auto value = text::parse<double>(token);
  if (!value) throw line.error("value", fmt::format("expected a number, got '{}'", token));
  if (!std::isfinite(*value)) throw line.error("value", fmt::format("must be finite, got '{}'", token));
  if (*value <= 0) throw line.error("value", fmt::format("must be > 0, got '{}'", token));
  return *value;
}

bool ends_with_csv(const fs::path& path) {
  std::string ext = path.extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return ext == ".csv";
}

// ---------------------------------------------------------------------------------------------
// Population checks shared by the TOML and types-file readers: each problem is reported at the
// line where the user can fix it.

struct PopulationLines {
  std::size_t table = 0;  // the [[population]] header, or the types-file line
  std::size_t name = 0;
  std::size_t quiescent = 0;
};

std::string number_text(double x) { return fmt::format("{}", x); }

// The fields' rules (core numbers.hpp: the same words for every number simkit reads).
void check_proportion(double p, const std::string& file, std::size_t line) {
  checked_number(p, Bound::Fraction, file, line, "proportion");
}

void check_mean(double mean, const std::string& file, std::size_t line, std::string_view hint = {}) {
  checked_number(mean, Bound::Positive, file, line, "mean", hint);
}

void check_sd(double sd, const std::string& file, std::size_t line, std::string_view hint = {}) {
  checked_number(sd, Bound::NonNegative, file, line, "sd", hint);
}

void check_population_set(const std::vector<Population>& populations, const std::vector<PopulationLines>& lines,
                          const std::string& file, bool proportions_free = false) {
  if (populations.empty()) throw input_error(file, 0, "population", "no population defined (at least one is required)");
  std::set<std::string> names;
  bool seen_quiescent = false;
  double sum = 0;
  for (std::size_t i = 0; i < populations.size(); ++i) {
    const auto& pop = populations[i];
    if (pop.quiescent) {
      if (seen_quiescent)
        throw input_error(file, lines[i].quiescent, "quiescent",
                          "more than one quiescent population (at most one is allowed)");
      seen_quiescent = true;
    }
    if (!names.insert(pop.name).second)
      throw input_error(file, lines[i].name, "name", fmt::format("duplicate population name '{}'", pop.name));
    sum += pop.proportion;
  }
  if (!proportions_free && std::abs(sum - 1.0) > kProportionTolerance)
    throw input_error(file, lines.back().table, "proportion",
                      fmt::format("proportions sum to {:.12g}, expected 1 (within 1e-6)", sum));
}

// Default names: "quiescent", and P1, P2, ... counting proliferating populations in file order.
std::string default_name(bool quiescent, int proliferating_index) {
  return quiescent ? std::string("quiescent") : fmt::format("P{}", proliferating_index);
}

// ---------------------------------------------------------------------------------------------
// TOML helpers.

using toml_util::line_of;
using toml_util::type_name;
inline double toml_number(const toml::node& node, std::string_view field, const std::string& file) {
  return toml_util::number(node, field, file);
}
inline std::string toml_string(const toml::node& node, std::string_view field, const std::string& file) {
  return toml_util::string(node, field, file);
}
inline bool toml_bool(const toml::node& node, std::string_view field, const std::string& file) {
  return toml_util::boolean(node, field, file);
}

// A value that a fit may leave free: a number (fixed), or with `freedom` a table
// { min = A, max = B } (free within the bounds; the model holds the midpoint as a placeholder).
double number_or_range(const toml::node& node, std::string_view field, const std::string& file,
                       std::optional<Range>* freedom) {
  if (freedom && node.is_table()) {
    const toml::table& t = *node.as_table();
    std::optional<double> lo, hi;
    for (auto&& [key, value] : t) {
      const std::string_view k = key.str();
      if (k == "min") {
        lo = toml_number(value, fmt::format("{}.min", field), file);
      } else if (k == "max") {
        hi = toml_number(value, fmt::format("{}.max", field), file);
      } else {
        throw input_error(file, line_of(key, value), field,
                          fmt::format("unknown key '{}' in the bounds (expected {{ min = A, max = B }})", k));
      }
    }
    if (!lo || !hi) throw input_error(file, line_of(node), field, "bounds need both min and max: { min = A, max = B }");
    if (!std::isfinite(*lo) || !std::isfinite(*hi))
      throw input_error(file, line_of(node), field, "bounds must be finite");
    if (!(*lo < *hi))
      throw input_error(file, line_of(node), field,
                        fmt::format("empty or inverted bounds: min {} is not below max {}", *lo, *hi));
    *freedom = Range{*lo, *hi};
    return 0.5 * (*lo + *hi);
  }
  if (node.is_table())
    throw input_error(file, line_of(node), field,
                      "bounds { min, max } are for `simkit prolif fit`; a simulation needs a number");
  return toml_number(node, field, file);
}

Distribution parse_distribution(const std::string& text, const std::string& file, std::size_t line) {
  // "truncated-normal" is the name the model uses; "normal" is what users write.
  if (text == "normal" || text == "truncated-normal") return Distribution::TruncatedNormal;
  if (text == "gamma") return Distribution::Gamma;
  if (text == "lognormal") return Distribution::LogNormal;
  throw input_error(file, line, "distribution",
                    fmt::format("expected 'normal', 'gamma' or 'lognormal', got '{}'", text));
}

std::optional<StartMode> start_mode_from(std::string_view text) {
  if (text == "sync") return StartMode::Sync;
  if (text == "procell-async") return StartMode::ProcellAsync;
  return std::nullopt;
}

Population read_toml_population(const toml::table& table, std::size_t table_line, int& proliferating,
                                const std::string& file, PopulationLines& lines, PopulationFreedom* freedom) {
  Population pop;
  lines.table = table_line;
  lines.name = table_line;
  lines.quiescent = table_line;
  const toml::node* mean = nullptr;
  const toml::node* sd = nullptr;
  const toml::node* distribution = nullptr;
  std::optional<std::string> name;
  std::optional<double> proportion;
  for (auto&& [key, node] : table) {
    const std::string_view k = key.str();
    if (k == "name") {
      name = toml_string(node, k, file);
      lines.name = line_of(key, node);
      if (name->empty()) throw input_error(file, lines.name, "name", "must not be empty");
    } else if (k == "proportion") {
      proportion = number_or_range(node, k, file, freedom ? &freedom->proportion : nullptr);
      if (freedom && freedom->proportion) {
        check_proportion(freedom->proportion->min, file, line_of(node));
        check_proportion(freedom->proportion->max, file, line_of(node));
      }
      check_proportion(*proportion, file, line_of(node));
    } else if (k == "quiescent") {
      pop.quiescent = toml_bool(node, k, file);
      lines.quiescent = line_of(key, node);
    } else if (k == "mean") {
      mean = &node;
    } else if (k == "sd") {
      sd = &node;
    } else if (k == "distribution") {
      distribution = &node;
    } else {
      throw input_error(file, line_of(key, node), k,
                        "unknown key in [[population]] (expected name, proportion, quiescent, mean, sd, distribution)");
    }
  }
  if (!proportion) throw input_error(file, table_line, "proportion", "missing (every [[population]] needs one)");
  pop.proportion = *proportion;
  if (pop.quiescent) {
    // A quiescent population never divides, so division-time parameters would be silently ignored.
    for (auto [node, field] :
         {std::pair{mean, "mean"}, std::pair{sd, "sd"}, std::pair{distribution, "distribution"}})
      if (node)
        throw input_error(file, line_of(*node), field, "not allowed for a quiescent population (it never divides)");
  } else {
    if (!mean) throw input_error(file, table_line, "mean", "missing (required unless quiescent = true)");
    if (!sd) throw input_error(file, table_line, "sd", "missing (required unless quiescent = true)");
    pop.mean = number_or_range(*mean, "mean", file, freedom ? &freedom->mean : nullptr);
    if (freedom && freedom->mean) check_mean(freedom->mean->min, file, line_of(*mean), " (the lower bound)");
    check_mean(pop.mean, file, line_of(*mean));
    pop.sd = number_or_range(*sd, "sd", file, freedom ? &freedom->sd : nullptr);
    if (freedom && freedom->sd) check_sd(freedom->sd->min, file, line_of(*sd), " (the lower bound)");
    check_sd(pop.sd, file, line_of(*sd));
    if (distribution)
      pop.distribution =
          parse_distribution(toml_string(*distribution, "distribution", file), file, line_of(*distribution));
    ++proliferating;
  }
  pop.name = name ? *name : default_name(pop.quiescent, proliferating);
  return pop;
}

}  // namespace

// ---------------------------------------------------------------------------------------------

InitialHistogram read_histogram(const std::filesystem::path& path) {
  const std::string file = path.string();
  const std::string content = read_whole_file(path, file);
  InitialHistogram histogram;
  histogram.source = file;

  const bool csv_by_name = ends_with_csv(path);
  bool csv = csv_by_name;
  bool first_content_line = true;
  std::size_t csv_columns = 2, value_column = 0, count_column = 1;

  text::LineReader lines(content, file);
  std::vector<std::string_view> fields;
  while (const auto line = lines.next_data()) {
    if (first_content_line) {
      first_content_line = false;
      csv = csv || line->text.find(',') != std::string_view::npos;
      if (csv) {
        text::split(line->text, text::Separator::Comma, fields);
        const bool numeric = fields.size() >= 2 && text::parse<double>(fields[0]) && text::parse<double>(fields[1]);
        if (!numeric) {
          if (fields.size() < 2) throw line->error("", "CSV header must name at least two columns (value, count)");
          csv_columns = fields.size();
          // Columns named 'value' and 'count' are found by name, in any order; a header of other
          // names must have exactly two columns (value first), so that no column is read as
          // another.
          {
            const auto named = [&](std::string_view name) {
              for (std::size_t k = 0; k < fields.size(); ++k) {
                std::string lower(text::trim(fields[k]));
                for (char& ch : lower) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
                if (lower == name) return k;
              }
              return fields.size();
            };
            value_column = named("value");
            count_column = named("count");
            if (csv_columns == 2 && (value_column == fields.size() || count_column == fields.size())) {
              value_column = 0;
              count_column = 1;
            } else if (value_column == fields.size() || count_column == fields.size()) {
              throw line->error("", fmt::format("the CSV header has {} columns; name two of them 'value' and 'count' "
                                                "(the others are ignored), or give only those two",
                                                csv_columns));
            }
          }
          continue;
        }
        if (csv_by_name) throw line->error("", "a .csv histogram needs a header line such as 'value,count'");
      }
    }
    text::split(line->text, csv ? text::Separator::Comma : text::Separator::Whitespace, fields);
    const char* layout = csv ? "value,count" : "value count";
    if (fields.empty() || fields[0].empty())
      throw line->error("value", fmt::format("missing (expected '{}')", layout));
    if (fields.size() < 2 || fields[1].empty())
      throw line->error("count", fmt::format("missing (expected '{}')", layout));
    const std::size_t allowed = csv ? csv_columns : 2;
    if (fields.size() > allowed)
      throw line->error("count", fmt::format("unexpected text after the count: '{}'", fields[allowed]));
    if (fields.size() != allowed && csv && csv_columns > 2)
      throw line->error("", fmt::format("{} columns; the header has {}", fields.size(), csv_columns));
    const double value = parse_value(fields[value_column], *line);
    const std::uint64_t count = parse_count(fields[count_column], *line);
    if (count == 0) continue;  // empty bins carry no cells; keeping them would only cost work
    histogram.values.push_back(value);
    histogram.counts.push_back(count);
  }
  const std::size_t last_line = lines.lines_read();

  if (histogram.values.empty())
    throw input_error(file, std::max<std::size_t>(last_line, 1), "count",
                      "the histogram has no cells (the file is empty or every count is 0)");
  (void)histogram.total_cells();  // rejects a total that does not fit in 64 bits
  return histogram;
}

namespace {

ModelFile read_model_toml_impl(const std::filesystem::path& path, FitSpec* spec) {
  const std::string file = path.string();
  const std::string content = read_whole_file(path, file, kConfigFileBytes);
  toml::table root;
  try {
    root = toml::parse(content, std::string_view(file));
  } catch (const toml::parse_error& e) {
    throw input_error(file, e.source().begin.line, "", e.description());
  }

  ModelFile result;
  std::size_t t_max_line = 0;
  std::size_t times_line = 0;
  const toml::array* populations = nullptr;
  std::size_t populations_line = 0;

  for (auto&& [key, node] : root) {
    const std::string_view k = key.str();
    const std::size_t line = line_of(key, node);
    if (k == "phi_min") {
      std::optional<Range> range;
      result.phi_min =
          checked_number(number_or_range(node, k, file, spec ? &range : nullptr), Bound::NonNegative, file, line, k);
      if (range) {
        checked_number(range->min, Bound::NonNegative, file, line, k, " (the lower bound)");
        spec->phi_min = range;
      }
    } else if (k == "t_max") {
      result.t_max = checked_number(toml_number(node, k, file), Bound::NonNegative, file, line, k);
      t_max_line = line;
    } else if (k == "times") {
      const auto* array = node.as_array();
      if (!array)
        throw input_error(file, line, k, fmt::format("expected an array of numbers, got {}", type_name(node)));
      if (array->empty()) throw input_error(file, line, k, "must list at least one time");
      std::vector<double> times;
      for (const auto& element : *array) {
        const std::size_t element_line = line_of(element) > 0 ? line_of(element) : line;
        const double t = checked_number(toml_number(element, k, file), Bound::NonNegative, file, element_line, k);
        if (!times.empty() && t <= times.back())
          throw input_error(
              file, element_line, k,
              fmt::format("must be strictly ascending, got {} after {}", number_text(t), number_text(times.back())));
        times.push_back(t);
      }
      result.times = std::move(times);
      times_line = line;
    } else if (k == "start") {
      const std::string text = toml_string(node, k, file);
      const auto mode = start_mode_from(text);
      if (!mode) throw input_error(file, line, k, fmt::format("expected 'sync' or 'procell-async', got '{}'", text));
      result.start = *mode;
    } else if (k == "seed") {
      const auto* integer = node.as_integer();
      if (!integer)
        throw input_error(file, line, k, fmt::format("expected a non-negative integer, got {}", type_name(node)));
      if (integer->get() < 0) throw input_error(file, line, k, fmt::format("must be >= 0, got {}", integer->get()));
      result.seed = static_cast<std::uint64_t>(integer->get());
    } else if (k == "population") {
      populations = node.as_array();
      populations_line = line;
      if (!populations || !populations->is_array_of_tables())
        throw input_error(file, line, k, "expected [[population]] tables");
    } else {
      throw input_error(file, line, k, "unknown key (expected phi_min, t_max, times, start, seed, [[population]])");
    }
  }

  if (!populations || populations->empty())
    throw input_error(file, populations_line, "population", "no [[population]] table (at least one is required)");
  std::vector<PopulationLines> lines;
  int proliferating = 0;
  bool proportions_free = false;
  for (const auto& element : *populations) {
    PopulationLines pop_lines;
    const std::size_t table_line = line_of(element) > 0 ? line_of(element) : populations_line;
    PopulationFreedom freedom;
    result.model.populations.push_back(read_toml_population(*element.as_table(), table_line, proliferating, file,
                                                            pop_lines, spec ? &freedom : nullptr));
    lines.push_back(pop_lines);
    proportions_free = proportions_free || freedom.proportion.has_value();
    if (spec) spec->free.push_back(freedom);
  }
  check_population_set(result.model.populations, lines, file, proportions_free);

  if (result.times && result.t_max && *result.t_max != result.times->back())
    throw input_error(file, t_max_line, "t_max",
                      fmt::format("is {} but the last of times (line {}) is {}; give one or make them agree",
                                  number_text(*result.t_max), times_line, number_text(result.times->back())));
  if (result.phi_min) result.model.phi_min = *result.phi_min;
  if (result.times) {
    result.model.times = *result.times;
  } else if (result.t_max) {
    result.model.times = {*result.t_max};
  }
  if (result.start) result.model.start = *result.start;
  if (spec) spec->model = result.model;
  return result;
}

}  // namespace

ModelFile read_model_toml(const std::filesystem::path& path) { return read_model_toml_impl(path, nullptr); }

FitModelFile read_fit_model_toml(const std::filesystem::path& path) {
  FitModelFile out;
  out.file = read_model_toml_impl(path, &out.spec);
  return out;
}

ModelFile read_types_file(const std::filesystem::path& path) {
  const std::string file = path.string();
  const std::string content = read_whole_file(path, file, kConfigFileBytes);
  ModelFile result;
  std::vector<PopulationLines> lines;
  int proliferating = 0;
  static constexpr const char* kFields[] = {"proportion", "mean", "sd"};

  text::LineReader reader(content, file);
  std::vector<std::string_view> tokens;
  while (const auto data = reader.next_data()) {
    const std::size_t line = data->number;
    text::split(data->text, text::Separator::Whitespace, tokens);
    if (tokens.size() < 3)
      throw input_error(file, line, kFields[tokens.size()], "missing (expected 'proportion mean sd')");
    if (tokens.size() > 3)
      throw input_error(file, line, "sd", fmt::format("unexpected text after the sd: '{}'", tokens[3]));
    double numbers[3] = {};
    for (std::size_t i = 0; i < 3; ++i) {
      // "nan" and "inf" read as numbers here; check_* below says they must be finite.
      const auto x = text::parse<double>(tokens[i]);
      if (!x) throw input_error(file, line, kFields[i], fmt::format("expected a number, got '{}'", tokens[i]));
      numbers[i] = *x;
    }
    Population pop;
    pop.proportion = numbers[0];
    check_proportion(pop.proportion, file, line);
    // cuProCell marks the quiescent population with mean = sd = -1.
    pop.quiescent = numbers[1] == -1.0 && numbers[2] == -1.0;
    if (!pop.quiescent) {
      constexpr std::string_view hint = " (a quiescent population is written 'proportion -1 -1')";
      pop.mean = numbers[1];
      check_mean(pop.mean, file, line, hint);
      pop.sd = numbers[2];
      check_sd(pop.sd, file, line, hint);
      ++proliferating;
    }
    pop.name = default_name(pop.quiescent, proliferating);
    result.model.populations.push_back(pop);
    lines.push_back({line, line, line});
  }
  const std::size_t last_line = reader.lines_read();

  if (result.model.populations.empty())
    throw input_error(file, std::max<std::size_t>(last_line, 1), "proportion",
                      "no population in the file (expected lines 'proportion mean sd')");
  check_population_set(result.model.populations, lines, file);
  return result;
}

StartMode parse_start_mode(const std::string& text, const std::string& what) {
  if (const auto mode = start_mode_from(text)) return *mode;
  throw input_error(what, 0, "", fmt::format("expected 'sync' or 'procell-async', got '{}'", text));
}

std::string to_string(StartMode mode) {
  switch (mode) {
    case StartMode::Sync:
      return "sync";
    case StartMode::ProcellAsync:
      return "procell-async";
  }
  return "unknown";
}

std::string to_string(Distribution distribution) {
  switch (distribution) {
    case Distribution::TruncatedNormal:
      return "normal";
    case Distribution::Gamma:
      return "gamma";
    case Distribution::LogNormal:
      return "lognormal";
  }
  return "unknown";
}

}  // namespace simkit::prolif
