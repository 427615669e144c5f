// ddm for Python: matching of (n, d, 2) region arrays; the Python layer checks dtypes and shapes
// and passes dimension-major lower and upper bounds.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <memory>
#include <numeric>

#include "common.hpp"
#include "simkit/ddm/ddm.hpp"
#include "simkit/ddm/generate.hpp"
#include "simkit/ddm/io.hpp"
#include "simkit/ddm/incremental.hpp"

namespace simkit::python {

namespace {

using namespace simkit::ddm;

template <class T>
using Bounds = nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu>;  // (d, n), dimension-major

template <class T>
RegionView<T> view_of(const Bounds<T>& lower, const Bounds<T>& upper, std::vector<std::uint64_t>& ids,
                      const char* which) {
  if (lower.shape(0) != upper.shape(0) || lower.shape(1) != upper.shape(1))
    throw UserError(which, ": lower and upper bounds differ in shape");
  const std::size_t d = lower.shape(0), n = lower.shape(1);
  if (d < 1 || d > static_cast<std::size_t>(kMaxDims))
    throw UserError(which, ": regions need 1 to " + std::to_string(kMaxDims) + " dimensions, got " + std::to_string(d));
  ids.resize(n);
  std::iota(ids.begin(), ids.end(), std::uint64_t{0});
  return RegionView<T>{static_cast<int>(d), n, ids.data(), lower.data(), upper.data()};
}

template <class T>
nb::object match(const Bounds<T>& s_lower, const Bounds<T>& s_upper, const Bounds<T>& u_lower,
                 const Bounds<T>& u_upper, const std::string& rule, const std::string& output,
                 const std::string& algorithm, const std::string& backend, int device, int threads) {
  std::vector<std::uint64_t> s_ids, u_ids;
  const RegionView<T> s = view_of(s_lower, s_upper, s_ids, "subscriptions");
  const RegionView<T> u = view_of(u_lower, u_upper, u_ids, "updates");
  if (s.dims != u.dims)
    throw UserError("updates", ": subscriptions have " + std::to_string(s.dims) + " dimensions, updates " +
                                   std::to_string(u.dims));
  MatchOptions o;
  static_cast<RunOptions&>(o) = run_options(backend, device, threads);
  o.rule = parse_rule(rule);
  o.algorithm = resolve_algorithm(parse_algorithm(algorithm), o.backend);
  validate(s, u);
  if (output == "count") {
    const MatchReport r = run_released(o, [&] { return count_pairs(s, u, o); });
    return nb::int_(r.pairs);
  }
  if (output == "per_region") {
    std::vector<std::uint64_t> per_s, per_u;
    run_released(o, [&] { return count_per_region(s, u, o, per_s, per_u); });
    const std::size_t ns = per_s.size(), nu = per_u.size();
    return nb::make_tuple(owned_array(std::move(per_s), {ns}), owned_array(std::move(per_u), {nu}));
  }
  if (output != "pairs") throw UserError("output", ": expected 'pairs', 'count' or 'per_region', got '" + output + "'");
  std::vector<std::uint64_t> flat;
  run_released(o, [&] {
    return match_pairs(s, u, o, [&](const Match* pairs, std::size_t count) {
      for (std::size_t k = 0; k < count; ++k) {
        flat.push_back(pairs[k].s);
        flat.push_back(pairs[k].u);
      }
    });
  });
  const std::size_t k = flat.size() / 2;
  return nb::cast(owned_array(std::move(flat), {k, 2}));
}

template <class T>
RegionSet<T> set_of(const Bounds<T>& lower, const Bounds<T>& upper,
                    nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> ids,
                    const char* which) {
  std::vector<std::uint64_t> scratch;
  const RegionView<T> v = view_of(lower, upper, scratch, which);
  if (ids.shape(0) != v.size)
    throw UserError(which, ": " + std::to_string(ids.shape(0)) + " ids for " + std::to_string(v.size) + " regions");
  RegionSet<T> r;
  r.dims = v.dims;
  r.ids.assign(ids.data(), ids.data() + v.size);
  r.lower.assign(v.lower, v.lower + static_cast<std::size_t>(v.dims) * v.size);
  r.upper.assign(v.upper, v.upper + static_cast<std::size_t>(v.dims) * v.size);
  return r;
}

nb::ndarray<nb::numpy, std::uint64_t> id_pairs(const std::vector<IdPair>& pairs) {
  std::vector<std::uint64_t> flat;
  flat.reserve(2 * pairs.size());
  for (const auto& [a, b] : pairs) {
    flat.push_back(a);
    flat.push_back(b);
  }
  return owned_array(std::move(flat), {pairs.size(), 2});
}

// The incremental matcher kept alive across ticks: the changes of a batch as arrays (kind 0 add,
// 1 move, 2 remove; role 0 subscription, 1 update; ids; bounds (k, d) each, ignored for removals).
template <class T>
class Incremental {
 public:
  Incremental(const Bounds<T>& s_lower, const Bounds<T>& s_upper,
              nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> s_ids,
              const Bounds<T>& u_lower, const Bounds<T>& u_upper,
              nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> u_ids,
              const std::string& rule, const std::string& algorithm, const std::string& backend, int device,
              int threads) {
    MatchOptions o;
    static_cast<RunOptions&>(o) = run_options(backend, device, threads);
    o.rule = parse_rule(rule);
    o.algorithm = resolve_algorithm(parse_algorithm(algorithm), o.backend);
    RegionSet<T> s = set_of(s_lower, s_upper, s_ids, "subscriptions");
    RegionSet<T> u = set_of(u_lower, u_upper, u_ids, "updates");
    if (s.dims != u.dims) throw UserError("updates", ": the two sets differ in dimensions");
    dims_ = s.dims;
    RunOptions guard_options = o;
    matcher_ = run_released(guard_options, [&] {
      return std::make_unique<IncrementalMatcher<T>>(std::move(s), std::move(u), o);
    });
  }

  nb::tuple apply(nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> kinds,
                  nb::ndarray<const std::uint8_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> roles,
                  nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu> ids,
                  nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu> lower,
                  nb::ndarray<const T, nb::ndim<2>, nb::c_contig, nb::device::cpu> upper) {
    const std::size_t k = kinds.shape(0);
    if (roles.shape(0) != k || ids.shape(0) != k || lower.shape(0) != k || upper.shape(0) != k)
      throw UserError("changes", ": kinds, roles, ids and bounds differ in length");
    if (k > 0 && (lower.shape(1) != static_cast<std::size_t>(dims_) || upper.shape(1) != static_cast<std::size_t>(dims_)))
      throw UserError("changes", ": bounds need " + std::to_string(dims_) + " values per change");
    std::vector<Change<T>> batch(k);
    for (std::size_t i = 0; i < k; ++i) {
      if (kinds(i) > 2) throw UserError("changes", ": kind must be 0 (add), 1 (move) or 2 (remove)");
      if (roles(i) > 1) throw UserError("changes", ": role must be 0 (subscription) or 1 (update)");
      Change<T>& c = batch[i];
      c.kind = static_cast<typename Change<T>::Kind>(kinds(i));
      c.role = roles(i) == 0 ? Role::Subscription : Role::Update;
      c.id = ids(i);
      if (c.kind != Change<T>::Kind::Remove) {
        c.lower.assign(lower.data() + i * static_cast<std::size_t>(dims_), lower.data() + (i + 1) * static_cast<std::size_t>(dims_));
        c.upper.assign(upper.data() + i * static_cast<std::size_t>(dims_), upper.data() + (i + 1) * static_cast<std::size_t>(dims_));
      }
    }
    RunOptions o = matcher_->options();
    const Delta d = run_released(o, [&] { return matcher_->apply(batch); });
    return nb::make_tuple(id_pairs(d.gained), id_pairs(d.lost));
  }

  std::uint64_t pairs() const { return matcher_->pairs(); }
  nb::ndarray<nb::numpy, std::uint64_t> pair_list() const { return id_pairs(matcher_->pair_list()); }
  int dims() const { return dims_; }
  double last_seconds() const { return matcher_->last_report().seconds; }

 private:
  std::unique_ptr<IncrementalMatcher<T>> matcher_;
  int dims_ = 1;
};

template <class T>
void bind_incremental(nb::module_& m, const char* name) {
  nb::class_<Incremental<T>>(m, name, "The incremental matcher (C++ IncrementalMatcher); use simkit.ddm.IncrementalMatcher.")
      .def(nb::init<const Bounds<T>&, const Bounds<T>&,
                    nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>, const Bounds<T>&,
                    const Bounds<T>&, nb::ndarray<const std::uint64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>,
                    const std::string&, const std::string&, const std::string&, int, int>(),
           nb::arg("s_lower"), nb::arg("s_upper"), nb::arg("s_ids"), nb::arg("u_lower"), nb::arg("u_upper"),
           nb::arg("u_ids"), nb::arg("rule") = "ieee1516", nb::arg("algorithm") = "auto", nb::arg("backend") = "auto",
           nb::arg("device") = 0, nb::arg("threads") = 0)
      .def("apply", &Incremental<T>::apply, nb::arg("kinds"), nb::arg("roles"), nb::arg("ids"), nb::arg("lower"),
           nb::arg("upper"), "Applies a batch; returns (gained, lost) as (k, 2) arrays of (subscription id, update id).")
      .def_prop_ro("pairs", &Incremental<T>::pairs)
      .def("pair_list", &Incremental<T>::pair_list, "Every current pair (subscription id, update id), sorted.")
      .def_prop_ro("dims", &Incremental<T>::dims)
      .def_prop_ro("last_seconds", &Incremental<T>::last_seconds);
}

// A set as (n, d, 2) [region, dimension, (lower, upper)] plus its ids.
template <class T>
nb::tuple set_arrays(const RegionSet<T>& r) {
  const std::size_t n = r.size(), d = static_cast<std::size_t>(r.dims);
  std::vector<T> packed(n * d * 2);
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t k = 0; k < d; ++k) {
      packed[(i * d + k) * 2] = r.lower[k * n + i];
      packed[(i * d + k) * 2 + 1] = r.upper[k * n + i];
    }
  std::vector<std::uint64_t> ids = r.ids;
  return nb::make_tuple(owned_array(std::move(packed), {n, d, 2}), owned_array(std::move(ids), {n}));
}

nb::tuple any_arrays(const AnyRegions& any) {
  return std::visit(
      [](const auto& r) {
        const nb::tuple s = set_arrays(r.subscriptions), u = set_arrays(r.updates);
        return nb::make_tuple(s[0], s[1], u[0], u[1]);
      },
      any);
}

}  // namespace

void bind_ddm(nb::module_& m) {
  m.def(
      "generate",
      [](std::uint64_t n, double alpha, int dims, const std::string& side, bool integer, bool clustered,
         std::uint64_t seed, double length) {
        GenerateOptions o;
        o.n = n;
        o.alpha = alpha;
        o.dims = dims;
        o.side = parse_side_rule(side);
        o.integer = integer;
        o.clustered = clustered;
        o.seed = seed;
        o.length = length;
        AnyRegions r;
        {
          nb::gil_scoped_release release;
          r = generate(o);
        }
        return any_arrays(r);
      },
      nb::arg("n"), nb::arg("alpha") = 1.0, nb::arg("dims") = 1, nb::arg("side") = "volume",
      nb::arg("integer") = false, nb::arg("clustered") = false, nb::arg("seed") = 1, nb::arg("length") = 1e6,
      "Marzolla's synthetic workload (simkit ddm generate): (S, S ids, U, U ids), regions as (n, d, 2).");
  m.def(
      "read_regions", [](const std::string& path) { return any_arrays(read_regions(path)); }, nb::arg("path"),
      "A region file (CSV or simkit's binary): (S, S ids, U, U ids), regions as (n, d, 2).");
  bind_incremental<std::uint32_t>(m, "IncrementalU32");
  bind_incremental<std::uint64_t>(m, "IncrementalU64");
  bind_incremental<double>(m, "IncrementalF64");
  const char* doc = "Intersecting pairs of two region sets (positions), their count or per-region counts.";
  const auto args = [] {
    return std::make_tuple(nb::arg("s_lower"), nb::arg("s_upper"), nb::arg("u_lower"), nb::arg("u_upper"),
                           nb::arg("rule") = "ieee1516", nb::arg("output") = "pairs", nb::arg("algorithm") = "auto",
                           nb::arg("backend") = "auto", nb::arg("device") = 0, nb::arg("threads") = 0);
  };
  std::apply([&](auto... a) { m.def("match_u32", &match<std::uint32_t>, a..., doc); }, args());
  std::apply([&](auto... a) { m.def("match_u64", &match<std::uint64_t>, a..., doc); }, args());
  std::apply([&](auto... a) { m.def("match_f64", &match<double>, a..., doc); }, args());
}

}  // namespace simkit::python
