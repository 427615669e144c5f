// ddm matching by parts and across ranks (distributed.hpp, docs/scale-out.md "ddm across ranks").
#include "simkit/ddm/distributed.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <queue>
#include <span>
#include <utility>

#include "core/collective.hpp"
#include "core/parallel.hpp"
#include "simkit/core/dist.hpp"
#include "simkit/core/error.hpp"

namespace simkit::ddm {

namespace {

void check_part(const Part& part) {
  if (part.count == 0 || part.count > static_cast<std::uint64_t>(std::numeric_limits<int>::max()) ||
      part.index >= part.count) {
    throw UserError("part", fmt::format(" {} of {}: expected a part index below a count of 1 to {}", part.index,
                                        part.count, std::numeric_limits<int>::max()));
  }
}

// The share [begin, end) of a set as a set of its own (bounds are dimension-major: copied per dimension).
template <class T>
RegionSet<T> slice(const RegionView<T>& r, std::uint64_t begin, std::uint64_t end) {
  RegionSet<T> out;
  out.dims = r.dims;
  const std::size_t n = static_cast<std::size_t>(end - begin);
  out.ids.assign(r.ids + begin, r.ids + end);
  out.lower.resize(n * static_cast<std::size_t>(std::max(r.dims, 0)));
  out.upper.resize(out.lower.size());
  for (int d = 0; d < r.dims; ++d) {
    const std::size_t from = static_cast<std::size_t>(d) * r.size + begin, to = static_cast<std::size_t>(d) * n;
    std::copy(r.lower + from, r.lower + from + n, out.lower.begin() + static_cast<std::ptrdiff_t>(to));
    std::copy(r.upper + from, r.upper + from + n, out.upper.begin() + static_cast<std::ptrdiff_t>(to));
  }
  return out;
}

// A part's two sets: the split one cut to its share, the other whole; and how to shift the split
// set's positions back to the whole set's.
template <class T>
struct PartSets {
  Share share;
  RegionSet<T> cut;
  RegionView<T> s, u;
};

template <class T>
PartSets<T> part_sets(const RegionView<T>& s, const RegionView<T>& u, const Part& part) {
  check_part(part);
  validate(s, u);  // the whole sets: a duplicate id across two shares is an error too
  PartSets<T> p;
  p.share = share_of(s.size, u.size, part);
  p.cut = slice(p.share.subscriptions ? s : u, p.share.begin, p.share.end);
  p.s = p.share.subscriptions ? view(p.cut) : s;
  p.u = p.share.subscriptions ? u : view(p.cut);
  return p;
}

// A sink that shifts the split set's positions to the whole set's before passing the pairs on.
MatchSink shifted(const Share& share, const MatchSink& sink) {
  return [&share, &sink](const Match* pairs, std::size_t count) {
    if (share.begin == 0) {
      sink(pairs, count);
      return;
    }
    std::vector<Match> moved(pairs, pairs + count);
    for (Match& m : moved) (share.subscriptions ? m.s : m.u) += share.begin;
    sink(moved.data(), moved.size());
  };
}

bool before(const Match& a, const Match& b) { return a.s != b.s ? a.s < b.s : a.u < b.u; }

// The slowest rank's seconds (nanoseconds through an integer maximum: exact and order-free).
double slowest(const dist::Comm& comm, double seconds) {
  const auto ns = static_cast<std::int64_t>(seconds * 1e9);
  return static_cast<double>(comm.allreduce_max(ns)) * 1e-9;
}

void combine_reports(const dist::Comm& comm, MatchReport& report) {
  std::vector<std::uint64_t> pairs = {report.pairs};
  comm.allreduce_sum(pairs);
  report.pairs = pairs[0];
  report.seconds = slowest(comm, report.seconds);
  report.upload_seconds = slowest(comm, report.upload_seconds);
}

constexpr int kPairTag = 7101;

// The root's K-way merge of every rank's sorted pairs: its own from memory, the others' received
// chunk by chunk (each rank sends its chunks in order; the root asks for the next chunk of a rank
// only when the previous one is used up, so at most one chunk per rank is held).
void merge_on_root(const dist::Comm& comm, const std::vector<Match>& mine, const std::vector<std::uint64_t>& counts,
                   std::size_t chunk, std::size_t out_chunk, const MatchSink& sink) {
  const int ranks = comm.size();
  struct Source {
    std::vector<Match> buffer;
    const Match* at = nullptr;
    const Match* end = nullptr;
    std::uint64_t left = 0;  // pairs not yet received
  };
  std::vector<Source> sources(static_cast<std::size_t>(ranks));
  const auto refill = [&](int r) {
    Source& src = sources[static_cast<std::size_t>(r)];
    if (r == comm.rank()) return false;
    if (src.left == 0) return false;
    const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(src.left, chunk));
    src.buffer.resize(n);
    comm.recv(src.buffer.data(), n * sizeof(Match), r, kPairTag);
    src.left -= n;
    src.at = src.buffer.data();
    src.end = src.at + n;
    return true;
  };
  const auto cmp = [&](int a, int b) {
    return before(*sources[static_cast<std::size_t>(b)].at, *sources[static_cast<std::size_t>(a)].at);
  };
  std::priority_queue<int, std::vector<int>, decltype(cmp)> heads(cmp);
  for (int r = 0; r < ranks; ++r) {
    Source& src = sources[static_cast<std::size_t>(r)];
    if (r == comm.rank()) {
      src.at = mine.data();
      src.end = mine.data() + mine.size();
      if (!mine.empty()) heads.push(r);
    } else {
      src.left = counts[static_cast<std::size_t>(r)];
      if (refill(r)) heads.push(r);
    }
  }
  std::vector<Match> out;
  out.reserve(out_chunk);
  while (!heads.empty()) {
    const int r = heads.top();
    heads.pop();
    Source& src = sources[static_cast<std::size_t>(r)];
    out.push_back(*src.at++);
    if (out.size() == out_chunk) {
      sink(out.data(), out.size());
      out.clear();
    }
    if (src.at != src.end || refill(r)) heads.push(r);
  }
  if (!out.empty()) sink(out.data(), out.size());
}

}  // namespace

Share share_of(std::size_t subscriptions, std::size_t updates, Part part) {
  check_part(part);
  Share share;
  share.subscriptions = subscriptions > updates;
  const dist::Range range = dist::share(share.subscriptions ? subscriptions : updates, static_cast<int>(part.count),
                                        static_cast<int>(part.index));
  share.begin = range.begin;
  share.end = range.end;
  return share;
}

template <class T>
MatchReport match_pairs_part(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options, Part part,
                             const MatchSink& sink) {
  const PartSets<T> p = part_sets(s, u, part);
  return match_pairs(p.s, p.u, options, shifted(p.share, sink));
}

template <class T>
MatchReport count_pairs_part(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options, Part part) {
  const PartSets<T> p = part_sets(s, u, part);
  return count_pairs(p.s, p.u, options);
}

template <class T>
MatchReport count_per_region_part(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                  Part part, std::vector<std::uint64_t>& per_s, std::vector<std::uint64_t>& per_u) {
  const PartSets<T> p = part_sets(s, u, part);
  std::vector<std::uint64_t> part_s, part_u;
  const MatchReport report = count_per_region(p.s, p.u, options, part_s, part_u);
  // The split set's counts go to its share's positions; the whole set's are the part's own.
  std::vector<std::uint64_t>& split = p.share.subscriptions ? per_s : per_u;
  std::vector<std::uint64_t>& whole = p.share.subscriptions ? per_u : per_s;
  std::vector<std::uint64_t>& split_part = p.share.subscriptions ? part_s : part_u;
  whole = std::move(p.share.subscriptions ? part_u : part_s);
  split.assign(p.share.subscriptions ? s.size : u.size, 0);
  std::copy(split_part.begin(), split_part.end(), split.begin() + static_cast<std::ptrdiff_t>(p.share.begin));
  return report;
}

namespace {
Part rank_part(const dist::Comm& comm) {
  return Part{static_cast<std::uint64_t>(comm.rank()), static_cast<std::uint64_t>(comm.size())};
}
}  // namespace

template <class T>
MatchReport match_pairs_distributed(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                    const dist::Comm& comm, const MatchSink& root_sink) {
  if (!comm.distributed()) {
    // One rank: the documented order all the same.
    std::vector<Match> pairs;
    MatchReport report =
        match_pairs(s, u, options, [&](const Match* p, std::size_t n) { pairs.insert(pairs.end(), p, p + n); });
    const auto start = std::chrono::steady_clock::now();
    parallel_sort(pairs.begin(), pairs.end(), effective_threads(options.threads), before);
    const std::size_t chunk = std::max<std::size_t>(options.chunk_pairs, 1);
    for (std::size_t at = 0; at < pairs.size(); at += chunk)
      root_sink(pairs.data() + at, std::min(chunk, pairs.size() - at));
    report.output_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return report;
  }
  std::vector<Match> mine;
  MatchReport report = dist::collectively(comm, [&] {
    return match_pairs_part(s, u, options, rank_part(comm),
                            [&](const Match* p, std::size_t n) { mine.insert(mine.end(), p, p + n); });
  });
  const auto start = std::chrono::steady_clock::now();
  parallel_sort(mine.begin(), mine.end(), effective_threads(options.threads), before);
  std::vector<std::uint64_t> counts(static_cast<std::size_t>(comm.size()), 0);
  counts[static_cast<std::size_t>(comm.rank())] = mine.size();
  comm.allreduce_sum(counts);
  const std::size_t chunk = std::clamp<std::size_t>(options.chunk_pairs, 1, std::size_t{1} << 20);
  if (comm.root()) {
    merge_on_root(comm, mine, counts, chunk, std::max<std::size_t>(options.chunk_pairs, 1), root_sink);
  } else {
    for (std::size_t at = 0; at < mine.size(); at += chunk)
      comm.send(mine.data() + at, std::min(chunk, mine.size() - at) * sizeof(Match), 0, kPairTag);
  }
  report.output_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  combine_reports(comm, report);
  return report;
}

template <class T>
MatchReport match_pairs_per_rank(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                 const dist::Comm& comm, const MatchSink& sink) {
  MatchReport report = dist::collectively(comm, [&] { return match_pairs_part(s, u, options, rank_part(comm), sink); });
  if (comm.distributed()) combine_reports(comm, report);
  return report;
}

template <class T>
MatchReport count_pairs_distributed(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                    const dist::Comm& comm) {
  if (!comm.distributed()) return count_pairs(s, u, options);
  MatchReport report = dist::collectively(comm, [&] { return count_pairs_part(s, u, options, rank_part(comm)); });
  combine_reports(comm, report);
  return report;
}

template <class T>
MatchReport count_per_region_distributed(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                         const dist::Comm& comm, std::vector<std::uint64_t>& per_s,
                                         std::vector<std::uint64_t>& per_u) {
  if (!comm.distributed()) return count_per_region(s, u, options, per_s, per_u);
  MatchReport report =
      dist::collectively(comm, [&] { return count_per_region_part(s, u, options, rank_part(comm), per_s, per_u); });
  // One integer sum of both vectors onto the root.
  std::vector<std::uint64_t> all(per_s);
  all.insert(all.end(), per_u.begin(), per_u.end());
  comm.reduce_sum(all);
  if (comm.root()) {
    std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(per_s.size()), per_s.begin());
    std::copy(all.begin() + static_cast<std::ptrdiff_t>(per_s.size()), all.end(), per_u.begin());
  }
  combine_reports(comm, report);
  return report;
}

#define SIMKIT_DDM_INSTANTIATE(T)                                                                                      \
  template MatchReport match_pairs_part<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&, Part,      \
                                           const MatchSink&);                                                          \
  template MatchReport count_pairs_part<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&, Part);     \
  template MatchReport count_per_region_part<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&, Part, \
                                                std::vector<std::uint64_t>&, std::vector<std::uint64_t>&);             \
  template MatchReport match_pairs_distributed<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&,     \
                                                  const dist::Comm&, const MatchSink&);                                \
  template MatchReport match_pairs_per_rank<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&,        \
                                               const dist::Comm&, const MatchSink&);                                   \
  template MatchReport count_pairs_distributed<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&,     \
                                                  const dist::Comm&);                                                  \
  template MatchReport count_per_region_distributed<T>(const RegionView<T>&, const RegionView<T>&,                     \
                                                       const MatchOptions&, const dist::Comm&,                         \
                                                       std::vector<std::uint64_t>&, std::vector<std::uint64_t>&);
SIMKIT_DDM_INSTANTIATE(std::uint32_t)
SIMKIT_DDM_INSTANTIATE(std::uint64_t)
SIMKIT_DDM_INSTANTIATE(double)
#undef SIMKIT_DDM_INSTANTIATE

}  // namespace simkit::ddm
