#pragma once
// Synthetic DDM workloads (docs/ddm.md, "Generated workloads"): N regions of equal sides in the
// space [0, L]^d, split into subscriptions and updates, with overlap degree alpha. The output
// depends only on the options (the seed included), never on threads.
#include <cstdint>
#include <string_view>

#include "simkit/ddm/io.hpp"

namespace simkit::ddm {

// How alpha sets the side of the regions.
//   PerDimension: side = alpha * L / N in every dimension (the 1-D literature's definition).
//   Volume:       side = L * (alpha / N)^(1/d): the regions' volume adds up to alpha * L^d, and
//                 the expected number of pairs is about 2^(d-2) * alpha * N.
// For d = 1 both are the same.
enum class SideRule { Volume, PerDimension };
inline constexpr Named<SideRule> kSideRuleNames[] = {{SideRule::Volume, "volume"},
                                                     {SideRule::PerDimension, "per-dimension"}};

struct GenerateOptions {
  std::uint64_t n = 0;  // regions in all; S gets ceil(n / 2), U the rest
  double alpha = 1;     // overlap degree, 0 < alpha <= n
  int dims = 1;         // 1 to kMaxDims
  SideRule side = SideRule::Volume;
  bool integer = false;    // u64 coordinates: integer side (at least 1) and integer lower bounds
  bool clustered = false;  // lower bounds around kHotSpots hot spots instead of uniform
  std::uint64_t seed = 1;
  double length = 1e6;  // L, the extent of the space in every dimension
  // Entities instead of independent regions: floor(n / 2) entities, entity e owning update e (the
  // side above) and subscription e (its area of interest: `interest` x that side), both centred on
  // one point drawn uniform (or around a hot spot) so that both lie in [0, L]^d.
  bool moving = false;
  double interest = 2;  // > 0; only with `moving`
};

inline constexpr int kHotSpots = 8;
// Standard deviation of the lower bounds around their hot spot, as a fraction of L.
inline constexpr double kHotSpotSpread = 1.0 / 50.0;

// The side every region gets (before rounding for integer coordinates); with `moving`, every update.
double side_length(const GenerateOptions& options);
// The side of the subscriptions: side_length, times `interest` with `moving`.
double subscription_side_length(const GenerateOptions& options);

// The workload: Regions<std::uint64_t> with `integer`, else Regions<double>. Ids are positions
// within each set: S 0..|S|-1, U 0..|U|-1 (with `moving`, entity e's regions are S e and U e). A bad
// option is a UserError naming the field.
AnyRegions generate(const GenerateOptions& options);

SideRule parse_side_rule(std::string_view text);  // "volume" or "per-dimension"
std::string_view to_string(SideRule side);

}  // namespace simkit::ddm
