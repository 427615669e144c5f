// Synthetic workloads. Each region draws from its own counter-based stream, keyed by (seed, set,
// position), so the regions can be made in parallel and still depend only on the seed.
#include "simkit/ddm/generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "core/rng.hpp"
#include "simkit/core/error.hpp"
#include "simkit/core/memory.hpp"

namespace simkit::ddm {

namespace {

// Stream tags: one stream per subscription, per update, per entity (moving), and one for the hot
// spots. The benchmarks' workloads (bench/ddm_workload.hpp) are `generate --seed 1` (uniform,
// doubles, volume sides).
constexpr std::uint32_t kSubscriptionTag = 0;
constexpr std::uint32_t kUpdateTag = 1;
constexpr std::uint32_t kHotSpotTag = 2;
constexpr std::uint32_t kEntityTag = 3;

void check(const GenerateOptions& o) {
  if (o.n < 1) throw UserError("n", ": expected at least 1 region");
  if (o.dims < 1 || o.dims > kMaxDims) {
    throw UserError("dims", fmt::format(" {}: ddm takes 1 to {} dimensions", o.dims, kMaxDims));
  }
  if (!std::isfinite(o.alpha) || !(o.alpha > 0) || o.alpha > static_cast<double>(o.n)) {
    throw UserError("alpha", fmt::format(" {}: expected 0 < alpha <= N ({}); a larger alpha makes regions larger "
                                         "than the space",
                                         o.alpha, o.n));
  }
  if (!std::isfinite(o.length) || !(o.length > 0)) throw UserError("space length: expected a positive number");
  if (o.integer && (o.length != std::floor(o.length) || o.length > 9007199254740992.0)) {
    throw UserError("space length: integer coordinates need an integer length up to 2^53");
  }
  if (o.moving) {
    if (o.n < 2) {
      throw UserError("n", fmt::format(" {}: `moving` needs at least 2 regions (an entity is a subscription and an "
                                       "update)",
                                       o.n));
    }
    if (!std::isfinite(o.interest) || !(o.interest > 0)) {
      throw UserError("interest", fmt::format(" {}: expected a positive number (the areas of interest's side over "
                                              "the updates' side)",
                                              o.interest));
    }
    if (subscription_side_length(o) > o.length) {
      throw UserError("interest", fmt::format(" {}: the areas of interest (side {:.6g}) would be larger than the "
                                              "space (length {:.6g}); lower `interest` or `alpha`",
                                              o.interest, subscription_side_length(o), o.length));
    }
  }
}

// Hot spot centres: kHotSpots points uniform in [0, L]^d.
std::vector<double> hot_spots(const GenerateOptions& o) {
  RngStream rng(o.seed, StreamId::from64(0, kHotSpotTag));
  std::vector<double> centres(static_cast<std::size_t>(kHotSpots * o.dims));
  for (double& c : centres) c = rng.uniform() * o.length;
  return centres;
}

template <class T>
RegionSet<T> make_set(const GenerateOptions& o, std::size_t n, std::uint32_t tag, double side,
                      const std::vector<double>& centres) {
  RegionSet<T> r;
  r.dims = o.dims;
  r.ids.resize(n);
  const std::size_t nd = static_cast<std::size_t>(o.dims);
  r.lower.resize(n * nd);
  r.upper.resize(n * nd);
  const double spread = kHotSpotSpread * o.length;
  // Integer coordinates: an integer side of at least 1, lower bounds integers in [0, L - side].
  const double int_side = std::clamp(std::round(side), 1.0, o.length);
  const double room = std::is_integral_v<T> ? o.length - int_side : o.length - side;
  const std::int64_t count = static_cast<std::int64_t>(n);
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < count; ++k) {
    const std::size_t i = static_cast<std::size_t>(k);
    RngStream rng(o.seed, StreamId::from64(i, tag));
    r.ids[i] = i;
    const std::size_t spot =
        o.clustered ? std::min<std::size_t>(static_cast<std::size_t>(rng.uniform() * kHotSpots), kHotSpots - 1) : 0;
    for (std::size_t d = 0; d < nd; ++d) {
      double lower = 0;
      if (o.clustered) {
        const double centre = centres[spot * nd + d];
        lower = std::clamp(centre - 0.5 * side + spread * rng.normal(), 0.0, room);
      } else if constexpr (std::is_integral_v<T>) {
        lower = std::min(std::floor(rng.uniform() * (room + 1)), room);
      } else {
        lower = rng.uniform() * room;
      }
      if constexpr (std::is_integral_v<T>) {
        const double lo = std::clamp(std::round(lower), 0.0, room);
        r.lower[d * n + i] = static_cast<T>(lo);
        r.upper[d * n + i] = static_cast<T>(lo + int_side);
      } else {
        r.lower[d * n + i] = lower;
        r.upper[d * n + i] = lower + side;
      }
    }
  }
  return r;
}

// Entities: entity e owns update e and subscription e, centred on one point. Integer coordinates:
// integer sides (at least 1); the update's lower bound is an integer and the subscription's lies
// floor((its side - the update's side) / 2) below it, as close to centred as integers allow.
template <class T>
Regions<T> make_entities(const GenerateOptions& o, const std::vector<double>& centres) {
  constexpr bool kIntegral = std::is_integral_v<T>;
  const std::size_t n = static_cast<std::size_t>(o.n / 2), nd = static_cast<std::size_t>(o.dims);
  const double u_side = kIntegral ? std::clamp(std::round(side_length(o)), 1.0, o.length) : side_length(o);
  const double s_side =
      kIntegral ? std::clamp(std::round(subscription_side_length(o)), 1.0, o.length) : subscription_side_length(o);
  const double half = 0.5 * std::max(u_side, s_side);  // the centre stays this far from the space's ends
  const double offset = std::floor(0.5 * (s_side - u_side));
  // Integer lower bounds of the update that keep both regions inside [0, L].
  const double u_lo_min = std::max(0.0, offset), u_lo_max = std::min(o.length - u_side, o.length - s_side + offset);
  const double spread = kHotSpotSpread * o.length;
  Regions<T> out;
  for (RegionSet<T>* r : {&out.subscriptions, &out.updates}) {
    r->dims = o.dims;
    r->ids.resize(n);
    r->lower.resize(n * nd);
    r->upper.resize(n * nd);
  }
  RegionSet<T>& s = out.subscriptions;
  RegionSet<T>& u = out.updates;
  const std::int64_t count = static_cast<std::int64_t>(n);
#pragma omp parallel for schedule(static)
  for (std::int64_t k = 0; k < count; ++k) {
    const std::size_t e = static_cast<std::size_t>(k);
    RngStream rng(o.seed, StreamId::from64(e, kEntityTag));
    s.ids[e] = u.ids[e] = e;
    const std::size_t spot =
        o.clustered ? std::min<std::size_t>(static_cast<std::size_t>(rng.uniform() * kHotSpots), kHotSpots - 1) : 0;
    for (std::size_t d = 0; d < nd; ++d) {
      const std::size_t i = d * n + e;
      double centre = 0;
      if (o.clustered) {
        centre = std::clamp(centres[spot * nd + d] + spread * rng.normal(), half, o.length - half);
      } else if constexpr (!kIntegral) {
        centre = half + rng.uniform() * (o.length - 2 * half);
      }
      if constexpr (kIntegral) {
        double lo = 0;
        if (o.clustered) {
          lo = std::clamp(std::round(centre - 0.5 * u_side), u_lo_min, u_lo_max);
        } else {
          lo = std::min(u_lo_min + std::floor(rng.uniform() * (u_lo_max - u_lo_min + 1)), u_lo_max);
        }
        u.lower[i] = static_cast<T>(lo);
        u.upper[i] = static_cast<T>(lo + u_side);
        s.lower[i] = static_cast<T>(lo - offset);
        s.upper[i] = static_cast<T>(lo - offset + s_side);
      } else {
        u.lower[i] = centre - 0.5 * u_side;
        u.upper[i] = u.lower[i] + u_side;
        s.lower[i] = centre - 0.5 * s_side;
        s.upper[i] = s.lower[i] + s_side;
      }
    }
  }
  return out;
}

template <class T>
Regions<T> make(const GenerateOptions& o) {
  const double side = side_length(o);
  const std::size_t n_s = static_cast<std::size_t>((o.n + 1) / 2), n_u = static_cast<std::size_t>(o.n / 2);
  const std::vector<double> centres = o.clustered ? hot_spots(o) : std::vector<double>{};
  if (o.moving) return make_entities<T>(o, centres);
  Regions<T> out;
  out.subscriptions = make_set<T>(o, n_s, kSubscriptionTag, side, centres);
  out.updates = make_set<T>(o, n_u, kUpdateTag, side, centres);
  return out;
}

}  // namespace

double side_length(const GenerateOptions& o) {
  const double n = static_cast<double>(o.n);
  if (o.side == SideRule::PerDimension) return o.alpha * o.length / n;
  return o.length * std::pow(o.alpha / n, 1.0 / o.dims);  // for d = 1 the same, up to rounding
}

double subscription_side_length(const GenerateOptions& o) {
  return o.moving ? o.interest * side_length(o) : side_length(o);
}

AnyRegions generate(const GenerateOptions& options) {
  check(options);
  // n regions of d lower and d upper bounds (8 bytes each) and an 8-byte id, all in memory before
  // the file is written; `ddm generate --n 3e8` used to grow until the kernel killed it.
  const double bytes = static_cast<double>(options.n) * (16.0 * options.dims + 8.0);
  require_host_memory(bytes, "n", fmt::format(" {}: {} regions of {} dimensions", options.n, options.n, options.dims),
                      "generate fewer regions");
  if (options.integer) return make<std::uint64_t>(options);
  return make<double>(options);
}

SideRule parse_side_rule(std::string_view text) {
  if (const auto side = value_of(kSideRuleNames, text)) return *side;
  throw UserError("side", fmt::format(" {}: expected {}", text, names_text(kSideRuleNames)));
}
std::string_view to_string(SideRule side) { return name_of(kSideRuleNames, side); }

}  // namespace simkit::ddm
