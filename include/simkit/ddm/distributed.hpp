#pragma once
// ddm matching split over parts of the work and over the ranks of an MPI job (docs/scale-out.md,
// "ddm across ranks"). The larger of the two region sets (the updates on a tie) is cut into
// contiguous shares; each part matches its share against the whole other set. Every pair is found
// by exactly one part, so counts add up and the parts' pair lists together are the pair set of one
// process. Positions in every result are positions in the whole sets.
#include <cstdint>
#include <vector>

#include "simkit/ddm/ddm.hpp"

namespace simkit::dist {
class Comm;
}

namespace simkit::ddm {

// Part `index` of `count` (count 1 to 2^31 - 1; a UserError, field "part", otherwise).
struct Part {
  std::uint64_t index = 0, count = 1;
};

// Which set a part splits, and the part's share [begin, end) of it (dist::share).
struct Share {
  bool subscriptions = false;  // true: the subscriptions are split, the updates are whole
  std::uint64_t begin = 0, end = 0;
};
Share share_of(std::size_t subscriptions, std::size_t updates, Part part);

// One part's matching: match_pairs, count_pairs and count_per_region on the part's share. The sink
// sees positions in the whole sets, in the part matcher's order; per_s and per_u are sized for the
// whole sets (zero outside the share's own counts) and sum over the parts to count_per_region's.
// The whole sets are validated (every part refuses what one process would).
template <class T>
MatchReport match_pairs_part(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options, Part part,
                             const MatchSink& sink);
template <class T>
MatchReport count_pairs_part(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options, Part part);
template <class T>
MatchReport count_per_region_part(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                  Part part, std::vector<std::uint64_t>& per_s, std::vector<std::uint64_t>& per_u);

// The same over the ranks of `comm`: rank r runs Part{r, size}. Collective calls: every rank passes
// the same sets and options (each holds both sets whole). A UserError on any rank is thrown on
// every rank. In the returned report, `pairs` is the total over the ranks (on every rank),
// `seconds` and `upload_seconds` the slowest rank's, `output_seconds` this rank's exchange and
// delivery, `device` this rank's.
//
// match_pairs_distributed: every pair reaches the root's sink (the other ranks' sinks are never
// called) in one documented order, (subscription position, update position) ascending: the order
// of the brute-force algorithm in one process, whatever the algorithm and the rank count. Each rank
// sorts its own pairs (16 bytes each in memory); the root merges them as they arrive in chunks of at
// most options.chunk_pairs (and 2^20) pairs per rank, so it holds its own pairs and one chunk per rank.
template <class T>
MatchReport match_pairs_distributed(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                    const dist::Comm& comm, const MatchSink& root_sink);
// Each rank's own pairs on its own sink, unsorted (its matcher's order), nothing exchanged but the
// count: for one pair file per rank.
template <class T>
MatchReport match_pairs_per_rank(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                 const dist::Comm& comm, const MatchSink& sink);
template <class T>
MatchReport count_pairs_distributed(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                    const dist::Comm& comm);
// per_s and per_u complete on the root (summed over the ranks); on the other ranks, their own part's.
template <class T>
MatchReport count_per_region_distributed(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& options,
                                         const dist::Comm& comm, std::vector<std::uint64_t>& per_s,
                                         std::vector<std::uint64_t>& per_u);

}  // namespace simkit::ddm
