#pragma once
// ddm: Data Distribution Management matching for HLA (IEEE 1516): every intersecting pair of
// d-dimensional subscription and update regions (docs/ddm.md). Regions are structure-of-arrays;
// results are index pairs (positions in the two sets), counts, or per-region counts. Coordinates
// are uint32, uint64 or double and are never converted between them.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "simkit/core/backend.hpp"
#include "simkit/core/error.hpp"
#include "simkit/core/names.hpp"

namespace simkit::ddm {

constexpr int kMaxDims = 8;

// When two ranges [lower, upper] overlap (docs/ddm.md):
//   Ieee1516: a.lower == b.lower or (a.lower < b.upper and b.lower < a.upper)  (half-open, IEEE 1516)
//   HalfOpen: a.lower < b.upper and b.lower < a.upper
//   Closed:   a.lower <= b.upper and b.lower <= a.upper                       (HLA 1.3 / CERTI)
// Two regions intersect when their ranges overlap in every dimension.
enum class Rule { Ieee1516, HalfOpen, Closed };
enum class Coords { U32, U64, F64 };
enum class Algorithm { Auto, BruteForce, Grid, Sbm, IntervalTree, Parallel, BitMatrix, Gpu };
inline constexpr Named<Rule> kRuleNames[] = {
    {Rule::Ieee1516, "ieee1516"}, {Rule::HalfOpen, "half-open"}, {Rule::Closed, "closed"}};
inline constexpr Named<Coords> kCoordsNames[] = {{Coords::U32, "u32"}, {Coords::U64, "u64"}, {Coords::F64, "f64"}};
inline constexpr Named<Algorithm> kAlgorithmNames[] = {{Algorithm::Auto, "auto"},
                                                       {Algorithm::BruteForce, "brute-force"},
                                                       {Algorithm::Grid, "grid"},
                                                       {Algorithm::Sbm, "sbm"},
                                                       {Algorithm::IntervalTree, "interval-tree"},
                                                       {Algorithm::Parallel, "parallel"},
                                                       {Algorithm::BitMatrix, "bitmatrix"},
                                                       {Algorithm::Gpu, "gpu"}};

// One set of regions: ids[i] and, dimension-major, lower[d * size + i] and upper[d * size + i].
template <class T>
struct RegionSet {
  int dims = 1;
  std::vector<std::uint64_t> ids;
  std::vector<T> lower, upper;
  std::size_t size() const { return ids.size(); }
  T lo(std::size_t i, int d) const { return lower[static_cast<std::size_t>(d) * size() + i]; }
  T hi(std::size_t i, int d) const { return upper[static_cast<std::size_t>(d) * size() + i]; }
};

// A non-owning view of the same layout (what the matchers and the C API take).
template <class T>
struct RegionView {
  int dims = 1;
  std::size_t size = 0;
  const std::uint64_t* ids = nullptr;
  const T* lower = nullptr;
  const T* upper = nullptr;
  T lo(std::size_t i, int d) const { return lower[static_cast<std::size_t>(d) * size + i]; }
  T hi(std::size_t i, int d) const { return upper[static_cast<std::size_t>(d) * size + i]; }
};
template <class T>
RegionView<T> view(const RegionSet<T>& r) {
  return RegionView<T>{r.dims, r.size(), r.ids.data(), r.lower.data(), r.upper.data()};
}

// simkit::DeviceMemoryError (core/error.hpp), as ddm's callers have always named it. The GPU
// matcher checks before it allocates; the C API returns SIMKIT_DDM_OUT_OF_MEMORY.
using DeviceMemoryError = ::simkit::DeviceMemoryError;

// An intersecting pair: positions in the subscription and update sets (ids: s.ids[s], u.ids[u]).
struct Match {
  std::uint64_t s = 0, u = 0;
};

// Receives the pairs in chunks (at most MatchOptions::chunk_pairs each), from one thread at a time.
// The order is fixed for given inputs, whatever the thread count or chunk size, for the cpu
// backend's parallel matcher (sorted subscriptions, then sorted updates, each region's partners in
// the walk's order), the GPU matcher and the serial algorithms; it differs between algorithms.
// Sort the pairs if you need one order across algorithms or backends.
using MatchSink = std::function<void(const Match* pairs, std::size_t count)>;

// Receives pairs from several threads at once (match_pairs_concurrent): each call comes from one
// worker, `worker` in [0, match_workers(options)), and no two calls with the same worker overlap,
// so a callee can append to one buffer per worker without locking. Which worker gets which pairs
// depends on scheduling; every pair arrives exactly once. Chunks of at most chunk_pairs (and 65536).
using ConcurrentSink = std::function<void(int worker, const Match* pairs, std::size_t count)>;

// Receives pairs in device memory (match_pairs_on_device, cuda backend): positions in the two
// sets as 32-bit values, s[q] and u[q] for q < count, valid until the call returns; `stream` is the
// cudaStream_t (as void*; null: the legacy default stream) that wrote them, for the consumer's
// own kernels to follow on. Windows of at most chunk_pairs pairs, in the matcher's fixed order.
using DeviceSink = std::function<void(const std::uint32_t* s, const std::uint32_t* u, std::size_t count, void* stream)>;

// The engine's options are the common RunOptions (backend, device, threads; the seed is unused:
// matching draws no random numbers) plus what matching adds.
struct MatchOptions : RunOptions {
  Rule rule = Rule::Ieee1516;
  Algorithm algorithm = Algorithm::Auto;  // Auto: the backend's default (reference: brute force,
                                          // cpu: parallel, cuda: gpu)
  std::size_t chunk_pairs = 1u << 22;     // pairs per sink call (and per device chunk)
};

// What ran and how long it took (seconds of matching, after the regions are in place).
struct MatchReport {
  std::uint64_t pairs = 0;
  Algorithm algorithm = Algorithm::Auto;
  Backend backend = Backend::Auto;
  std::string device;
  double seconds = 0;         // matching, with the regions in place (cuda: pairs in device memory)
  double upload_seconds = 0;  // cuda: copying the regions to the device
  double output_seconds = 0;  // cuda: copying pairs or counts back and calling the sink
};

// The three kinds of output. Every algorithm provides all three.
template <class T>
MatchReport match_pairs(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                        const MatchSink& sink);
// The pairs delivered on several threads at once (ConcurrentSink): on the cpu backend each thread
// hands over what it found, on cuda each host thread a slice of every window it widens; the
// reference backend calls from worker 0 only.
template <class T>
MatchReport match_pairs_concurrent(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                   const ConcurrentSink& sink);
// The workers a ConcurrentSink may see with these options (1 on the reference backend, else the
// threads the cpu backend would use).
int match_workers(const MatchOptions& options);
// The pairs left in device memory for a consumer on the GPU (DeviceSink): cuda backend only (gpu
// or bitmatrix); other backends are a UserError naming the backend.
template <class T>
MatchReport match_pairs_on_device(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                  const DeviceSink& sink);
template <class T>
MatchReport count_pairs(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options);
// per_s[i]: the number of updates region s[i] intersects; per_u[j] likewise.
template <class T>
MatchReport count_per_region(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                             std::vector<std::uint64_t>& per_s, std::vector<std::uint64_t>& per_u);

// Complete matching of one set (CGAL's COMPLETE mode, for simulations with a single region set):
// every unordered pair of distinct regions i < j that intersect, once, as Match{s = i, u = j}
// (positions in `s`), in a fixed order; and their number. The rules are symmetric, so this is the
// S x S matching without the diagonal and without one of each mirrored pair.
template <class T>
MatchReport match_self_pairs(const RegionView<T>& s, const MatchOptions& options, const MatchSink& sink);
template <class T>
MatchReport count_self_pairs(const RegionView<T>& s, const MatchOptions& options);

// Checks a pair of sets: same dims (1..8), lower <= upper, no NaN, unique ids within a set.
// UserError naming the set (S or U), the region's id and the dimension.
template <class T>
void validate(const RegionView<T>& s, const RegionView<T>& u);

// Names: "ieee1516|half-open|closed", "u32|u64|f64", "brute-force|grid|sbm|interval-tree|parallel|
// bitmatrix|gpu"; parse_* throw a UserError listing the accepted values.
Rule parse_rule(std::string_view text);
std::string_view to_string(Rule rule);
Coords parse_coords(std::string_view text);
std::string_view to_string(Coords coords);
Algorithm parse_algorithm(std::string_view text);
std::string_view to_string(Algorithm algorithm);

// The backend an algorithm runs on, and the default algorithm of a backend; an impossible pair
// (e.g. gpu on cpu) is a UserError.
Algorithm resolve_algorithm(Algorithm requested, Backend resolved_backend);

}  // namespace simkit::ddm
