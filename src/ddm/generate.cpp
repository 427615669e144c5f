// Synthetic workloads. Each region draws from its own counter-based stream, keyed by (seed, set,
// position), so the regions can be made in parallel and still depend only on the seed.
#include "simkit/ddm/generate.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <type_traits>

#include "simkit/core/error.hpp"
#include "simkit/core/memory.hpp"
#include "core/rng.hpp"

namespace simkit::ddm {

namespace {

// Stream tags: one stream per subscription, per update, and one for the hot spots. The
// benchmarks' workloads (bench/ddm_workload.hpp) are `generate --seed 1` (uniform, doubles, volume
// sides).
constexpr std::uint32_t kSubscriptionTag = 0;
constexpr std::uint32_t kUpdateTag = 1;
constexpr std::uint32_t kHotSpotTag = 2;

void check(const GenerateOptions& o) {
  if (o.n < 1) throw UserError("n", ": expected at least 1 region");
  if (o.dims < 1 || o.dims > kMaxDims) {
    throw UserError("dims", fmt::format(" {}: ddm takes 1 to {} dimensions", o.dims, kMaxDims));
  }
  if (!std::isfinite(o.alpha) || !(o.alpha > 0) || o.alpha > static_cast<double>(o.n)) {
    throw UserError(
        "alpha", fmt::format(" {}: expected 0 < alpha <= N ({}); a larger alpha makes regions larger "
                    "than the space",
                    o.alpha, o.n));
  }
  if (!std::isfinite(o.length) || !(o.length > 0)) throw UserError("space length: expected a positive number");
  if (o.integer && (o.length != std::floor(o.length) || o.length > 9007199254740992.0)) {
    throw UserError("space length: integer coordinates need an integer length up to 2^53");
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

template <class T>
Regions<T> make(const GenerateOptions& o) {
  const double side = side_length(o);
  const std::size_t n_s = static_cast<std::size_t>((o.n + 1) / 2), n_u = static_cast<std::size_t>(o.n / 2);
  const std::vector<double> centres = o.clustered ? hot_spots(o) : std::vector<double>{};
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
