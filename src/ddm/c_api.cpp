// The C API of the ddm matcher (c_api.h, docs/ddm_c_api.md): a handle holding MatchOptions, the last
// error message and the last report, and an incremental handle holding an IncrementalMatcher; every
// entry point catches everything and returns a status.
#include "simkit/ddm/c_api.h"

#include <fmt/format.h>
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "simkit/core/backend.hpp"
#include "simkit/core/error.hpp"
#include "simkit/ddm/ddm.hpp"
#include "simkit/ddm/incremental.hpp"

struct simkit_ddm_matcher {
  simkit::ddm::MatchOptions options;
  std::string error;        // "" after a successful call
  bool error_lost = false;  // the message could not be stored (out of memory)
  bool busy = false;        // a matching call is running (a call from its callback is refused)
  bool has_report = false;  // the last matching call succeeded
  simkit_ddm_report report{};
  std::string device;                  // report.device points here
  std::vector<std::uint64_t> sub_ids;  // the callback's id buffers, sized before matching so that
  std::vector<std::uint64_t> upd_ids;  // the sink (maybe inside an OpenMP region) never allocates
};

struct simkit_ddm_incremental {
  template <class M, class... Args>
  simkit_ddm_incremental(std::in_place_type_t<M> type, int region_dims, Args&&... args)
      : matcher(type, std::forward<Args>(args)...), dims(region_dims) {}

  // The coordinate type is chosen at creation, once.
  std::variant<simkit::ddm::IncrementalMatcher<std::uint32_t>, simkit::ddm::IncrementalMatcher<std::uint64_t>,
               simkit::ddm::IncrementalMatcher<double>>
      matcher;
  int dims = 1;             // kept here: an empty set's RegionSet is no witness of it
  std::string error;        // "" after a successful call
  bool error_lost = false;  // the message could not be stored (out of memory)
  bool busy = false;        // a call is running (a call from its callbacks is refused)
  bool broken = false;      // an apply failed other than by a bad batch: the pair lists may be inconsistent
  bool has_report = false;  // the last apply applied its batch
  simkit_ddm_apply_report report{};
  std::vector<std::uint64_t> sub_ids;  // the callbacks' id buffers
  std::vector<std::uint64_t> upd_ids;
};

namespace {

using simkit::Backend;
using simkit::UserError;
using simkit::ddm::Algorithm;
using simkit::ddm::Change;
using simkit::ddm::Delta;
using simkit::ddm::IdPair;
using simkit::ddm::IncrementalMatcher;
using simkit::ddm::Match;
using simkit::ddm::MatchOptions;
using simkit::ddm::MatchReport;
using simkit::ddm::RegionSet;
using simkit::ddm::RegionView;
using simkit::ddm::Role;
using simkit::ddm::Rule;

// The most pairs per callback call (the id buffers hold 2 x 8 bytes per pair: 1 MiB).
constexpr std::size_t kCallbackPairs = std::size_t{1} << 16;

// A failure with its own status (NULL pointers, unavailable backends).
class Failure : public std::runtime_error {
 public:
  Failure(simkit_ddm_status status, const std::string& message) : std::runtime_error(message), status_(status) {}
  simkit_ddm_status status() const { return status_; }

 private:
  simkit_ddm_status status_;
};

// Thrown from the sink when the callback asks to stop (never from inside an OpenMP region).
struct Cancelled {
  int code = 0;
};

// A library error in the C API's words: its option names are the library's field names
// ("backend", "algorithm", "rule"), so fields read as they are, without the backquotes.
std::string c_message(const UserError& e) {
  return message_naming(e, [](std::string_view field) { return std::string(field); });
}

template <class Handle>
void set_error(Handle* m, const char* text) noexcept {
  try {
    m->error.assign(text);
    m->error_lost = false;
  } catch (...) {
    m->error.clear();
    m->error_lost = true;
  }
}

// Runs `body` (which returns SIMKIT_DDM_OK or throws) with every exception turned into a status and
// a message on the handle (a simkit_ddm_matcher or a simkit_ddm_incremental).
template <class Handle, class F>
simkit_ddm_status guarded(Handle* m, F&& body) noexcept {
  if (m == nullptr) return SIMKIT_DDM_BAD_INPUT;
  if (m->busy) {
    set_error(m, std::is_same_v<Handle, simkit_ddm_incremental>
                     ? "the incremental matcher is busy: its functions cannot be called from its own callbacks"
                     : "the matcher is busy: its functions cannot be called from its own pair callback");
    return SIMKIT_DDM_BAD_INPUT;
  }
  if constexpr (std::is_same_v<Handle, simkit_ddm_incremental>) {
    if (m->broken) {
      set_error(m,
                "the incremental matcher is unusable: an earlier apply failed while updating its pairs; destroy it "
                "and create a new one");
      return SIMKIT_DDM_INTERNAL;
    }
  }
  m->error.clear();
  m->error_lost = false;
  try {
    return body();
  } catch (const Cancelled& c) {
    try {
      set_error(m, fmt::format("matching cancelled: the pair callback returned {}", c.code).c_str());
    } catch (...) {
      set_error(m, "matching cancelled by the pair callback");
    }
    return SIMKIT_DDM_CANCELLED;
  } catch (const Failure& e) {
    set_error(m, e.what());
    return e.status();
  } catch (const simkit::DeviceMemoryError& e) {
    set_error(m, c_message(e).c_str());
    return SIMKIT_DDM_OUT_OF_MEMORY;
  } catch (const UserError& e) {
    set_error(m, c_message(e).c_str());
    return SIMKIT_DDM_BAD_INPUT;
  } catch (const std::bad_alloc&) {
    set_error(m, "out of memory");
    return SIMKIT_DDM_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    set_error(m, e.what());
    return SIMKIT_DDM_INTERNAL;
  } catch (...) {
    set_error(m, "internal error: unknown exception");
    return SIMKIT_DDM_INTERNAL;
  }
}

// Marks the handle busy for the duration of a call that calls back.
template <class Handle>
class BusyScope {
 public:
  explicit BusyScope(Handle* m) : m_(m) { m_->busy = true; }
  ~BusyScope() { m_->busy = false; }
  BusyScope(const BusyScope&) = delete;
  BusyScope& operator=(const BusyScope&) = delete;

 private:
  Handle* m_;
};

template <class T>
RegionView<T> region_view(char set, int dims, std::size_t n, const std::uint64_t* ids, const T* lower, const T* upper) {
  const auto null = [&](const char* what) {
    return Failure(SIMKIT_DDM_BAD_INPUT, fmt::format("{}_{} is NULL with n{} = {} regions", set, what, set, n));
  };
  if (n > 0) {
    if (ids == nullptr) throw null("ids");
    if (lower == nullptr) throw null("lower");
    if (upper == nullptr) throw null("upper");
  }
  // Infinite bounds are refused here as the CLI's region files refuse them (the C++ library takes
  // them: its matchers agree on them, ddm_serial_test). NaN and lower > upper: the library's check.
  if constexpr (std::is_floating_point_v<T>) {
    if (dims >= 1 && dims <= 8) {
      for (std::size_t i = 0; i < n; ++i) {
        for (int d = 0; d < dims; ++d) {
          const T lo = lower[static_cast<std::size_t>(d) * n + i], hi = upper[static_cast<std::size_t>(d) * n + i];
          if (std::isinf(lo) || std::isinf(hi)) {
            throw Failure(SIMKIT_DDM_BAD_INPUT,
                          fmt::format("{} region {}, dimension {}: infinite bound [{}, {}]; give finite bounds (the "
                                      "space's own, for an unbounded extent)",
                                      set == 's' ? 'S' : 'U', ids[i], d, lo, hi));
          }
        }
      }
    }
  }
  return RegionView<T>{dims, n, ids, lower, upper};
}

// The integer a C caller passed as enum `e`. C allows any value of the enum's integer type, but in
// C++ loading an enum object that holds a value outside its enumerators' range is undefined
// behaviour (UBSan: "not a valid value for type"): the bytes are read as that integer type instead.
template <class E>
int c_enum_value(const E& e) {
  std::underlying_type_t<E> raw;
  std::memcpy(&raw, &e, sizeof raw);
  return static_cast<int>(raw);
}

// The C enumerator value v as table[v], or BAD_INPUT naming what was expected.
template <class E, std::size_t N>
E from_c(int v, const E (&table)[N], std::string_view what, std::string_view expected) {
  if (v < 0 || v >= static_cast<int>(N))
    throw Failure(SIMKIT_DDM_BAD_INPUT, fmt::format("{} {}: expected {}", what, v, expected));
  return table[v];
}

// UNAVAILABLE rather than BAD_INPUT when cuda is asked for and cannot be had.
void check_available(const MatchOptions& o) {
  Backend backend = o.backend;
  if (backend == Backend::Auto && (o.algorithm == Algorithm::Gpu || o.algorithm == Algorithm::BitMatrix)) {
    backend = Backend::Cuda;
  }
  if (backend != Backend::Cuda) return;
  try {
    simkit::resolve_backend(Backend::Cuda, o.device);
  } catch (const UserError& e) {
    throw Failure(SIMKIT_DDM_UNAVAILABLE, c_message(e));
  }
}

simkit_ddm_backend to_c(Backend b) {
  switch (b) {
    case Backend::Reference:
      return SIMKIT_DDM_BACKEND_REFERENCE;
    case Backend::Cpu:
      return SIMKIT_DDM_BACKEND_CPU;
    case Backend::Cuda:
      return SIMKIT_DDM_BACKEND_CUDA;
    default:
      return SIMKIT_DDM_BACKEND_AUTO;
  }
}

simkit_ddm_algorithm to_c(Algorithm a) {
  switch (a) {
    case Algorithm::BruteForce:
      return SIMKIT_DDM_ALGORITHM_BRUTE_FORCE;
    case Algorithm::Grid:
      return SIMKIT_DDM_ALGORITHM_GRID;
    case Algorithm::Sbm:
      return SIMKIT_DDM_ALGORITHM_SBM;
    case Algorithm::IntervalTree:
      return SIMKIT_DDM_ALGORITHM_INTERVAL_TREE;
    case Algorithm::Parallel:
      return SIMKIT_DDM_ALGORITHM_PARALLEL;
    case Algorithm::BitMatrix:
      return SIMKIT_DDM_ALGORITHM_BITMATRIX;
    case Algorithm::Gpu:
      return SIMKIT_DDM_ALGORITHM_GPU;
    default:
      return SIMKIT_DDM_ALGORITHM_AUTO;
  }
}

template <class T>
constexpr simkit_ddm_coords coords_of() {
  if constexpr (std::is_same_v<T, std::uint32_t>) return SIMKIT_DDM_COORDS_U32;
  if constexpr (std::is_same_v<T, std::uint64_t>) return SIMKIT_DDM_COORDS_U64;
  return SIMKIT_DDM_COORDS_F64;
}

template <class T>
void record(simkit_ddm_matcher* m, const MatchReport& r) {
  m->device = r.device;
  m->report.pairs = r.pairs;
  m->report.coords = coords_of<T>();
  m->report.backend = to_c(r.backend);
  m->report.algorithm = to_c(r.algorithm);
  m->report.seconds = r.seconds;
  m->report.upload_seconds = r.upload_seconds;
  m->report.output_seconds = r.output_seconds;
  m->report.device = m->device.c_str();
  m->has_report = true;
}

// The three entry points, once for every coordinate type.
template <class T>
simkit_ddm_status match_pairs(simkit_ddm_matcher* m, int dims, std::size_t ns, const std::uint64_t* s_ids,
                              const T* s_lower, const T* s_upper, std::size_t nu, const std::uint64_t* u_ids,
                              const T* u_lower, const T* u_upper, simkit_ddm_pair_callback callback,
                              void* user) noexcept {
  return guarded(m, [&] {
    m->has_report = false;
    const RegionView<T> s = region_view('s', dims, ns, s_ids, s_lower, s_upper);
    const RegionView<T> u = region_view('u', dims, nu, u_ids, u_lower, u_upper);
    if (callback == nullptr) throw Failure(SIMKIT_DDM_BAD_INPUT, "callback is NULL");
    check_available(m->options);
    const std::size_t step = std::clamp<std::size_t>(m->options.chunk_pairs, 1, kCallbackPairs);
    m->sub_ids.resize(step);
    m->upd_ids.resize(step);
    bool cancelled = false;
    int code = 0;
    const simkit::ddm::MatchSink sink = [&](const Match* pairs, std::size_t count) {
      if (cancelled) return;
      for (std::size_t first = 0; first < count; first += step) {
        const std::size_t n = std::min(step, count - first);
        for (std::size_t k = 0; k < n; ++k) {
          m->sub_ids[k] = s.ids[pairs[first + k].s];
          m->upd_ids[k] = u.ids[pairs[first + k].u];
        }
        code = callback(m->sub_ids.data(), m->upd_ids.data(), n, user);
        if (code != 0) {
          cancelled = true;
          // An exception must not leave an OpenMP region (the cpu matcher calls the sink inside
          // one): there the remaining pairs are dropped and the call returns CANCELLED at the end.
          if (omp_get_level() == 0) throw Cancelled{code};
          return;
        }
      }
    };
    BusyScope busy(m);
    const MatchReport r = simkit::ddm::match_pairs(s, u, m->options, sink);
    if (cancelled) throw Cancelled{code};
    record<T>(m, r);
    return SIMKIT_DDM_OK;
  });
}

template <class T>
simkit_ddm_status count_pairs(simkit_ddm_matcher* m, int dims, std::size_t ns, const std::uint64_t* s_ids,
                              const T* s_lower, const T* s_upper, std::size_t nu, const std::uint64_t* u_ids,
                              const T* u_lower, const T* u_upper, std::uint64_t* count) noexcept {
  return guarded(m, [&] {
    m->has_report = false;
    const RegionView<T> s = region_view('s', dims, ns, s_ids, s_lower, s_upper);
    const RegionView<T> u = region_view('u', dims, nu, u_ids, u_lower, u_upper);
    if (count == nullptr) throw Failure(SIMKIT_DDM_BAD_INPUT, "count is NULL");
    check_available(m->options);
    BusyScope busy(m);
    const MatchReport r = simkit::ddm::count_pairs(s, u, m->options);
    *count = r.pairs;
    record<T>(m, r);
    return SIMKIT_DDM_OK;
  });
}

template <class T>
simkit_ddm_status count_per_region(simkit_ddm_matcher* m, int dims, std::size_t ns, const std::uint64_t* s_ids,
                                   const T* s_lower, const T* s_upper, std::size_t nu, const std::uint64_t* u_ids,
                                   const T* u_lower, const T* u_upper, std::uint64_t* per_s,
                                   std::uint64_t* per_u) noexcept {
  return guarded(m, [&] {
    m->has_report = false;
    const RegionView<T> s = region_view('s', dims, ns, s_ids, s_lower, s_upper);
    const RegionView<T> u = region_view('u', dims, nu, u_ids, u_lower, u_upper);
    if (ns > 0 && per_s == nullptr) throw Failure(SIMKIT_DDM_BAD_INPUT, fmt::format("per_s is NULL with ns = {}", ns));
    if (nu > 0 && per_u == nullptr) throw Failure(SIMKIT_DDM_BAD_INPUT, fmt::format("per_u is NULL with nu = {}", nu));
    check_available(m->options);
    BusyScope busy(m);
    std::vector<std::uint64_t> got_s, got_u;
    const MatchReport r = simkit::ddm::count_per_region(s, u, m->options, got_s, got_u);
    if (got_s.size() != ns || got_u.size() != nu) throw simkit::InternalError("count_per_region: wrong output size");
    std::copy(got_s.begin(), got_s.end(), per_s);
    std::copy(got_u.begin(), got_u.end(), per_u);
    record<T>(m, r);
    return SIMKIT_DDM_OK;
  });
}

// ---- incremental matching ----

template <class T>
constexpr const char* coords_name() {
  if constexpr (std::is_same_v<T, std::uint32_t>) return "u32";
  if constexpr (std::is_same_v<T, std::uint64_t>) return "u64";
  return "f64";
}

// The pairs per callback call: as for match_pairs.
std::size_t callback_step(const MatchOptions& o) { return std::clamp<std::size_t>(o.chunk_pairs, 1, kCallbackPairs); }

template <class T>
RegionSet<T> region_copy(const RegionView<T>& v) {
  RegionSet<T> r;
  r.dims = v.dims;
  if (v.size == 0) return r;
  const std::size_t values = v.size * static_cast<std::size_t>(v.dims);
  r.ids.assign(v.ids, v.ids + v.size);
  r.lower.assign(v.lower, v.lower + values);
  r.upper.assign(v.upper, v.upper + values);
  return r;
}

template <class T>
simkit_ddm_status incremental_create(simkit_ddm_matcher* options, int dims, std::size_t ns, const std::uint64_t* s_ids,
                                     const T* s_lower, const T* s_upper, std::size_t nu, const std::uint64_t* u_ids,
                                     const T* u_lower, const T* u_upper, simkit_ddm_incremental** out) noexcept {
  if (out != nullptr) *out = nullptr;
  return guarded(options, [&] {
    if (out == nullptr) throw Failure(SIMKIT_DDM_BAD_INPUT, "out is NULL");
    const RegionView<T> s = region_view('s', dims, ns, s_ids, s_lower, s_upper);
    const RegionView<T> u = region_view('u', dims, nu, u_ids, u_lower, u_upper);
    check_available(options->options);
    // Checked before the copies, so that bad regions (a dims out of range included) never size them.
    simkit::ddm::validate(s, u);
    auto handle = std::make_unique<simkit_ddm_incremental>(std::in_place_type<IncrementalMatcher<T>>, dims,
                                                           region_copy(s), region_copy(u), options->options);
    const std::size_t step = callback_step(options->options);
    handle->sub_ids.resize(step);
    handle->upd_ids.resize(step);
    *out = handle.release();  // simkit_ddm_incremental_destroy deletes it
    return SIMKIT_DDM_OK;
  });
}

// Hands `pairs` to `callback` (when not NULL) in chunks; returns the callback's non-zero code when it
// asked to stop, else 0.
int deliver(simkit_ddm_incremental* h, const std::vector<IdPair>& pairs, simkit_ddm_pair_callback callback,
            void* user) {
  if (callback == nullptr) return 0;
  const std::size_t step = h->sub_ids.size();
  for (std::size_t first = 0; first < pairs.size(); first += step) {
    const std::size_t n = std::min(step, pairs.size() - first);
    for (std::size_t k = 0; k < n; ++k) {
      h->sub_ids[k] = pairs[first + k].first;
      h->upd_ids[k] = pairs[first + k].second;
    }
    if (const int code = callback(h->sub_ids.data(), h->upd_ids.data(), n, user); code != 0) return code;
  }
  return 0;
}

template <class T>
simkit_ddm_status incremental_apply(simkit_ddm_incremental* h, int dims, std::size_t changes,
                                    const simkit_ddm_change_kind* kinds, const simkit_ddm_role* roles,
                                    const std::uint64_t* ids, const T* lower, const T* upper,
                                    simkit_ddm_pair_callback gained, simkit_ddm_pair_callback lost,
                                    void* user) noexcept {
  return guarded(h, [&] {
    h->has_report = false;
    auto* m = std::get_if<IncrementalMatcher<T>>(&h->matcher);
    if (m == nullptr) {
      static constexpr const char* kHeld[] = {"u32", "u64", "f64"};  // the variant's alternatives, in order
      const char* held = kHeld[h->matcher.index()];
      throw Failure(SIMKIT_DDM_BAD_INPUT,
                    fmt::format("simkit_ddm_incremental_apply_{}: the matcher holds {} coordinates (it was created by "
                                "simkit_ddm_incremental_create_{}); call simkit_ddm_incremental_apply_{}",
                                coords_name<T>(), held, held, held));
    }
    if (dims != h->dims) {
      throw Failure(SIMKIT_DDM_BAD_INPUT,
                    fmt::format("dims {}: the matcher's regions have {} dimensions", dims, h->dims));
    }
    if (changes > 0) {
      const auto null = [&](const char* what) {
        return Failure(SIMKIT_DDM_BAD_INPUT, fmt::format("{} is NULL with changes = {}", what, changes));
      };
      if (kinds == nullptr) throw null("kinds");
      if (roles == nullptr) throw null("roles");
      if (ids == nullptr) throw null("ids");
    }
    static constexpr
        typename Change<T>::Kind kKinds[] = {Change<T>::Kind::Add, Change<T>::Kind::Move, Change<T>::Kind::Remove};
    static constexpr Role kRoles[] = {Role::Subscription, Role::Update};
    const auto d_count = static_cast<std::size_t>(dims);
    std::vector<Change<T>> batch;
    batch.reserve(changes);
    for (std::size_t k = 0; k < changes; ++k) {
      Change<T> c;
      c.kind = from_c(c_enum_value(kinds[k]), kKinds, fmt::format("batch change {}: kind", k),
                      "SIMKIT_DDM_CHANGE_ADD (0), SIMKIT_DDM_CHANGE_MOVE (1) or SIMKIT_DDM_CHANGE_REMOVE (2)");
      c.role = from_c(c_enum_value(roles[k]), kRoles, fmt::format("batch change {}: role", k),
                      "SIMKIT_DDM_ROLE_SUBSCRIPTION (0) or SIMKIT_DDM_ROLE_UPDATE (1)");
      c.id = ids[k];
      if (c.kind != Change<T>::Kind::Remove) {
        const char* kind = c.kind == Change<T>::Kind::Add ? "add" : "move";
        const char set = c.role == Role::Subscription ? 'S' : 'U';
        for (const auto& [name, bounds] : {std::pair{"lower", lower}, std::pair{"upper", upper}}) {
          if (bounds == nullptr) {
            throw Failure(SIMKIT_DDM_BAD_INPUT, fmt::format("{} is NULL with changes = {}, and batch change {} ({} of "
                                                            "{} region {}) needs bounds",
                                                            name, changes, k, kind, set, c.id));
          }
        }
        c.lower.assign(lower + k * d_count, lower + (k + 1) * d_count);
        c.upper.assign(upper + k * d_count, upper + (k + 1) * d_count);
        // Refused as create refuses them (region_view); NaN and lower > upper: the matcher's check.
        if constexpr (std::is_floating_point_v<T>) {
          for (std::size_t d = 0; d < d_count; ++d) {
            if (std::isinf(c.lower[d]) || std::isinf(c.upper[d])) {
              throw Failure(SIMKIT_DDM_BAD_INPUT,
                            fmt::format("batch change {}: {} of {} region {}: dimension {}: infinite bound [{}, {}]; "
                                        "give finite bounds (the space's own, for an unbounded extent)",
                                        k, kind, set, c.id, d, c.lower[d], c.upper[d]));
            }
          }
        }
      }
      batch.push_back(std::move(c));
    }
    BusyScope busy(h);
    Delta delta;
    try {
      delta = m->apply(batch);
    } catch (const UserError&) {
      throw;  // a bad batch: the matcher is unchanged
    } catch (...) {
      h->broken = true;  // e.g. out of memory while the pair lists were updated
      throw;
    }
    // The callbacks get each list sorted (c_api.h), whatever order the matcher's backend left.
    for (std::vector<IdPair>* list : {&delta.lost, &delta.gained}) {
      if (!std::is_sorted(list->begin(), list->end())) std::sort(list->begin(), list->end());
    }
    const simkit::ddm::ApplyReport& r = m->last_report();
    h->report = simkit_ddm_apply_report{};
    h->report.pairs = m->pairs();
    h->report.gained = delta.gained.size();
    h->report.lost = delta.lost.size();
    h->report.subscriptions = r.subscriptions;
    h->report.updates = r.updates;
    h->report.removed = r.removed;
    h->report.seconds = r.seconds;
    h->has_report = true;
    // Lost first: an RTI that stops routing before it starts never holds both routes of a region.
    int code = deliver(h, delta.lost, lost, user);
    const char* which = "lost";
    if (code == 0) {
      code = deliver(h, delta.gained, gained, user);
      which = "gained";
    }
    if (code != 0) {
      throw Failure(SIMKIT_DDM_CANCELLED,
                    fmt::format("pair delivery cancelled: the {} callback returned {}; the batch was applied (the "
                                "matcher holds {} pairs; simkit_ddm_incremental_for_each_pair lists them)",
                                which, code, m->pairs()));
    }
    return SIMKIT_DDM_OK;
  });
}

}  // namespace

extern "C" {

simkit_ddm_status simkit_ddm_create(simkit_ddm_matcher** matcher) {
  if (matcher == nullptr) return SIMKIT_DDM_BAD_INPUT;
  *matcher = new (std::nothrow) simkit_ddm_matcher();
  return *matcher == nullptr ? SIMKIT_DDM_OUT_OF_MEMORY : SIMKIT_DDM_OK;
}

void simkit_ddm_destroy(simkit_ddm_matcher* matcher) { delete matcher; }

const char* simkit_ddm_last_error(const simkit_ddm_matcher* matcher) {
  if (matcher == nullptr) return "the matcher is NULL";
  if (matcher->error_lost) return "(the error message could not be stored: out of memory)";
  return matcher->error.c_str();
}

const char* simkit_ddm_status_name(simkit_ddm_status status) {
  switch (c_enum_value(status)) {
    case SIMKIT_DDM_OK:
      return "ok";
    case SIMKIT_DDM_BAD_INPUT:
      return "bad input";
    case SIMKIT_DDM_UNAVAILABLE:
      return "unavailable";
    case SIMKIT_DDM_OUT_OF_MEMORY:
      return "out of memory";
    case SIMKIT_DDM_CANCELLED:
      return "cancelled";
    case SIMKIT_DDM_INTERNAL:
      return "internal error";
    default:
      return "unknown status";
  }
}

simkit_ddm_status simkit_ddm_last_report(const simkit_ddm_matcher* matcher, simkit_ddm_report* report) {
  if (report == nullptr) return SIMKIT_DDM_BAD_INPUT;
  if (matcher == nullptr || !matcher->has_report) {
    *report = simkit_ddm_report{};
    report->device = "";
    return SIMKIT_DDM_BAD_INPUT;
  }
  *report = matcher->report;
  return SIMKIT_DDM_OK;
}

simkit_ddm_status simkit_ddm_set_rule(simkit_ddm_matcher* matcher, simkit_ddm_rule rule) {
  return guarded(matcher, [&] {
    static constexpr Rule kRules[] = {Rule::Ieee1516, Rule::HalfOpen, Rule::Closed};
    matcher->options.rule = from_c(c_enum_value(rule), kRules, "rule",
                                   "SIMKIT_DDM_RULE_IEEE1516 (0), SIMKIT_DDM_RULE_HALF_OPEN (1) or "
                                   "SIMKIT_DDM_RULE_CLOSED (2)");
    return SIMKIT_DDM_OK;
  });
}

simkit_ddm_status simkit_ddm_set_backend(simkit_ddm_matcher* matcher, simkit_ddm_backend backend) {
  return guarded(matcher, [&] {
    static constexpr Backend kBackends[] = {Backend::Auto, Backend::Reference, Backend::Cpu, Backend::Cuda};
    matcher->options.backend =
        from_c(c_enum_value(backend), kBackends, "backend", "0 (auto), 1 (reference), 2 (cpu) or 3 (cuda)");
    return SIMKIT_DDM_OK;
  });
}

simkit_ddm_status simkit_ddm_set_algorithm(simkit_ddm_matcher* matcher, simkit_ddm_algorithm algorithm) {
  return guarded(matcher, [&] {
    static constexpr Algorithm kAlgorithms[] = {Algorithm::Auto,      Algorithm::BruteForce,   Algorithm::Grid,
                                                Algorithm::Sbm,       Algorithm::IntervalTree, Algorithm::Parallel,
                                                Algorithm::BitMatrix, Algorithm::Gpu};
    matcher->options.algorithm = from_c(c_enum_value(algorithm), kAlgorithms, "algorithm", "0 (auto) to 7 (gpu)");
    return SIMKIT_DDM_OK;
  });
}

simkit_ddm_status simkit_ddm_set_threads(simkit_ddm_matcher* matcher, int threads) {
  return guarded(matcher, [&] {
    matcher->options.threads = simkit::checked_threads(threads);  // a UserError: SIMKIT_DDM_BAD_INPUT
    return SIMKIT_DDM_OK;
  });
}

simkit_ddm_status simkit_ddm_set_device(simkit_ddm_matcher* matcher, int device) {
  return guarded(matcher, [&] {
    if (device < 0) throw Failure(SIMKIT_DDM_BAD_INPUT, fmt::format("device {}: expected 0 or more", device));
    matcher->options.device = device;
    return SIMKIT_DDM_OK;
  });
}

simkit_ddm_status simkit_ddm_set_chunk_pairs(simkit_ddm_matcher* matcher, size_t chunk_pairs) {
  return guarded(matcher, [&] {
    if (chunk_pairs == 0) throw Failure(SIMKIT_DDM_BAD_INPUT, "chunk_pairs 0: expected 1 or more");
    matcher->options.chunk_pairs = chunk_pairs;
    return SIMKIT_DDM_OK;
  });
}

void simkit_ddm_incremental_destroy(simkit_ddm_incremental* matcher) { delete matcher; }

const char* simkit_ddm_incremental_last_error(const simkit_ddm_incremental* matcher) {
  if (matcher == nullptr) return "the incremental matcher is NULL";
  if (matcher->error_lost) return "(the error message could not be stored: out of memory)";
  return matcher->error.c_str();
}

simkit_ddm_status simkit_ddm_incremental_pairs(simkit_ddm_incremental* matcher, uint64_t* count) {
  return guarded(matcher, [&] {
    if (count == nullptr) throw Failure(SIMKIT_DDM_BAD_INPUT, "count is NULL");
    *count = std::visit([](const auto& m) { return m.pairs(); }, matcher->matcher);
    return SIMKIT_DDM_OK;
  });
}

simkit_ddm_status simkit_ddm_incremental_for_each_pair(simkit_ddm_incremental* matcher,
                                                       simkit_ddm_pair_callback callback, void* user) {
  return guarded(matcher, [&] {
    if (callback == nullptr) throw Failure(SIMKIT_DDM_BAD_INPUT, "callback is NULL");
    BusyScope busy(matcher);
    const std::size_t step = matcher->sub_ids.size();
    std::size_t n = 0;
    int code = 0;
    // for_each_pair cannot be left early: after a stop the remaining pairs are skipped.
    std::visit(
        [&](const auto& m) {
          m.for_each_pair([&](std::uint64_t sid, std::uint64_t uid) {
            if (code != 0) return;
            matcher->sub_ids[n] = sid;
            matcher->upd_ids[n] = uid;
            if (++n == step) {
              code = callback(matcher->sub_ids.data(), matcher->upd_ids.data(), n, user);
              n = 0;
            }
          });
        },
        matcher->matcher);
    if (code == 0 && n > 0) code = callback(matcher->sub_ids.data(), matcher->upd_ids.data(), n, user);
    if (code != 0) {
      throw Failure(SIMKIT_DDM_CANCELLED, fmt::format("pair listing cancelled: the callback returned {}", code));
    }
    return SIMKIT_DDM_OK;
  });
}

simkit_ddm_status simkit_ddm_incremental_last_report(const simkit_ddm_incremental* matcher,
                                                     simkit_ddm_apply_report* report) {
  if (report == nullptr) return SIMKIT_DDM_BAD_INPUT;
  if (matcher == nullptr || !matcher->has_report) {
    *report = simkit_ddm_apply_report{};
    return SIMKIT_DDM_BAD_INPUT;
  }
  *report = matcher->report;
  return SIMKIT_DDM_OK;
}

#define SIMKIT_DDM_DEFINE(SUFFIX, T)                                                                                   \
  simkit_ddm_status simkit_ddm_match_pairs_##SUFFIX(simkit_ddm_matcher* matcher, int dims, size_t ns,                  \
                                                    const uint64_t* s_ids, const T* s_lower, const T* s_upper,         \
                                                    size_t nu, const uint64_t* u_ids, const T* u_lower,                \
                                                    const T* u_upper, simkit_ddm_pair_callback callback, void* user) { \
    return match_pairs<T>(matcher, dims, ns, s_ids, s_lower, s_upper, nu, u_ids, u_lower, u_upper, callback, user);    \
  }                                                                                                                    \
  simkit_ddm_status simkit_ddm_count_pairs_##SUFFIX(                                                                   \
      simkit_ddm_matcher* matcher, int dims, size_t ns, const uint64_t* s_ids, const T* s_lower, const T* s_upper,     \
      size_t nu, const uint64_t* u_ids, const T* u_lower, const T* u_upper, uint64_t* count) {                         \
    return count_pairs<T>(matcher, dims, ns, s_ids, s_lower, s_upper, nu, u_ids, u_lower, u_upper, count);             \
  }                                                                                                                    \
  simkit_ddm_status simkit_ddm_count_per_region_##SUFFIX(                                                              \
      simkit_ddm_matcher* matcher, int dims, size_t ns, const uint64_t* s_ids, const T* s_lower, const T* s_upper,     \
      size_t nu, const uint64_t* u_ids, const T* u_lower, const T* u_upper, uint64_t* per_s, uint64_t* per_u) {        \
    return count_per_region<T>(matcher, dims, ns, s_ids, s_lower, s_upper, nu, u_ids, u_lower, u_upper, per_s, per_u); \
  }                                                                                                                    \
  simkit_ddm_status simkit_ddm_incremental_create_##SUFFIX(                                                            \
      simkit_ddm_matcher* options, int dims, size_t ns, const uint64_t* s_ids, const T* s_lower, const T* s_upper,     \
      size_t nu, const uint64_t* u_ids, const T* u_lower, const T* u_upper, simkit_ddm_incremental** out) {            \
    return incremental_create<T>(options, dims, ns, s_ids, s_lower, s_upper, nu, u_ids, u_lower, u_upper, out);        \
  }                                                                                                                    \
  simkit_ddm_status simkit_ddm_incremental_apply_##SUFFIX(                                                             \
      simkit_ddm_incremental* matcher, int dims, size_t changes, const simkit_ddm_change_kind* kinds,                  \
      const simkit_ddm_role* roles, const uint64_t* ids, const T* lower, const T* upper,                               \
      simkit_ddm_pair_callback gained, simkit_ddm_pair_callback lost, void* user) {                                    \
    return incremental_apply<T>(matcher, dims, changes, kinds, roles, ids, lower, upper, gained, lost, user);          \
  }
SIMKIT_DDM_DEFINE(u32, uint32_t)
SIMKIT_DDM_DEFINE(u64, uint64_t)
SIMKIT_DDM_DEFINE(f64, double)
#undef SIMKIT_DDM_DEFINE

}  // extern "C"
