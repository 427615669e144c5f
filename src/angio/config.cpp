#include "simkit/angio/config.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

#include "simkit/core/error.hpp"
#include "core/input.hpp"
#include "core/numbers.hpp"
#include "core/toml_util.hpp"
#include "core/tomlpp.hpp"

namespace simkit::angio {

std::optional<Form> parse_form(std::string_view text) { return value_of(kFormNames, text); }
std::optional<Precision> parse_precision(std::string_view text) { return value_of(kPrecisionNames, text); }
std::optional<InitialTaf> parse_taf(std::string_view text) {
  return text == "tumor" ? std::optional(InitialTaf::Tumour) : value_of(kTafNames, text);
}

std::optional<Sensitivity> parse_sensitivity(std::string_view text) { return value_of(kSensitivityNames, text); }
const char* sensitivity_name(Sensitivity s) { return name_of(kSensitivityNames, s).data(); }

std::optional<std::uint64_t> parse_metrics_files(std::string_view text) {
  if (text == "all") return std::numeric_limits<std::uint64_t>::max();
  if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::stoull(std::string(text));
}

std::optional<AnastomosisChoice> parse_anastomosis(std::string_view text) {
  if (text == "other") return AnastomosisChoice{AnastomosisRule::Other, 10};
  if (text == "other-active") return AnastomosisChoice{AnastomosisRule::OtherActive, 10};
  if (text == "any") return AnastomosisChoice{AnastomosisRule::Any, 10};
  constexpr std::string_view prefix = "window:";
  if (text.substr(0, prefix.size()) == prefix) {
    const std::string_view digits = text.substr(prefix.size());
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string_view::npos) {
      return std::nullopt;
    }
    const int n = std::stoi(std::string(digits));
    if (n < 1) return std::nullopt;
    return AnastomosisChoice{AnastomosisRule::Window, n};
  }
  return std::nullopt;
}
std::string anastomosis_name(const HybridParams& h) {
  switch (h.anastomosis) {
    case AnastomosisRule::Other:
      return "other";
    case AnastomosisRule::OtherActive:
      return "other-active";
    case AnastomosisRule::Any:
      return "any";
    case AnastomosisRule::Window:
      return fmt::format("window:{}", h.anastomosis_window);
  }
  return "?";
}
std::optional<Uptake> parse_uptake(std::string_view text) { return value_of(kUptakeNames, text); }
const char* uptake_name(Uptake u) { return name_of(kUptakeNames, u).data(); }
std::optional<DaughterPlacement> parse_daughter(std::string_view text) { return value_of(kDaughterNames, text); }
const char* daughter_name(DaughterPlacement d) { return name_of(kDaughterNames, d).data(); }
std::optional<bool> parse_branch_always(std::string_view text) { return value_of(kBranchProbabilityNames, text); }

std::optional<MoveWeights> parse_weights(std::string_view text) { return value_of(kWeightsNames, text); }
const char* weights_name(MoveWeights w) { return name_of(kWeightsNames, w).data(); }

std::optional<std::vector<SproutPosition>> parse_sprouts_at(std::string_view text) {
  std::vector<SproutPosition> out;
  const auto number = [](std::string_view t) -> std::optional<double> {
    const std::string s(t);
    if (s.empty() || s.size() > 64) return std::nullopt;
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(s, &used);
    } catch (const std::exception&) {
      return std::nullopt;
    }
    if (used != s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  };
  std::size_t start = 0;
  while (start <= text.size()) {
    const std::size_t end = std::min(text.find(',', start), text.size());
    const std::string_view item = text.substr(start, end - start);
    const std::size_t colon = item.find(':');
    const auto y = number(item.substr(0, colon));
    if (!y) return std::nullopt;
    SproutPosition p(*y);
    if (colon != std::string_view::npos) {
      const auto z = number(item.substr(colon + 1));
      if (!z) return std::nullopt;
      p.z = *z;
    }
    out.push_back(p);
    start = end + 1;
  }
  return out;
}

namespace {

using toml_util::line_of;

struct Reader {
  std::string file;

  [[noreturn]] void fail(const toml::key& key, const toml::node& node, std::string_view field,
                         const std::string& problem) const {
    throw input_error(file, line_of(key, node), field, problem);
  }
  double positive(const toml::key& key, const toml::node& node, std::string_view field) const {
    const double v = toml_util::number(node, field, file);
    if (std::string problem = number_problem(v, Bound::Positive); !problem.empty()) fail(key, node, field, problem);
    return v;
  }
  double non_negative(const toml::key& key, const toml::node& node, std::string_view field) const {
    const double v = toml_util::number(node, field, file);
    if (std::string problem = number_problem(v, Bound::NonNegative); !problem.empty()) fail(key, node, field, problem);
    return v;
  }
  std::int64_t count(const toml::key& key, const toml::node& node, std::string_view field, std::int64_t min) const {
    const std::int64_t v = toml_util::integer(node, field, file);
    if (v < min) fail(key, node, field, fmt::format("must be an integer >= {}, got {}", min, v));
    return v;
  }
  const toml::table& table(const toml::key& key, const toml::node& node, std::string_view field) const {
    if (const auto* t = node.as_table()) return *t;
    fail(key, node, field, fmt::format("expected a table, got {}", toml_util::type_name(node)));
  }
  [[noreturn]] void unknown(const toml::key& key, const toml::node& node, std::string_view section,
                            std::string_view expected) const {
    fail(key, node, section.empty() ? std::string(key.str()) : fmt::format("{}.{}", section, key.str()),
         fmt::format("unknown key; expected one of: {}", expected));
  }
};

}  // namespace

ConfigFile read_config(const std::filesystem::path& path) {
  ConfigFile cfg;
  cfg.source = path.string();
  const Reader r{cfg.source};
  const std::string content = read_whole_file(path, cfg.source, kConfigFileBytes);
  toml::table root;
  try {
    root = toml::parse(content, std::string_view(cfg.source));
  } catch (const toml::parse_error& e) {
    throw input_error(cfg.source, e.source().begin.line, "", e.description());
  }
  const std::filesystem::path base = path.parent_path();

  for (auto&& [key, node] : root) {
    const std::string_view k = key.str();
    if (k == "model") {
      const std::string v = toml_util::string(node, k, r.file);
      if (v != "continuous" && v != "hybrid") {
        r.fail(key, node, k, fmt::format("expected \"continuous\" or \"hybrid\", got \"{}\"", v));
      }
      cfg.model = v;
    } else if (k == "form") {
      const auto f = parse_form(toml_util::string(node, k, r.file));
      if (!f) r.fail(key, node, k, "expected \"expanded\" or \"flux\"");
      cfg.form = f;
    } else if (k == "precision") {
      const auto p = parse_precision(toml_util::string(node, k, r.file));
      if (!p) r.fail(key, node, k, "expected \"fp32\" or \"fp64\"");
      cfg.precision = p;
    } else if (k == "seed") {
      cfg.seed = static_cast<std::uint64_t>(r.count(key, node, k, 0));
    } else if (k == "grid") {
      for (auto&& [gk, gn] : r.table(key, node, k)) {
        const std::string_view g = gk.str();
        if (g == "size") {
          const auto* a = gn.as_array();
          if (!a || a->size() != 3 || !a->is_homogeneous(toml::node_type::integer))
            r.fail(gk, gn, "grid.size", "expected three integers [NX, NY, NZ]");
          const std::int64_t nx = (*a)[0].value<std::int64_t>().value(), ny = (*a)[1].value<std::int64_t>().value(),
                             nz = (*a)[2].value<std::int64_t>().value();
          const std::int64_t limit = std::numeric_limits<int>::max();
          if (nx < 2 || ny < 2 || nz < 1 || nx > limit || ny > limit || nz > limit)
            r.fail(gk, gn, "grid.size", fmt::format("need NX >= 2, NY >= 2, NZ >= 1, got [{}, {}, {}]", nx, ny, nz));
          cfg.nx = static_cast<int>(nx);
          cfg.ny = static_cast<int>(ny);
          cfg.nz = static_cast<int>(nz);
        } else if (g == "h") {
          cfg.h = r.positive(gk, gn, "grid.h");
        } else {
          r.unknown(gk, gn, "grid", "size, h");
        }
      }
    } else if (k == "time") {
      for (auto&& [tk, tn] : r.table(key, node, k)) {
        const std::string_view t = tk.str();
        if (t == "dt") {
          cfg.dt = r.positive(tk, tn, "time.dt");
        } else if (t == "steps") {
          cfg.steps = r.count(tk, tn, "time.steps", 1);
        } else if (t == "t_max") {
          cfg.t_max = r.positive(tk, tn, "time.t_max");
        } else {
          r.unknown(tk, tn, "time", "dt, steps, t_max");
        }
      }
      if (cfg.steps && cfg.t_max)
        throw input_error(cfg.source, line_of(key, node), "time", "give steps or t_max, not both");
    } else if (k == "output") {
      for (auto&& [ok, on] : r.table(key, node, k)) {
        const std::string_view o = ok.str();
        if (o == "every") {
          cfg.output_every = r.count(ok, on, "output.every", 0);
        } else if (o == "series_every") {
          cfg.series_every = r.count(ok, on, "output.series_every", 0);
        } else if (o == "checkpoint_every") {
          cfg.checkpoint_every = r.count(ok, on, "output.checkpoint_every", 0);
        } else if (o == "quicklook") {
          cfg.quicklook = toml_util::boolean(on, "output.quicklook", r.file);
        } else if (o == "metrics_files") {
          cfg.metrics_files_line = line_of(ok, on);
          if (on.is_string() && toml_util::string(on, "output.metrics_files", r.file) == "all") {
            cfg.metrics_files = std::numeric_limits<std::uint64_t>::max();
          } else if (on.is_integer()) {
            cfg.metrics_files = static_cast<std::uint64_t>(r.count(ok, on, "output.metrics_files", 0));
          } else {
            r.fail(ok, on, "output.metrics_files", "expected \"all\" or a count N >= 0");
          }
        } else {
          r.unknown(ok, on, "output", "every, series_every, checkpoint_every, quicklook, metrics_files");
        }
      }
    } else if (k == "parameters") {
      ModelParams& m = cfg.parameters;
      for (auto&& [pk, pn] : r.table(key, node, k)) {
        const std::string_view p = pk.str();
        const std::string field = fmt::format("parameters.{}", p);
        if (p == "sensitivity") {
          const auto v = parse_sensitivity(toml_util::string(pn, field, r.file));
          if (!v) r.fail(pk, pn, field, "expected \"receptor\" (chi0 / (1 + alpha c)) or \"constant\" (chi0)");
          m.sensitivity = *v;
          continue;
        }
        const auto* row = std::find_if(std::begin(kModelParamFields), std::end(kModelParamFields),
                                       [&](const ModelParamField& f) { return p == f.symbol; });
        if (row == std::end(kModelParamFields)) {
          std::string known;
          for (const ModelParamField& f : kModelParamFields) known += std::string(f.symbol) + ", ";
          r.unknown(pk, pn, "parameters", known + "sensitivity");
        }
        double* target = &(m.*(row->member));
        *target = r.non_negative(pk, pn, field);
      }
    } else if (k == "initial") {
      InitialParams& ip = cfg.initial;
      for (auto&& [ik, in] : r.table(key, node, k)) {
        const std::string_view i = ik.str();
        if (i == "taf") {
          const auto taf = parse_taf(toml_util::string(in, "initial.taf", r.file));
          if (!taf) r.fail(ik, in, "initial.taf", "expected \"linear\" or \"tumour\"");
          cfg.taf = taf;
        } else if (i == "eps1") {
          ip.eps1 = r.positive(ik, in, "initial.eps1");
        } else if (i == "eps2") {
          ip.eps2 = r.positive(ik, in, "initial.eps2");
        } else if (i == "eps3") {
          ip.eps3 = r.positive(ik, in, "initial.eps3");
        } else if (i == "m") {
          ip.sine_frequency = static_cast<int>(std::min<std::int64_t>(r.count(ik, in, "initial.m", 0), 1 << 20));
        } else if (i == "file") {
          const std::filesystem::path f = toml_util::string(in, "initial.file", r.file);
          cfg.initial_file = f.is_absolute() ? f : base / f;
        } else {
          r.unknown(ik, in, "initial", "taf, eps1, eps2, eps3, m, file");
        }
      }
    } else if (k == "hybrid") {
      cfg.hybrid_given = true;
      HybridParams& h = cfg.hybrid;
      for (auto&& [hk, hn] : r.table(key, node, k)) {
        const std::string_view name = hk.str();
        const std::string field = fmt::format("hybrid.{}", name);
        if (name == "replicates") {
          const std::int64_t v = r.count(hk, hn, field, 1);
          if (v > 100000000) r.fail(hk, hn, field, fmt::format("at most 100000000, got {}", v));
          cfg.replicates = static_cast<int>(v);
        } else if (name == "psi") {
          h.psi = r.non_negative(hk, hn, field);
        } else if (name == "sprouts") {
          const std::int64_t v = r.count(hk, hn, field, 0);
          if (v > (1 << 30)) r.fail(hk, hn, field, fmt::format("at most {}, got {}", 1 << 30, v));
          h.sprouts = static_cast<int>(v);
        } else if (name == "max_tips") {
          const std::int64_t v = r.count(hk, hn, field, 1);
          if (v > (1 << 30)) r.fail(hk, hn, field, fmt::format("at most {}, got {}", 1 << 30, v));
          h.max_tips = static_cast<int>(v);
        } else if (name == "reach_x") {
          h.reach_x = r.positive(hk, hn, field);
          if (h.reach_x > 1) r.fail(hk, hn, field, fmt::format("must be in (0, 1], got {}", h.reach_x));
        } else if (name == "branching") {
          // [[c_upto, probability], ...] with increasing c_upto; the last row may use inf.
          const toml::array* rows = hn.as_array();
          if (!rows || rows->empty()) r.fail(hk, hn, field, "expected an array of [c_upto, probability] pairs");
          h.branching.clear();
          for (const toml::node& row : *rows) {
            const toml::array* pair = row.as_array();
            if (!pair || pair->size() != 2) r.fail(hk, hn, field, "expected an array of [c_upto, probability] pairs");
            BranchRule rule{toml_util::number(*pair->get(0), field, r.file),
                            toml_util::number(*pair->get(1), field, r.file)};
            if (std::isnan(rule.c_upto) || !(rule.probability >= 0 && rule.probability <= 1) ||
                (!h.branching.empty() && !(rule.c_upto > h.branching.back().c_upto))) {
              r.fail(hk, hn, field, "c thresholds must increase and probabilities lie in [0, 1]");
            }
            h.branching.push_back(rule);
          }
        } else if (name == "branch_probability") {
          const auto v = parse_branch_always(toml_util::string(hn, field, r.file));
          if (!v) r.fail(hk, hn, field, "expected \"table\" (P_n(c) from the branching table) or \"one\"");
          h.branch_always = *v;
        } else if (name == "branch_density") {
          h.branch_density = r.non_negative(hk, hn, field);
        } else if (name == "daughter") {
          const auto v = parse_daughter(toml_util::string(hn, field, r.file));
          if (!v) r.fail(hk, hn, field, "expected \"weights\" or \"uniform\"");
          h.daughter = *v;
        } else if (name == "anastomosis") {
          const auto v = parse_anastomosis(toml_util::string(hn, field, r.file));
          if (!v) r.fail(hk, hn, field, "expected \"other\", \"other-active\", \"any\" or \"window:N\" (N >= 1)");
          h.anastomosis = v->rule;
          h.anastomosis_window = v->window;
        } else if (name == "fork") {
          const std::string v = toml_util::string(hn, field, r.file);
          if (v != "fuse" && v != "pass") r.fail(hk, hn, field, "expected \"fuse\" or \"pass\"");
          h.fork_passes = v == "pass";
        } else if (name == "uptake") {
          const auto v = parse_uptake(toml_util::string(hn, field, r.file));
          if (!v) r.fail(hk, hn, field, "expected \"trail\" or \"tip\"");
          h.uptake = *v;
        } else if (name == "weights") {
          const auto v = parse_weights(toml_util::string(hn, field, r.file));
          if (!v) r.fail(hk, hn, field, "expected \"central\" (A&C) or \"one-sided\" (Angio_TDA)");
          h.weights = *v;
        } else if (name == "back_steps") {
          h.back_steps = toml_util::boolean(hn, field, r.file);
        } else if (name == "sprouts_at") {
          // [y1, y2, ...] or [[y1, z1], ...], box fractions in [0, 1]
          const toml::array* items = hn.as_array();
          if (!items || items->empty()) r.fail(hk, hn, field, "expected an array of y values or of [y, z] pairs");
          h.sprouts_at.clear();
          for (const toml::node& item : *items) {
            SproutPosition at;
            if (const toml::array* pair = item.as_array()) {
              if (pair->size() != 2) r.fail(hk, hn, field, "expected an array of y values or of [y, z] pairs");
              at = SproutPosition(toml_util::number(*pair->get(0), field, r.file),
                                  toml_util::number(*pair->get(1), field, r.file));
              if (!(at.z >= 0 && at.z <= 1)) r.fail(hk, hn, field, fmt::format("z = {}: must lie in [0, 1]", at.z));
            } else {
              at = SproutPosition(toml_util::number(item, field, r.file));
            }
            if (!(at.y >= 0 && at.y <= 1)) r.fail(hk, hn, field, fmt::format("y = {}: must lie in [0, 1]", at.y));
            h.sprouts_at.push_back(at);
          }
        } else {
          r.unknown(hk, hn, "hybrid",
                    "replicates, psi, sprouts, sprouts_at, max_tips, reach_x, branching, branch_probability, "
                    "branch_density, daughter, anastomosis, fork, uptake, weights, back_steps");
        }
      }
    } else {
      r.unknown(key, node, "",
                "model, form, precision, seed, [grid], [time], [output], [parameters], [initial], [hybrid]");
    }
  }
  return cfg;
}

}  // namespace simkit::angio
