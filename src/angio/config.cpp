#include "angio/config.hpp"

#include <fmt/format.h>
#include <toml++/toml.h>

#include <cmath>
#include <limits>

#include "core/error.hpp"
#include "core/input.hpp"
#include "core/toml_util.hpp"

namespace simkit::angio {

std::optional<Form> parse_form(std::string_view text) {
  if (text == "expanded") return Form::Expanded;
  if (text == "flux") return Form::Flux;
  return std::nullopt;
}
std::optional<Precision> parse_precision(std::string_view text) {
  if (text == "fp32") return Precision::Fp32;
  if (text == "fp64") return Precision::Fp64;
  return std::nullopt;
}
std::optional<InitialTaf> parse_taf(std::string_view text) {
  if (text == "linear") return InitialTaf::Linear;
  if (text == "tumour" || text == "tumor") return InitialTaf::Tumour;
  return std::nullopt;
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
    if (!(std::isfinite(v) && v > 0)) fail(key, node, field, fmt::format("must be a positive number, got {}", v));
    return v;
  }
  double non_negative(const toml::key& key, const toml::node& node, std::string_view field) const {
    const double v = toml_util::number(node, field, file);
    if (!(std::isfinite(v) && v >= 0)) fail(key, node, field, fmt::format("must be a finite number >= 0, got {}", v));
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
  const std::string content = read_whole_file(path, cfg.source);
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
        } else {
          r.unknown(ok, on, "output", "every, series_every, checkpoint_every, quicklook");
        }
      }
    } else if (k == "parameters") {
      ModelParams& m = cfg.parameters;
      for (auto&& [pk, pn] : r.table(key, node, k)) {
        const std::string_view p = pk.str();
        const std::string field = fmt::format("parameters.{}", p);
        double* target = p == "D"       ? &m.diffusion
                         : p == "chi0"  ? &m.chemotaxis
                         : p == "alpha" ? &m.chemo_saturation
                         : p == "rho"   ? &m.haptotaxis
                         : p == "beta"  ? &m.fn_production
                         : p == "gamma" ? &m.fn_uptake
                         : p == "eta"   ? &m.taf_uptake
                         : p == "D_c"   ? &m.taf_diffusion
                                        : nullptr;
        if (!target) r.unknown(pk, pn, "parameters", "D, chi0, alpha, rho, beta, gamma, eta, D_c");
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
        } else {
          r.unknown(hk, hn, "hybrid", "replicates, psi, sprouts, max_tips, reach_x, branching");
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
