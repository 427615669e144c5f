// ddm's entry points: validation, backend and algorithm choice, timing, dispatch to the matchers.
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/parallel.hpp"
#include "ddm/kernels.hpp"
#include "ddm/model.hpp"
#include "simkit/core/error.hpp"
#include "simkit/ddm/ddm.hpp"

namespace simkit::ddm {

namespace {

// The backend each algorithm runs on.
Backend home_of(Algorithm a) {
  switch (a) {
    case Algorithm::Parallel:
      return Backend::Cpu;
    case Algorithm::BitMatrix:
    case Algorithm::Gpu:
      return Backend::Cuda;
    default:
      return Backend::Reference;
  }
}

// Validation reads every bound and id once, on all threads, and reports what a serial scan in
// input order would report first: the first region with a bad bound, else the first repeated id
// (the earliest second occurrence).
template <class T>
void validate_set(const RegionView<T>& r, std::string_view name, int threads) {
  if (r.dims < 1 || r.dims > kMaxDims) {
    throw UserError(fmt::format("{}: {} dimensions; ddm takes 1 to {}", name, r.dims, kMaxDims));
  }
  const auto n = static_cast<std::int64_t>(r.size);
  std::int64_t first_bad = n;  // the first region with a NaN or lower > upper
  bool sorted = true;          // ids strictly increasing: no duplicates, no sort needed
#pragma omp parallel for num_threads(threads) schedule(static) reduction(min : first_bad) reduction(&& : sorted) \
    if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) {
    const auto k = static_cast<std::size_t>(i);
    if (i + 1 < n && !(r.ids[k] < r.ids[k + 1])) sorted = false;
    for (int d = 0; d < r.dims; ++d) {
      const T lo = r.lo(k, d), hi = r.hi(k, d);
      bool bad = lo > hi;
      if constexpr (std::is_floating_point_v<T>) bad = bad || std::isnan(lo) || std::isnan(hi);
      if (bad) first_bad = std::min(first_bad, i);
    }
  }
  if (first_bad < n) {
    const auto i = static_cast<std::size_t>(first_bad);
    for (int d = 0; d < r.dims; ++d) {
      const T lo = r.lo(i, d), hi = r.hi(i, d);
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(lo) || std::isnan(hi)) {
          throw UserError(fmt::format("{} region {}, dimension {}: NaN bound", name, r.ids[i], d));
        }
      }
      if (lo > hi) {
        throw UserError(fmt::format("{} region {}, dimension {}: lower {} > upper {}", name, r.ids[i], d, lo, hi));
      }
    }
  }
  if (sorted) return;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> keyed(r.size);  // (id, position)
#pragma omp parallel for num_threads(threads) schedule(static) if (n > 32768)
  for (std::int64_t i = 0; i < n; ++i) {
    keyed[static_cast<std::size_t>(i)] = {r.ids[static_cast<std::size_t>(i)], static_cast<std::uint64_t>(i)};
  }
  parallel_sort(keyed.begin(), keyed.end(), threads);
  std::uint64_t repeat = r.size;  // the earliest position whose id occurred before
  for (std::size_t k = 1; k < keyed.size(); ++k) {
    if (keyed[k].first == keyed[k - 1].first) repeat = std::min(repeat, keyed[k].second);
  }
  if (repeat < r.size) throw UserError(fmt::format("{} region {}: duplicate id", name, r.ids[repeat]));
}

template <class T>
void validate_sets(const RegionView<T>& s, const RegionView<T>& u, int threads) {
  validate_set(s, "S", threads);
  validate_set(u, "U", threads);
  if (s.dims != u.dims) {
    throw UserError(fmt::format("subscriptions have {} dimensions and updates {}", s.dims, u.dims));
  }
}

template <class T>
MatchReport run(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& o, detail::Output mode,
                const detail::PairSinks& sinks, std::vector<std::uint64_t>* per_s, std::vector<std::uint64_t>* per_u) {
  validate_sets(s, u, effective_threads(o.threads));
  Backend backend = o.backend;
  if (backend == Backend::Auto && o.algorithm != Algorithm::Auto) backend = home_of(o.algorithm);
  backend = resolve_backend(backend, o.device);
  MatchReport report;
  report.backend = backend;
  report.algorithm = resolve_algorithm(o.algorithm, backend);
  report.device = device_description(backend, o.device, o.threads);
  if (mode == detail::Output::PerRegion) {
    per_s->assign(s.size, 0);
    per_u->assign(u.size, 0);
  }
  const std::size_t chunk = o.chunk_pairs == 0 ? 1 : o.chunk_pairs;
  if (sinks.device != nullptr && backend != Backend::Cuda) {
    throw UserError("backend",
                    fmt::format(" {}: pairs in device memory need the cuda backend", simkit::to_string(backend)));
  }
  // The serial matchers deliver from one thread: a concurrent sink sees them as worker 0.
  MatchSink as_worker_0;
  const MatchSink* serial = sinks.serial;
  if (sinks.concurrent != nullptr) {
    as_worker_0 = [&](const Match* pairs, std::size_t count) { (*sinks.concurrent)(0, pairs, count); };
    serial = &as_worker_0;
  }
  const auto start = std::chrono::steady_clock::now();
  switch (report.algorithm) {
    case Algorithm::Parallel:
      report.pairs = detail::parallel(s, u, o.rule, o.threads, mode, chunk, sinks, per_s, per_u);
      break;
    case Algorithm::Gpu:
      report.pairs = detail::gpu(s, u, o.rule, o.device, o.threads, mode, chunk, sinks, per_s, per_u, report);
      break;
    case Algorithm::BitMatrix:
      report.pairs = detail::bitmatrix(s, u, o.rule, o.device, o.threads, mode, chunk, sinks, per_s, per_u, report);
      break;
    default: {
      detail::Collector out(mode, serial, std::min<std::size_t>(chunk, sinks.concurrent ? 65536 : chunk), per_s, per_u);
      if (report.algorithm == Algorithm::BruteForce) detail::brute_force(s, u, o.rule, out);
      if (report.algorithm == Algorithm::Sbm) detail::sort_based(s, u, o.rule, out);
      if (report.algorithm == Algorithm::IntervalTree) detail::interval_tree(s, u, o.rule, out);
      if (report.algorithm == Algorithm::Grid) detail::grid(s, u, o.rule, out);
      out.flush();
      report.pairs = out.count();
    }
  }
  const double total = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (report.seconds == 0) report.seconds = total - report.upload_seconds - report.output_seconds;
  return report;
}

}  // namespace

Rule parse_rule(std::string_view text) {
  if (const auto rule = value_of(kRuleNames, text)) return *rule;
  throw UserError("rule", fmt::format(" {}: expected {}", text, names_text(kRuleNames)));
}
std::string_view to_string(Rule rule) { return name_of(kRuleNames, rule); }
Coords parse_coords(std::string_view text) {
  if (const auto coords = value_of(kCoordsNames, text)) return *coords;
  throw UserError("coords", fmt::format(" {}: expected {}", text, names_text(kCoordsNames)));
}
std::string_view to_string(Coords coords) { return name_of(kCoordsNames, coords); }
Algorithm parse_algorithm(std::string_view text) {
  if (const auto algorithm = value_of(kAlgorithmNames, text)) return *algorithm;
  throw UserError("algorithm", fmt::format(" {}: expected {}", text, names_text(kAlgorithmNames)));
}
std::string_view to_string(Algorithm algorithm) { return name_of(kAlgorithmNames, algorithm); }

Algorithm resolve_algorithm(Algorithm requested, Backend backend) {
  if (requested == Algorithm::Auto) {
    return backend == Backend::Cuda ? Algorithm::Gpu
                                    : (backend == Backend::Cpu ? Algorithm::Parallel : Algorithm::BruteForce);
  }
  if (home_of(requested) != backend) {
    throw UserError("algorithm", fmt::format(" {} runs on the {} backend, not on {}", to_string(requested),
                                             simkit::to_string(home_of(requested)), simkit::to_string(backend)));
  }
  return requested;
}

template <class T>
void validate(const RegionView<T>& s, const RegionView<T>& u) {
  validate_sets(s, u, effective_threads(0));
}

template <class T>
MatchReport match_pairs(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& o, const MatchSink& sink) {
  return run(s, u, o, detail::Output::Pairs, {&sink, nullptr, nullptr}, nullptr, nullptr);
}
template <class T>
MatchReport match_pairs_concurrent(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& o,
                                   const ConcurrentSink& sink) {
  return run(s, u, o, detail::Output::Pairs, {nullptr, &sink, nullptr}, nullptr, nullptr);
}
template <class T>
MatchReport match_pairs_on_device(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& o,
                                  const DeviceSink& sink) {
  return run(s, u, o, detail::Output::Pairs, {nullptr, nullptr, &sink}, nullptr, nullptr);
}
int match_workers(const MatchOptions& o) {
  Backend backend = o.backend;
  if (backend == Backend::Auto && o.algorithm != Algorithm::Auto) backend = home_of(o.algorithm);
  return resolve_backend(backend, o.device) == Backend::Reference ? 1 : effective_threads(o.threads);
}
template <class T>
MatchReport count_pairs(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& o) {
  return run(s, u, o, detail::Output::Count, {}, nullptr, nullptr);
}
template <class T>
MatchReport count_per_region(const RegionView<T>& s, const RegionView<T>& u, const MatchOptions& o,
                             std::vector<std::uint64_t>& per_s, std::vector<std::uint64_t>& per_u) {
  return run(s, u, o, detail::Output::PerRegion, {}, &per_s, &per_u);
}

template <class T>
MatchReport match_self_pairs(const RegionView<T>& s, const MatchOptions& o, const MatchSink& sink) {
  // S x S in the matcher's fixed order, keeping i < j: each unordered pair once, no diagonal.
  std::vector<Match> kept;
  std::uint64_t total = 0;
  const MatchSink filter = [&](const Match* pairs, std::size_t count) {
    kept.clear();
    for (std::size_t k = 0; k < count; ++k)
      if (pairs[k].s < pairs[k].u) kept.push_back(pairs[k]);
    total += kept.size();
    if (!kept.empty()) sink(kept.data(), kept.size());
  };
  MatchReport r = run(s, s, o, detail::Output::Pairs, {&filter, nullptr, nullptr}, nullptr, nullptr);
  r.pairs = total;
  return r;
}

template <class T>
MatchReport count_self_pairs(const RegionView<T>& s, const MatchOptions& o) {
  MatchReport r = run(s, s, o, detail::Output::Count, {}, nullptr, nullptr);
  // Every pair appears twice in S x S; the diagonal holds the regions that intersect themselves
  // (all of them, except empty ones under the half-open rule).
  std::uint64_t diagonal = 0;
  for (std::size_t i = 0; i < s.size; ++i)
    diagonal += intersects(o.rule, s.dims, s.lower, s.upper, s.size, i, s.lower, s.upper, s.size, i) ? 1 : 0;
  r.pairs = (r.pairs - diagonal) / 2;
  return r;
}

#define SIMKIT_DDM_INSTANTIATE(T)                                                                                 \
  template void validate<T>(const RegionView<T>&, const RegionView<T>&);                                          \
  template MatchReport match_pairs<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&,            \
                                      const MatchSink&);                                                          \
  template MatchReport match_pairs_concurrent<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&, \
                                                 const ConcurrentSink&);                                          \
  template MatchReport match_pairs_on_device<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&,  \
                                                const DeviceSink&);                                               \
  template MatchReport count_pairs<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&);           \
  template MatchReport count_per_region<T>(const RegionView<T>&, const RegionView<T>&, const MatchOptions&,       \
                                           std::vector<std::uint64_t>&, std::vector<std::uint64_t>&);             \
  template MatchReport match_self_pairs<T>(const RegionView<T>&, const MatchOptions&, const MatchSink&);          \
  template MatchReport count_self_pairs<T>(const RegionView<T>&, const MatchOptions&);
SIMKIT_DDM_INSTANTIATE(std::uint32_t)
SIMKIT_DDM_INSTANTIATE(std::uint64_t)
SIMKIT_DDM_INSTANTIATE(double)
#undef SIMKIT_DDM_INSTANTIATE

}  // namespace simkit::ddm
