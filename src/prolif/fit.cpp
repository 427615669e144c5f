// prolif fit: free parameters and their decoding, the batched objective, and the two optimizers
// (FST-PSO from Nobile et al. 2018's description, CMA-ES from Hansen's tutorial). docs/prolif.md,
// "Fitting", says what each choice means for the user.
#include "simkit/prolif/fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <span>

#include "core/collective.hpp"
#include "core/distributions.hpp"
#include "core/rng.hpp"
#include "prolif/optimize.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"

namespace simkit::prolif {

namespace {

constexpr double kProportionTolerance = 1e-6;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

std::uint64_t mix(std::uint64_t a, std::uint64_t b) { return splitmix64(a ^ splitmix64(b + 0x632be59bd9b4e019ULL)); }

// Populations whose proportion is free, in population order.
std::vector<int> free_proportions(const FitSpec& spec) {
  std::vector<int> out;
  for (std::size_t p = 0; p < spec.free.size(); ++p)
    if (spec.free[p].proportion) out.push_back(static_cast<int>(p));
  return out;
}

double fixed_proportion_sum(const FitSpec& spec) {
  double sum = 0;
  for (std::size_t p = 0; p < spec.model.populations.size(); ++p)
    if (!spec.free[p].proportion) sum += spec.model.populations[p].proportion;
  return sum;
}

}  // namespace

std::string to_string(Optimizer optimizer) { return optimizer == Optimizer::FstPso ? "fst-pso" : "cma-es"; }

Optimizer parse_optimizer(const std::string& text, const std::string& what) {
  if (text == "fst-pso") return Optimizer::FstPso;
  if (text == "cma-es") return Optimizer::CmaEs;
  throw UserError(what, fmt::format(": expected 'fst-pso' or 'cma-es', got '{}'", text));
}

std::vector<FreeParameter> free_parameters(const FitSpec& spec) {
  std::vector<FreeParameter> out;
  const auto& pops = spec.model.populations;
  const std::vector<int> props = free_proportions(spec);
  for (std::size_t j = 0; j + 1 < props.size(); ++j) {
    const int p = props[j];
    out.push_back({FreeParameter::Kind::Fraction, p, pops[static_cast<std::size_t>(p)].name + ".fraction", {0.0, 1.0}});
  }
  for (std::size_t p = 0; p < pops.size(); ++p)
    if (spec.free[p].mean)
      out.push_back({FreeParameter::Kind::Mean, static_cast<int>(p), pops[p].name + ".mean", *spec.free[p].mean});
  for (std::size_t p = 0; p < pops.size(); ++p)
    if (spec.free[p].sd)
      out.push_back({FreeParameter::Kind::Sd, static_cast<int>(p), pops[p].name + ".sd", *spec.free[p].sd});
  if (spec.phi_min) out.push_back({FreeParameter::Kind::PhiMin, -1, "phi_min", *spec.phi_min});
  return out;
}

Decoded decode(const FitSpec& spec, std::span<const double> x) {
  const std::vector<FreeParameter> params = free_parameters(spec);
  if (x.size() != params.size()) throw InternalError("prolif fit: point and parameters differ in length");
  Decoded d;
  d.model = spec.model;
  auto& pops = d.model.populations;
  const std::vector<int> props = free_proportions(spec);
  double left = 1.0 - fixed_proportion_sum(spec);
  for (std::size_t n = 0; n < params.size(); ++n) {
    const FreeParameter& f = params[n];
    const double v = std::clamp(x[n], f.bounds.min, f.bounds.max);
    switch (f.kind) {
      case FreeParameter::Kind::Fraction: {
        const double share = std::max(left, 0.0) * v;
        pops[static_cast<std::size_t>(f.population)].proportion = share;
        left -= share;
        break;
      }
      case FreeParameter::Kind::Mean:
        pops[static_cast<std::size_t>(f.population)].mean = v;
        break;
      case FreeParameter::Kind::Sd:
        pops[static_cast<std::size_t>(f.population)].sd = v;
        break;
      case FreeParameter::Kind::PhiMin:
        d.model.phi_min = v;
        break;
    }
  }
  if (!props.empty()) pops[static_cast<std::size_t>(props.back())].proportion = std::max(left, 0.0);
  // Rounding can leave the sum a few ulps off 1; validate() allows 1e-6.
  for (int p : props) {
    const Range& r = *spec.free[static_cast<std::size_t>(p)].proportion;
    const double q = pops[static_cast<std::size_t>(p)].proportion;
    d.violation += std::max(0.0, r.min - q) + std::max(0.0, q - r.max);
  }
  return d;
}

std::vector<double> encode(const FitSpec& spec, const Model& model) {
  const std::vector<FreeParameter> params = free_parameters(spec);
  std::vector<double> x(params.size());
  double left = 1.0 - fixed_proportion_sum(spec);
  for (std::size_t n = 0; n < params.size(); ++n) {
    const FreeParameter& f = params[n];
    double v = 0;
    switch (f.kind) {
      case FreeParameter::Kind::Fraction: {
        const double q = model.populations[static_cast<std::size_t>(f.population)].proportion;
        v = left > 0 ? q / left : 0.0;
        left -= q;
        break;
      }
      case FreeParameter::Kind::Mean:
        v = model.populations[static_cast<std::size_t>(f.population)].mean;
        break;
      case FreeParameter::Kind::Sd:
        v = model.populations[static_cast<std::size_t>(f.population)].sd;
        break;
      case FreeParameter::Kind::PhiMin:
        v = model.phi_min;
        break;
    }
    x[n] = std::clamp(v, f.bounds.min, f.bounds.max);
  }
  return x;
}

void settle_placeholders(FitSpec& spec) {
  auto& pops = spec.model.populations;
  const std::vector<int> props = free_proportions(spec);
  const double share = props.empty() ? 0.0 : std::max(0.0, 1.0 - fixed_proportion_sum(spec)) / static_cast<double>(props.size());
  for (int p : props) pops[static_cast<std::size_t>(p)].proportion = share;
  for (std::size_t p = 0; p < pops.size() && p < spec.free.size(); ++p) {
    if (spec.free[p].mean) pops[p].mean = std::clamp(pops[p].mean, spec.free[p].mean->min, spec.free[p].mean->max);
    if (spec.free[p].sd) pops[p].sd = std::clamp(pops[p].sd, spec.free[p].sd->min, spec.free[p].sd->max);
  }
  if (spec.phi_min) spec.model.phi_min = std::clamp(spec.model.phi_min, spec.phi_min->min, spec.phi_min->max);
}

void validate(const FitSpec& spec, const std::string& source) {
  if (spec.free.size() != spec.model.populations.size())
    throw InternalError("prolif fit: one freedom entry per population expected");
  const auto check_range = [&](const Range& r, const std::string& field, double lowest, bool open_low) {
    if (!std::isfinite(r.min) || !std::isfinite(r.max))
      throw UserError(source, fmt::format(": {}: bounds must be finite, got [{}, {}]", field, r.min, r.max));
    if (!(r.min < r.max))
      throw UserError(source, fmt::format(": {}: empty or inverted bounds [{}, {}] (min must be below max)", field,
                                          r.min, r.max));
    if (open_low ? !(r.min > lowest) : !(r.min >= lowest))
      throw UserError(source, fmt::format(": {}: the lower bound must be {} {}, got {}", field,
                                          open_low ? ">" : ">=", lowest, r.min));
  };
  const auto& pops = spec.model.populations;
  for (std::size_t p = 0; p < pops.size(); ++p) {
    const PopulationFreedom& f = spec.free[p];
    const std::string name = pops[p].name;
    if (pops[p].quiescent && (f.mean || f.sd))
      throw UserError(source, fmt::format(": {}: a quiescent population has no mean or sd to fit", name));
    if (f.proportion) {
      check_range(*f.proportion, name + ".proportion", 0.0, false);
      if (f.proportion->max > 1.0)
        throw UserError(source, fmt::format(": {}.proportion: the upper bound must be <= 1, got {}", name,
                                            f.proportion->max));
    }
    if (f.mean) check_range(*f.mean, name + ".mean", 0.0, true);
    if (f.sd) check_range(*f.sd, name + ".sd", 0.0, false);
  }
  if (spec.phi_min) check_range(*spec.phi_min, "phi_min", 0.0, false);
  const std::vector<int> props = free_proportions(spec);
  const double fixed = fixed_proportion_sum(spec);
  if (props.size() == 1)
    throw UserError(source, fmt::format(": {}.proportion: the only free proportion is fixed by the others (they sum "
                                        "to 1); free at least two proportions, or none",
                                        pops[static_cast<std::size_t>(props[0])].name));
  if (props.empty() && std::abs(fixed - 1.0) > kProportionTolerance)
    throw UserError(source, fmt::format(": proportion: proportions sum to {:.12g}, expected 1", fixed));
  if (!props.empty() && fixed > 1.0 + kProportionTolerance)
    throw UserError(source, fmt::format(": proportion: the fixed proportions sum to {:.12g}, above 1", fixed));
  if (free_parameters(spec).empty()) throw UserError(source, ": no free parameter (give bounds to at least one value)");
}

// ---------------------------------------------------------------------------------------------
// The objective.

namespace {
constexpr int kGenerationSlots = 64;
}

Objective::Objective(const InitialHistogram& initial, std::span<const FitTarget> targets, const Binning& binning,
                     int replicates, const RunOptions& run, const dist::Comm* comm)
    : initial_(initial),
      targets_(targets.begin(), targets.end()),
      binning_(binning),
      replicates_(replicates),
      run_(run),
      comm_(comm) {
  if (targets_.empty()) throw UserError("--target: at least one target histogram is needed");
  if (replicates_ < 1) throw UserError("--replicates: must be >= 1");
  for (const FitTarget& t : targets_) times_.push_back(t.time);
  std::sort(times_.begin(), times_.end());
  times_.erase(std::unique(times_.begin(), times_.end()), times_.end());
  for (const FitTarget& t : targets_)
    time_index_.push_back(static_cast<std::size_t>(std::lower_bound(times_.begin(), times_.end(), t.time) - times_.begin()));
  const std::vector<double> edges = binning_.edges();
  const auto bin_of = [&](double v) {
    if (v < binning_.low) return -1;
    const auto it = std::lower_bound(edges.begin(), edges.end(), v);
    return it == edges.end() ? -2 : static_cast<int>(it - edges.begin());
  };
  h0_bin_.resize(initial_.values.size() * kGenerationSlots);
  for (std::size_t i = 0; i < initial_.values.size(); ++i)
    for (int k = 0; k < kGenerationSlots; ++k)
      h0_bin_[i * kGenerationSlots + static_cast<std::size_t>(k)] = bin_of(std::ldexp(initial_.values[i], -k));
  for (const FitTarget& t : targets_) {
    std::vector<int> bins;
    for (double v : t.histogram.values) bins.push_back(bin_of(v));
    target_bin_.push_back(std::move(bins));
  }
}

std::vector<double> Objective::binned(const Result& result, std::size_t target, double phi_min) const {
  std::vector<double> out(static_cast<std::size_t>(binning_.bins), 0.0);
  const std::size_t t = time_index_[target];
  for (std::size_t i = 0; i < result.rows; ++i) {
    for (std::size_t k = 0; k < result.generations && k < kGenerationSlots; ++k) {
      const int bin = h0_bin_[i * kGenerationSlots + k];
      if (bin < 0) continue;
      std::uint64_t c = 0;
      for (std::size_t p = 0; p < result.populations; ++p) c += result.at(t, i, k, p);
      if (c == 0 || std::ldexp(initial_.values[i], -static_cast<int>(k)) < phi_min) continue;
      out[static_cast<std::size_t>(bin)] += static_cast<double>(c);
    }
  }
  return out;
}

std::vector<double> Objective::binned_target(std::size_t target, double phi_min) const {
  std::vector<double> out(static_cast<std::size_t>(binning_.bins), 0.0);
  const InitialHistogram& h = targets_[target].histogram;
  for (std::size_t i = 0; i < h.values.size(); ++i) {
    const int bin = target_bin_[target][i];
    if (bin < 0 || h.values[i] < phi_min) continue;
    out[static_cast<std::size_t>(bin)] += static_cast<double>(h.counts[i]);
  }
  return out;
}

std::vector<Objective::Value> Objective::evaluate(std::span<const Model> models, std::span<const std::uint64_t> seeds) {
  const std::size_t R = static_cast<std::size_t>(replicates_);
  if (seeds.size() != models.size() * R) throw InternalError("prolif fit: one seed per model and replicate expected");
  // Across ranks: this rank evaluates its share of the models (each with all its replicates), and
  // the values are exchanged. A model's value depends on its own simulations only, so it is the
  // same bits whichever rank computes it.
  const bool split = comm_ != nullptr && comm_->distributed();
  const dist::Range mine = split ? dist::share(models.size(), comm_->size(), comm_->rank()) : dist::Range{0, models.size()};
  std::vector<Model> batch;
  batch.reserve(mine.size() * R);
  for (std::size_t m = mine.begin; m < mine.end; ++m) {
    for (std::size_t r = 0; r < R; ++r) {
      batch.push_back(models[m]);
      batch.back().times = times_;
    }
  }
  RunOptions options = run_;
  options.progress = nullptr;
  const auto run = [&] {
    if (split) {
      for (const Model& m : models) validate(m, "model");  // every rank refuses what any rank would
      if (batch.empty()) return std::vector<Result>{};
    }
    return simulate_batch(initial_, batch, seeds.subspan(mine.begin * R, mine.size() * R), options);
  };
  const std::vector<Result> results = split ? dist::collectively(*comm_, run) : run();
  simulations_ += static_cast<std::int64_t>(seeds.size());
  std::vector<Value> values(models.size());
  for (std::size_t m = mine.begin; m < mine.end; ++m) {
    Value& v = values[m];
    for (std::size_t t = 0; t < targets_.size(); ++t) {
      std::vector<double> sim(static_cast<std::size_t>(binning_.bins), 0.0);
      for (std::size_t r = 0; r < R; ++r) {
        const std::vector<double> b = binned(results[(m - mine.begin) * R + r], t, models[m].phi_min);
        for (std::size_t i = 0; i < sim.size(); ++i) sim[i] += b[i];
      }
      const auto h = hellinger(sim, binned_target(t, models[m].phi_min));
      const double d = h ? h->normalized : 1.0;
      v.per_target.push_back(d);
      v.fitness += d;
    }
  }
  if (split) {
    // Each value as 1 + targets doubles (fitness, then per target), bit for bit, in model order.
    const std::size_t per = 1 + targets_.size();
    std::vector<double> local;
    local.reserve(mine.size() * per);
    for (std::size_t m = mine.begin; m < mine.end; ++m) {
      local.push_back(values[m].fitness);
      local.insert(local.end(), values[m].per_target.begin(), values[m].per_target.end());
    }
    const std::vector<std::byte> all = comm_->allgather(std::as_bytes(std::span<const double>(local)));
    if (all.size() != models.size() * per * sizeof(double))
      throw InternalError("prolif fit: the ranks' fitness values do not add up to the batch");
    std::vector<double> flat(models.size() * per);
    std::memcpy(flat.data(), all.data(), all.size());
    for (std::size_t m = 0; m < models.size(); ++m) {
      values[m].fitness = flat[m * per];
      values[m].per_target.assign(flat.begin() + static_cast<std::ptrdiff_t>(m * per + 1),
                                  flat.begin() + static_cast<std::ptrdiff_t>((m + 1) * per));
    }
  }
  return values;
}

// ---------------------------------------------------------------------------------------------
// The optimizers. Both minimise f over the box of the free parameters' bounds, asking for a
// generation of points at a time (one batch of simulations).

namespace {

struct Tracker {
  Minimum& result;
  const FitOptions& options;

  void consider(const std::vector<std::vector<double>>& xs, const std::vector<Scored>& fs) {
    for (std::size_t n = 0; n < xs.size(); ++n) {
      if (result.x.empty() || fs[n].fitness < result.best.fitness) {
        result.best = fs[n];
        result.x = xs[n];
      }
    }
    result.evaluations += static_cast<std::int64_t>(xs.size());
  }
  void record(int iteration, const std::vector<Scored>& fs) {
    FitIteration it;
    it.iteration = iteration;
    it.evaluations = result.evaluations;
    it.best = result.best.fitness;
    double sum = 0;
    for (const auto& f : fs) sum += f.fitness;
    it.mean = fs.empty() ? 0.0 : sum / static_cast<double>(fs.size());
    it.best_x = result.x;
    result.history.push_back(it);
    if (options.on_iteration) options.on_iteration(it);
  }
};

// How many iterations after the initial one: `iterations`, or as many whole iterations as the
// budget allows (the budget is rounded up to a whole iteration).
int iteration_count(const FitOptions& o, int per_iteration, bool initial_counts) {
  if (o.budget <= 0) return o.iterations;
  const std::int64_t generations = (o.budget + per_iteration - 1) / per_iteration;
  return static_cast<int>(std::max<std::int64_t>(initial_counts ? generations - 1 : generations, 0));
}

// --- FST-PSO (Nobile, Cazzaniga, Besozzi, Colombo, Mauri, Pasi: "Fuzzy Self-Tuning PSO: a
// settings-free algorithm for global optimization", Swarm and Evolutionary Computation 39, 2018).
// Each particle sets its own inertia, cognitive and social factors and its velocity limits, every
// iteration, by zero-order Sugeno inference on two inputs:
//  - phi, the normalised fitness increment: (|dx| / diagonal) (min(fw, f_new) - min(fw, f_old)) /
//    |fw - f_best|, in [-1, 1] (fw: the worst fitness of the initial swarm);
//  - delta, the distance from the global best, with the fuzzy sets Same / Near / Far cut at 0.2,
//    0.4 and 0.6 of the search space's diagonal.
// The rule base (the paper's Table 1): for phi Worse / Same / Better and delta Same / Near / Far,
//   inertia    Low  / Medium / High  ;  Low    / Medium / Low
//   social     High / Medium / Low   ;  Medium / Low    / Medium
//   cognitive  Medium / Medium / High;  Medium / Medium / Medium
//   L (min v)  High / Low / Low      ;  Medium / Medium / Medium
//   U (max v)  High / Medium / Medium;  Low    / Medium / Low
// with Low/Medium/High = inertia 0.3/0.5/1.0, social 1/2/3, cognitive 0.1/1.5/3, L 0/0.001/0.01
// and U 0.1/0.15/0.2 (fractions of each dimension's range). A particle that leaves the box is put
// back inside by a random fraction of its velocity. ProCell turns the minimum-velocity rule off;
// simkit does the same (L = 0), so that its fits are ProCell's.
struct Fuzzy {
  double inertia = 0.5, social = 2.0, cognitive = 2.0, max_speed = 0.25, min_speed = 0.0;
};

Fuzzy fuzzy_settings(double phi, double delta, double diagonal) {
  phi = std::clamp(phi, -1.0, 1.0);
  const double worse = std::max(phi, 0.0), better = std::max(-phi, 0.0), same_phi = 1.0 - std::abs(phi);
  const double p1 = 0.2 * diagonal, p2 = 0.4 * diagonal, p3 = 0.6 * diagonal;
  const auto ramp = [](double x, double a, double b) { return std::clamp((x - a) / (b - a), 0.0, 1.0); };
  const double same_d = 1.0 - ramp(delta, p1, p2);
  const double near_d = delta <= p2 ? ramp(delta, p1, p2) : 1.0 - ramp(delta, p2, p3);
  const double far_d = ramp(delta, p2, p3);
  const double mu[6] = {worse, same_phi, better, same_d, near_d, far_d};
  const auto infer = [&](const double z[6]) {
    double num = 0, den = 0;
    for (int r = 0; r < 6; ++r) {
      num += mu[r] * z[r];
      den += mu[r];
    }
    return den > 0 ? num / den : z[1];
  };
  constexpr double kInertia[3] = {0.3, 0.5, 1.0}, kSocial[3] = {1.0, 2.0, 3.0}, kCognitive[3] = {0.1, 1.5, 3.0},
                   kMax[3] = {0.1, 0.15, 0.2};
  enum { L = 0, M = 1, H = 2 };
  const double inertia[6] = {kInertia[L], kInertia[M], kInertia[H], kInertia[L], kInertia[M], kInertia[L]};
  const double social[6] = {kSocial[H], kSocial[M], kSocial[L], kSocial[M], kSocial[L], kSocial[M]};
  const double cognitive[6] = {kCognitive[M], kCognitive[M], kCognitive[H], kCognitive[M], kCognitive[M], kCognitive[M]};
  const double max_speed[6] = {kMax[H], kMax[M], kMax[M], kMax[L], kMax[M], kMax[L]};
  Fuzzy f;
  f.inertia = infer(inertia);
  f.social = infer(social);
  f.cognitive = infer(cognitive);
  f.max_speed = infer(max_speed);
  f.min_speed = 0.0;
  return f;
}

void run_fst_pso(const BatchFunction& eval, const std::vector<Range>& bounds, const FitOptions& o, Tracker& track,
                 RngStream& rng) {
  const std::size_t D = bounds.size(), P = static_cast<std::size_t>(o.particles);
  std::vector<double> range(D);
  double diagonal = 0;
  for (std::size_t d = 0; d < D; ++d) {
    range[d] = bounds[d].max - bounds[d].min;
    diagonal += range[d] * range[d];
  }
  diagonal = std::sqrt(diagonal);
  struct Particle {
    std::vector<double> x, v, best_x;
    double f = 0, best_f = std::numeric_limits<double>::infinity();
    double moved = 0, distance = std::numeric_limits<double>::infinity();
    Fuzzy s;
  };
  std::vector<Particle> swarm(P);
  std::vector<std::vector<double>> xs(P);
  for (std::size_t i = 0; i < P; ++i) {
    Particle& p = swarm[i];
    p.x.resize(D);
    p.v.assign(D, 0.0);
    for (std::size_t d = 0; d < D; ++d) {
      const Range& b = bounds[d];
      const double u = rng.uniform();
      p.x[d] = (o.log_init && b.min > 0) ? std::exp(std::log(b.min) + u * (std::log(b.max) - std::log(b.min)))
                                         : b.min + u * (b.max - b.min);
    }
    xs[i] = p.x;
  }
  std::vector<Scored> fs = eval(xs);
  double worst = -std::numeric_limits<double>::infinity();
  std::vector<double> g_x;
  double g_f = std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < P; ++i) {
    swarm[i].f = fs[i].fitness;
    worst = std::max(worst, fs[i].fitness);
  }
  const auto update_bests = [&] {
    for (Particle& p : swarm) {
      if (p.f < p.best_f) {
        p.best_f = p.f;
        p.best_x = p.x;
      }
      if (p.f < g_f) {
        g_f = p.f;
        g_x = p.x;
      }
    }
  };
  update_bests();
  track.consider(xs, fs);
  track.record(0, fs);
  const int iterations = iteration_count(o, static_cast<int>(P), true);
  for (int it = 1; it <= iterations; ++it) {
    for (std::size_t i = 0; i < P; ++i) {
      Particle& p = swarm[i];
      const std::vector<double> before = p.x;
      for (std::size_t d = 0; d < D; ++d) {
        const double r1 = rng.uniform(), r2 = rng.uniform();
        double v = p.s.inertia * p.v[d] + r1 * p.s.cognitive * (p.best_x[d] - p.x[d]) +
                   r2 * p.s.social * (g_x[d] - p.x[d]);
        const double vmax = p.s.max_speed * range[d], vmin = p.s.min_speed * range[d];
        v = std::clamp(v, -vmax, vmax);
        if (std::abs(v) < vmin) v = std::copysign(vmin, v);
        p.v[d] = v;
        const Range& b = bounds[d];
        double x = p.x[d] + v;
        if (x > b.max) x = b.max - rng.uniform() * v;
        if (x < b.min) x = b.min - rng.uniform() * v;
        p.x[d] = std::clamp(x, b.min, b.max);
      }
      double moved = 0, distance = 0;
      for (std::size_t d = 0; d < D; ++d) {
        moved += (p.x[d] - before[d]) * (p.x[d] - before[d]);
        distance += (p.x[d] - g_x[d]) * (p.x[d] - g_x[d]);
      }
      p.moved = std::sqrt(moved);
      p.distance = std::sqrt(distance);
      xs[i] = p.x;
    }
    fs = eval(xs);
    for (std::size_t i = 0; i < P; ++i) {
      Particle& p = swarm[i];
      const double f_old = p.f, f_new = fs[i].fitness;
      double phi = 0;
      if (p.moved > 0) {
        const double scale = std::abs(worst - g_f);
        phi = scale > 0 ? (p.moved / diagonal) * (std::min(worst, f_new) - std::min(worst, f_old)) / scale : 0.0;
      }
      p.s = fuzzy_settings(phi, p.distance, diagonal);
      p.f = f_new;
    }
    update_bests();
    track.consider(xs, fs);
    track.record(it, fs);
  }
}

// --- CMA-ES ((mu/mu_w, lambda), Hansen's "The CMA Evolution Strategy: A Tutorial", 2016), in
// coordinates scaled to [0, 1] per parameter, started at the centre with sigma 0.3. A sample
// outside the box is evaluated at its projection onto the box, plus the squared distance to it.

// Eigen-decomposition of a symmetric matrix by cyclic Jacobi rotations: a = v diag(w) v^T.
void jacobi_eigen(std::vector<double> a, std::size_t n, std::vector<double>& w, std::vector<double>& v) {
  v.assign(n * n, 0.0);
  for (std::size_t i = 0; i < n; ++i) v[i * n + i] = 1.0;
  for (int sweep = 0; sweep < 100; ++sweep) {
    double off = 0, total = 0;
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < n; ++j) {
        total += a[i * n + j] * a[i * n + j];
        if (i != j) off += a[i * n + j] * a[i * n + j];
      }
    if (off <= 1e-30 * total || off == 0) break;
    for (std::size_t p = 0; p < n; ++p) {
      for (std::size_t q = p + 1; q < n; ++q) {
        const double apq = a[p * n + q];
        if (apq == 0) continue;
        const double theta = (a[q * n + q] - a[p * n + p]) / (2 * apq);
        const double t = (theta >= 0 ? 1.0 : -1.0) / (std::abs(theta) + std::sqrt(theta * theta + 1));
        const double c = 1 / std::sqrt(t * t + 1), s = t * c;
        for (std::size_t k = 0; k < n; ++k) {
          const double akp = a[k * n + p], akq = a[k * n + q];
          a[k * n + p] = c * akp - s * akq;
          a[k * n + q] = s * akp + c * akq;
        }
        for (std::size_t k = 0; k < n; ++k) {
          const double apk = a[p * n + k], aqk = a[q * n + k];
          a[p * n + k] = c * apk - s * aqk;
          a[q * n + k] = s * apk + c * aqk;
        }
        for (std::size_t k = 0; k < n; ++k) {
          const double vkp = v[k * n + p], vkq = v[k * n + q];
          v[k * n + p] = c * vkp - s * vkq;
          v[k * n + q] = s * vkp + c * vkq;
        }
      }
    }
  }
  w.resize(n);
  for (std::size_t i = 0; i < n; ++i) w[i] = a[i * n + i];
}

void run_cma_es(const BatchFunction& eval, const std::vector<Range>& bounds, const FitOptions& o, Tracker& track,
                RngStream& rng) {
  const std::size_t N = bounds.size(), lambda = static_cast<std::size_t>(o.particles);
  const std::size_t mu = lambda / 2;
  std::vector<double> weights(mu);
  for (std::size_t i = 0; i < mu; ++i)
    weights[i] = std::log(static_cast<double>(mu) + 0.5) - std::log(static_cast<double>(i + 1));
  const double wsum = std::accumulate(weights.begin(), weights.end(), 0.0);
  double w2 = 0;
  for (double& w : weights) {
    w /= wsum;
    w2 += w * w;
  }
  const double mueff = 1.0 / w2, n = static_cast<double>(N);
  const double cc = (4 + mueff / n) / (n + 4 + 2 * mueff / n);
  const double cs = (mueff + 2) / (n + mueff + 5);
  const double c1 = 2 / ((n + 1.3) * (n + 1.3) + mueff);
  const double cmu = std::min(1 - c1, 2 * (mueff - 2 + 1 / mueff) / ((n + 2) * (n + 2) + mueff));
  const double damps = 1 + 2 * std::max(0.0, std::sqrt((mueff - 1) / (n + 1)) - 1) + cs;
  const double chi_n = std::sqrt(n) * (1 - 1 / (4 * n) + 1 / (21 * n * n));
  std::vector<double> mean(N, 0.5), pc(N, 0.0), ps(N, 0.0), C(N * N, 0.0), B, Dd;
  for (std::size_t i = 0; i < N; ++i) C[i * N + i] = 1.0;
  double sigma = 0.3;
  const auto to_params = [&](const std::vector<double>& y) {
    std::vector<double> x(N);
    for (std::size_t d = 0; d < N; ++d) {
      const Range& b = bounds[d];
      x[d] = b.min + std::clamp(y[d], 0.0, 1.0) * (b.max - b.min);
    }
    return x;
  };
  // As many evaluations as FST-PSO's initial swarm plus its iterations, or the budget.
  const int generations = o.budget > 0 ? std::max(1, iteration_count(o, static_cast<int>(lambda), false)) : o.iterations + 1;
  for (int g = 0; g < generations; ++g) {
    jacobi_eigen(C, N, Dd, B);
    for (double& e : Dd) e = std::sqrt(std::max(e, 1e-300));
    std::vector<std::vector<double>> ys(lambda, std::vector<double>(N)), xs(lambda);
    std::vector<double> penalty(lambda, 0.0);
    for (std::size_t k = 0; k < lambda; ++k) {
      std::vector<double> z(N);
      for (double& zi : z) zi = rng.normal();
      for (std::size_t i = 0; i < N; ++i) {
        double yi = 0;
        for (std::size_t j = 0; j < N; ++j) yi += B[i * N + j] * Dd[j] * z[j];
        ys[k][i] = mean[i] + sigma * yi;
        const double out = ys[k][i] - std::clamp(ys[k][i], 0.0, 1.0);
        penalty[k] += out * out;
      }
      xs[k] = to_params(ys[k]);
    }
    std::vector<Scored> fs = eval(xs);
    track.consider(xs, fs);
    track.record(g, fs);
    std::vector<std::size_t> order(lambda);
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return fs[a].fitness + penalty[a] < fs[b].fitness + penalty[b];
    });
    const std::vector<double> old = mean;
    std::fill(mean.begin(), mean.end(), 0.0);
    for (std::size_t i = 0; i < mu; ++i)
      for (std::size_t d = 0; d < N; ++d) mean[d] += weights[i] * ys[order[i]][d];
    std::vector<double> yw(N), cinv_yw(N, 0.0), tmp(N, 0.0);
    for (std::size_t d = 0; d < N; ++d) yw[d] = (mean[d] - old[d]) / sigma;
    // C^(-1/2) yw = B D^-1 B^T yw
    for (std::size_t j = 0; j < N; ++j) {
      for (std::size_t i = 0; i < N; ++i) tmp[j] += B[i * N + j] * yw[i];
      tmp[j] /= Dd[j];
    }
    for (std::size_t i = 0; i < N; ++i)
      for (std::size_t j = 0; j < N; ++j) cinv_yw[i] += B[i * N + j] * tmp[j];
    double ps_norm = 0;
    for (std::size_t d = 0; d < N; ++d) {
      ps[d] = (1 - cs) * ps[d] + std::sqrt(cs * (2 - cs) * mueff) * cinv_yw[d];
      ps_norm += ps[d] * ps[d];
    }
    ps_norm = std::sqrt(ps_norm);
    const bool hsig =
        ps_norm / std::sqrt(1 - std::pow(1 - cs, 2.0 * (g + 1))) / chi_n < 1.4 + 2 / (n + 1);
    for (std::size_t d = 0; d < N; ++d) pc[d] = (1 - cc) * pc[d] + (hsig ? std::sqrt(cc * (2 - cc) * mueff) : 0.0) * yw[d];
    for (std::size_t i = 0; i < N; ++i) {
      for (std::size_t j = 0; j < N; ++j) {
        double rank_mu = 0;
        for (std::size_t k = 0; k < mu; ++k) {
          const auto& y = ys[order[k]];
          rank_mu += weights[k] * ((y[i] - old[i]) / sigma) * ((y[j] - old[j]) / sigma);
        }
        C[i * N + j] = (1 - c1 - cmu) * C[i * N + j] +
                       c1 * (pc[i] * pc[j] + (hsig ? 0.0 : cc * (2 - cc) * C[i * N + j])) + cmu * rank_mu;
      }
    }
    sigma *= std::exp((cs / damps) * (ps_norm / chi_n - 1));
    sigma = std::min(sigma, 1.0);
  }
}

}  // namespace

Minimum minimize(const BatchFunction& f, const std::vector<Range>& bounds, const FitOptions& options) {
  if (bounds.empty()) throw UserError("fit: no free parameter");
  if (options.particles < 2) throw UserError("--particles: must be >= 2");
  if (options.optimizer == Optimizer::CmaEs && options.particles < 4)
    throw UserError("--particles: CMA-ES needs a population of at least 4");
  if (options.iterations < 0) throw UserError("--iterations: must be >= 0");
  Minimum result;
  Tracker track{result, options};
  // The optimizer's own draws (initial positions, r1 and r2, CMA-ES samples): one stream per fit.
  RngStream rng(options.seed, StreamId{0x66697431u, static_cast<std::uint32_t>(options.optimizer), 0});
  if (options.optimizer == Optimizer::FstPso) {
    run_fst_pso(f, bounds, options, track, rng);
  } else {
    run_cma_es(f, bounds, options, track, rng);
  }
  return result;
}

FitResult fit(const InitialHistogram& initial, const FitSpec& spec, std::span<const FitTarget> targets,
              const FitOptions& options) {
  validate(spec, "model");
  const auto start = std::chrono::steady_clock::now();
  FitResult result;
  result.parameters = free_parameters(spec);
  std::vector<Range> bounds;
  for (const FreeParameter& p : result.parameters) bounds.push_back(p.bounds);
  if (options.restarts < 1) throw UserError("--restarts: must be >= 1");
  Objective objective(initial, targets, options.binning, options.replicates, options.run, options.comm);
  const std::size_t R = static_cast<std::size_t>(options.replicates);
  const double worst = static_cast<double>(targets.size());
  std::int64_t evaluations = 0;
  std::uint64_t seed = options.seed;
  const BatchFunction f = [&](const std::vector<std::vector<double>>& xs) {
    std::vector<Model> models;
    std::vector<std::uint64_t> seeds;
    std::vector<double> violation;
    for (const auto& x : xs) {
      Decoded d = decode(spec, x);
      violation.push_back(d.violation);
      models.push_back(std::move(d.model));
      for (std::size_t r = 0; r < R; ++r) {
        // Common random numbers: every evaluation draws with the same seeds; otherwise each
        // evaluation has its own, a function of (seed, evaluation number, replicate).
        seeds.push_back(options.common_random_numbers ? mix(seed, r)
                                                      : mix(mix(seed, static_cast<std::uint64_t>(evaluations)), r));
      }
      ++evaluations;
    }
    const std::vector<Objective::Value> values = objective.evaluate(models, seeds);
    std::vector<Scored> out;
    for (std::size_t n = 0; n < xs.size(); ++n) {
      // Infeasible proportions: worse than any feasible point (each target's distance is <= 1).
      out.push_back({violation[n] > 0 ? worst + violation[n] : values[n].fitness, values[n].per_target});
    }
    return out;
  };
  std::vector<Minimum> runs;
  for (int k = 0; k < options.restarts; ++k) {
    // Restart 0 is the fit of `seed` itself, so that --restarts 1 is the plain fit.
    seed = k == 0 ? options.seed : mix(options.seed, 0x72657374ULL + static_cast<std::uint64_t>(k));
    FitOptions o = options;
    o.seed = seed;
    const std::int64_t before = evaluations;
    o.on_iteration = [&](const FitIteration& it) {
      FitIteration shown = it;
      shown.restart = k;
      shown.evaluations = before + it.evaluations;
      if (options.on_iteration) options.on_iteration(shown);
    };
    Minimum m = minimize(f, bounds, o);
    for (FitIteration& it : m.history) {
      it.restart = k;
      it.evaluations += before;
    }
    runs.push_back(std::move(m));
  }
  std::size_t chosen = 0;
  if (runs.size() > 1) {
    // Each restart's best point, re-simulated with seeds no evaluation used.
    const std::size_t C = static_cast<std::size_t>(std::max(options.restart_check, 1));
    std::vector<Model> models;
    std::vector<std::uint64_t> seeds;
    for (const Minimum& m : runs) {
      for (std::size_t c = 0; c < C; ++c) {
        models.push_back(decode(spec, m.x).model);
        for (std::size_t r = 0; r < R; ++r) seeds.push_back(mix(options.seed ^ 0x636865636bULL, c * R + r));
      }
    }
    const std::vector<Objective::Value> values = objective.evaluate(models, seeds);
    for (std::size_t k = 0; k < runs.size(); ++k) {
      double sum = 0;
      for (std::size_t c = 0; c < C; ++c) sum += values[k * C + c].fitness;
      result.restart_fitness.push_back(sum / static_cast<double>(C));
      if (result.restart_fitness.back() < result.restart_fitness[chosen]) chosen = k;
    }
  }
  const Minimum& m = runs[chosen];
  result.restart_chosen = static_cast<int>(chosen);
  result.best_x = m.x;
  result.fitness = m.best.fitness;
  result.fitness_per_target = m.best.detail;
  for (Minimum& r : runs) result.history.insert(result.history.end(), r.history.begin(), r.history.end());
  result.best = decode(spec, result.best_x).model;
  result.evaluations = evaluations;
  result.simulations = objective.simulations();
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

Uncertainty bootstrap(const InitialHistogram& initial, const FitSpec& spec, std::span<const FitTarget> targets,
                      const FitOptions& options, const FitResult& best, int fits, double level,
                      const std::function<void(int)>& on_fit) {
  if (fits < 2) throw UserError("--bootstrap: at least 2 refits are needed for an interval");
  if (!(level > 0 && level < 1)) throw UserError("--level: must lie in (0, 1)");
  const auto start = std::chrono::steady_clock::now();
  Uncertainty u;
  u.fits = fits;
  u.level = level;
  std::vector<double> times;
  for (const FitTarget& t : targets) times.push_back(t.time);
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  // The synthetic data: one simulation of the best model per refit (all in one batch).
  std::vector<Model> models(static_cast<std::size_t>(fits), best.best);
  std::vector<std::uint64_t> seeds;
  for (int k = 0; k < fits; ++k) {
    models[static_cast<std::size_t>(k)].times = times;
    seeds.push_back(mix(options.seed ^ 0x626f6f74ULL, static_cast<std::uint64_t>(k)));
  }
  RunOptions run = options.run;
  run.progress = nullptr;
  const std::vector<Result> sims = options.comm != nullptr
                                       ? simulate_batch_distributed(initial, models, seeds, run, *options.comm, true)
                                       : simulate_batch(initial, models, seeds, run);
  FitOptions refit = options;
  refit.on_iteration = nullptr;
  for (int k = 0; k < fits; ++k) {
    std::vector<FitTarget> synthetic;
    for (const FitTarget& t : targets) {
      const std::size_t ti =
          static_cast<std::size_t>(std::lower_bound(times.begin(), times.end(), t.time) - times.begin());
      const auto exact = exact_histogram(sims[static_cast<std::size_t>(k)], initial, ti);
      std::vector<double> p;
      double total = 0;
      for (const auto& [value, count] : exact) total += static_cast<double>(count);
      if (!(total > 0)) throw UserError("bootstrap: the best model leaves no cell at a target time");
      for (const auto& [value, count] : exact) p.push_back(static_cast<double>(count) / total);
      RngStream rng(mix(options.seed, 0x73616d70ULL + static_cast<std::uint64_t>(k)),
                    StreamId{static_cast<std::uint32_t>(k), static_cast<std::uint32_t>(ti), 0x62});
      const std::vector<std::uint64_t> drawn = sample_multinomial(t.histogram.total_cells(), p, rng);
      FitTarget s;
      s.time = t.time;
      s.histogram.source = fmt::format("bootstrap {} of {}", k + 1, t.histogram.source);
      for (std::size_t i = 0; i < exact.size(); ++i) {
        if (drawn[i] == 0) continue;
        s.histogram.values.push_back(exact[i].first);
        s.histogram.counts.push_back(drawn[i]);
      }
      synthetic.push_back(std::move(s));
    }
    refit.seed = mix(options.seed, 0x7265666974ULL + static_cast<std::uint64_t>(k));
    const FitResult r = fit(initial, spec, synthetic, refit);
    u.points.push_back(r.best_x);
    u.fitness.push_back(r.fitness);
    if (on_fit) on_fit(k + 1);
  }
  const double lo_q = 100.0 * (1.0 - level) / 2.0, hi_q = 100.0 - lo_q;
  const auto interval = [&](const std::string& name, double best_value, const std::vector<double>& v) {
    ParameterInterval pi;
    pi.name = name;
    pi.best = best_value;
    pi.low = percentile(v, lo_q);
    pi.high = percentile(v, hi_q);
    double sum = 0;
    for (double x : v) sum += x;
    pi.mean = sum / static_cast<double>(v.size());
    double ss = 0;
    for (double x : v) ss += (x - pi.mean) * (x - pi.mean);
    pi.sd = std::sqrt(ss / static_cast<double>(v.size() - 1));
    return pi;
  };
  for (std::size_t n = 0; n < best.parameters.size(); ++n) {
    std::vector<double> v;
    for (const auto& x : u.points) v.push_back(x[n]);
    u.parameters.push_back(interval(best.parameters[n].name, best.best_x[n], v));
  }
  for (std::size_t p = 0; p < best.best.populations.size(); ++p) {
    std::vector<double> v;
    for (const auto& x : u.points) v.push_back(decode(spec, x).model.populations[p].proportion);
    u.proportions.push_back(
        interval(best.best.populations[p].name + ".proportion", best.best.populations[p].proportion, v));
  }
  u.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return u;
}

}  // namespace simkit::prolif
