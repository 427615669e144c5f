// ddm for Python: matching of (n, d, 2) region arrays; the Python layer checks dtypes and shapes
// and passes dimension-major lower and upper bounds.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <numeric>

#include "common.hpp"
#include "simkit/ddm/ddm.hpp"

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

}  // namespace

void bind_ddm(nb::module_& m) {
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
