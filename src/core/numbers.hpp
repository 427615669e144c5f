#pragma once
// One rule for every number simkit reads, wherever it comes from (a flag, a config or model file, a
// types file, a checkpoint's header): it is finite and within its bound. Readers say where the
// number came from (input_error: file, line, field; the CLI: the flag); the rule and its words are
// the same everywhere (docs/reliability.md, "Config and checkpoint fields").
#include <fmt/format.h>

#include <cmath>
#include <cstddef>
#include <string>
#include <string_view>

#include "simkit/core/error.hpp"

namespace simkit {

enum class Bound {
  Finite,       // any finite number
  NonNegative,  // finite, >= 0
  Positive,     // finite, > 0
  Fraction,     // finite, in [0, 1]
};

// "" when `v` obeys `bound`, else what is wrong: "must be finite, got nan", "must be >= 0, got -1",
// "must be > 0, got 0", "must be in [0, 1], got 2". `hint` follows the bound: "must be > 0 (a
// quiescent population is written ...), got -32".
inline std::string number_problem(double v, Bound bound, std::string_view hint = {}) {
  if (!std::isfinite(v)) return fmt::format("must be finite, got {}", v);
  switch (bound) {
    case Bound::Finite:
      return {};
    case Bound::NonNegative:
      return v >= 0 ? std::string{} : fmt::format("must be >= 0{}, got {}", hint, v);
    case Bound::Positive:
      return v > 0 ? std::string{} : fmt::format("must be > 0{}, got {}", hint, v);
    case Bound::Fraction:
      return v >= 0 && v <= 1 ? std::string{} : fmt::format("must be in [0, 1]{}, got {}", hint, v);
  }
  return {};
}

// `v`, or the UserError input_error(file, line, field, number_problem(v, bound, hint)).
inline double checked_number(double v, Bound bound, std::string_view file, std::size_t line, std::string_view field,
                             std::string_view hint = {}) {
  const std::string problem = number_problem(v, bound, hint);
  if (!problem.empty()) throw input_error(file, line, field, problem);
  return v;
}

}  // namespace simkit
