// angio solvers: every backend against the reference on random grids and fields (one suite
// parameterised over the backends: cpu with 1, 2, 3 and 7 threads, and cuda with its default
// kernels, which skips with the reason without a usable device), and the reductions the series is
// made of. The cuda kernels' own variants (tunings, chunks, the carried face) are in
// solver_cuda_test.cpp.
//
// The cpu backend runs the reference's per-node formula (update_node) in vectorised row loops, one
// build per instruction set (cpu_rows.hpp), on rows shared among threads, and combines the per-row
// reductions in the fixed row order; the cuda kernels run the same formula with --fmad=false. So
// docs/angio.md promises fields bitwise equal to reference, and reductions bitwise equal on cpu
// (minima and maxima equal on cuda, integrals to ~1e-15, summed in another order).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "simkit/angio/angio.hpp"
#include "angio/continuous/cpu_rows.hpp"
#include "angio/continuous/kernels.hpp"
#include "fields.hpp"
#include "support/test_support.hpp"

namespace simkit::angio {
namespace {

// n in [0.5, 1.5], f in [0.5, 0.7], c in [0.45, 0.65]: gentle enough that, with D = 0.01
// (kModel), 37 steps at half the largest stable k stay finite in both forms -- the expanded
// form's central taxis terms blow up within a few dozen steps on steep fields at the default D,
// and a comparison of NaNs with NaNs would prove little.
template <class T>
Fields<T> random_fields(const Grid& g, std::mt19937_64& rng) {
  return test_fields::smooth_fields<T>(g, rng, 0.1, 0.1);
}

// A random grid: each side 2..19 (nz = 1 about one time in three: the 2D model), h = 1/(nx-1).
// Case 0 is always 2D and case 1 always has a side of 2 nodes (every node on a boundary), so
// that each test meets both whatever the seed.
Grid random_grid(std::mt19937_64& rng, int case_index) {
  std::uniform_int_distribution<int> side(2, 19), coin(0, 2);
  Grid g;
  g.nx = side(rng);
  g.ny = side(rng);
  g.nz = coin(rng) == 0 || case_index == 0 ? 1 : side(rng);
  if (case_index == 1) g.ny = 2;
  if (case_index == 2) {  // more rows of j than the cpu backend's traversal blocks (32), a partial last one
    g.ny = 70;
    g.nz = 5;
  }
  g.h = 1.0 / (g.nx - 1);
  return g;
}

template <class T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

bool same_bits(const Reductions& a, const Reductions& b) { return std::memcmp(&a, &b, sizeof(Reductions)) == 0; }

std::string describe(const Reductions& r) {
  return fmt::format("int {} {} {}, min {} {} {}, max {} {} {}", r.integral[0], r.integral[1], r.integral[2], r.min[0],
                     r.min[1], r.min[2], r.max[0], r.max[1], r.max[2]);
}

RunOptions cpu_options(int threads) {
  RunOptions o;
  o.backend = Backend::Cpu;
  o.threads = threads;
  return o;
}

// The problem of one random case, with k = half the largest stable step of its initial fields.
ModelParams model() {
  ModelParams m;  // A&C's defaults with a larger cell motility
  m.diffusion = 0.01;
  return m;
}

template <class T>
bool all_finite(const Fields<T>& u) {
  for (const auto* v : {&u.n, &u.f, &u.c})
    for (T x : *v)
      if (!std::isfinite(x)) return false;
  return true;
}

template <class T>
Problem random_problem(const Grid& g, Form form, const Fields<T>& u) {
  Problem p;
  p.grid = g;
  p.model = model();
  p.form = form;
  p.precision = std::is_same_v<T, float> ? Precision::Fp32 : Precision::Fp64;
  const StabilityReport r = check_stability(p, u);
  p.dt = 0.5 * r.largest_stable_k;
  enforce_stability(p, r, false);  // the random fields must give a problem the run would accept
  return p;
}

constexpr int kSteps = 37;
constexpr int kCases = 8;

class AngioSolverBackend : public testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    if (GetParam() == Backend::Cuda) SIMKIT_SKIP_WITHOUT_CUDA();
  }

  // The backend's option sets: every thread count that could change a cpu result; cuda once.
  std::vector<RunOptions> variants() const {
    if (GetParam() == Backend::Cpu) {
      std::vector<RunOptions> out;
      for (int threads : {1, 2, 3, 7}) out.push_back(cpu_options(threads));
      return out;
    }
    RunOptions o;
    o.backend = GetParam();
    return {o};
  }

  static void expect_reductions(const Reductions& got, const Reductions& want, Backend backend) {
    if (backend == Backend::Cpu) {
      EXPECT_TRUE(same_bits(got, want)) << "got " << describe(got) << "\nreference " << describe(want);
      return;
    }
    for (int q = 0; q < 3; ++q) {
      EXPECT_EQ(got.min[q], want.min[q]);
      EXPECT_EQ(got.max[q], want.max[q]);
      EXPECT_NEAR(got.integral[q], want.integral[q], 1e-11 * std::abs(want.integral[q]));
    }
  }

  template <class T>
  void expect_bitwise_equal_to_reference(Form form, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int c = 0; c < kCases; ++c) {
      const Grid g = random_grid(rng, c);
      const Fields<T> u0 = random_fields<T>(g, rng);
      const Problem p = random_problem(g, form, u0);
      SCOPED_TRACE(fmt::format("seed {}, case {}: grid {}x{}x{}, {}, {}, k = {}", seed, c, g.nx, g.ny, g.nz,
                               form == Form::Flux ? "flux" : "expanded", sizeof(T) == 4 ? "fp32" : "fp64", p.dt));
      RunOptions ro;
      ro.backend = Backend::Reference;
      auto reference = make_solver<T>(p, u0, Backend::Reference, ro);
      const Reductions want = reference->advance(kSteps, true);
      Fields<T> want_fields;
      reference->read(want_fields);
      ASSERT_TRUE(all_finite(want_fields));
      for (const RunOptions& o : variants()) {
        SCOPED_TRACE(fmt::format("{}, {} threads", to_string(o.backend), o.threads));
        auto solver = make_solver<T>(p, u0, o.backend, o);
        const Reductions got = solver->advance(kSteps, true);
        Fields<T> got_fields;
        solver->read(got_fields);
        EXPECT_TRUE(same_bits(got_fields.n, want_fields.n));
        EXPECT_TRUE(same_bits(got_fields.f, want_fields.f));
        EXPECT_TRUE(same_bits(got_fields.c, want_fields.c));
        expect_reductions(got, want, o.backend);
      }
      // And the same state stepped in chunks (as the run driver does) ends where one call does.
      const RunOptions o = variants().back();
      auto chunked = make_solver<T>(p, u0, o.backend, o);
      chunked->advance(10, false);
      chunked->advance(20, true);
      const Reductions got = chunked->advance(kSteps - 30, true);
      Fields<T> got_fields;
      chunked->read(got_fields);
      EXPECT_TRUE(same_bits(got_fields.n, want_fields.n) && same_bits(got_fields.f, want_fields.f) &&
                  same_bits(got_fields.c, want_fields.c));
      expect_reductions(got, want, o.backend);
    }
  }
};

TEST_P(AngioSolverBackend, EqualsReferenceBitwiseFp64Expanded) {
  expect_bitwise_equal_to_reference<double>(Form::Expanded, test::printed_seed(101));
}
TEST_P(AngioSolverBackend, EqualsReferenceBitwiseFp64Flux) {
  expect_bitwise_equal_to_reference<double>(Form::Flux, test::printed_seed(102));
}
TEST_P(AngioSolverBackend, EqualsReferenceBitwiseFp32Expanded) {
  expect_bitwise_equal_to_reference<float>(Form::Expanded, test::printed_seed(103));
}
TEST_P(AngioSolverBackend, EqualsReferenceBitwiseFp32Flux) {
  expect_bitwise_equal_to_reference<float>(Form::Flux, test::printed_seed(104));
}

std::string backend_name(const testing::TestParamInfo<Backend>& info) { return std::string(to_string(info.param)); }
INSTANTIATE_TEST_SUITE_P(, AngioSolverBackend, testing::Values(Backend::Cpu, Backend::Cuda), backend_name);

// The solver's stepped state against step_reference, the free function the analytic tests use.
// Every instruction-set build of the cpu row kernel that this processor runs (generic always; avx2
// and avx512 where supported) gives the reference step's bits: both forms and precisions, TAF
// diffusion on and off, both chemotactic sensitivities, wide rows (the vector loop and its
// remainder) and narrow ones, and fields with subnormal values (fp32's n tail underflows in A&C's
// initial state).
template <class T>
void expect_every_build_equals_reference(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::pair<const char*, detail::cpu::StepRows<T>>> builds = {{"generic", &detail::cpu::generic::step_rows<T>}};
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) builds.push_back({"avx2", &detail::cpu::avx2::step_rows<T>});
  if (__builtin_cpu_supports("avx512f")) builds.push_back({"avx512", &detail::cpu::avx512::step_rows<T>});
#endif
  std::printf("instruction sets tested: %zu (this processor's widest: %s)\n", builds.size(),
              detail::cpu::instruction_set());
  for (int c = 0; c < 16; ++c) {
    Grid g = random_grid(rng, c);
    if (c % 4 == 3) g.nx = 37 + c;  // rows longer than any vector, with a remainder
    g.h = 1.0 / (g.nx - 1);
    Fields<T> u0 = random_fields<T>(g, rng);
    if (c % 2 == 1) u0.n[u0.n.size() / 2] = std::numeric_limits<T>::denorm_min() * 3;
    for (Form form : {Form::Expanded, Form::Flux}) {
      Problem p = random_problem(g, form, u0);
      p.model.taf_diffusion = c % 3 == 0 ? 0.002 : 0.0;
      p.model.sensitivity = c % 5 == 1 ? Sensitivity::Constant : Sensitivity::Receptor;
      Fields<T> want;
      step_reference<T>(g, p.model, static_cast<T>(p.dt), u0, want, form);
      for (const auto& [name, step_rows] : builds) {
        SCOPED_TRACE(fmt::format("seed {}, case {}: grid {}x{}x{}, {}, D_c {}, {}", seed, c, g.nx, g.ny, g.nz,
                                 form == Form::Flux ? "flux" : "expanded", p.model.taf_diffusion, name));
        Fields<T> got{std::vector<T>(g.nodes()), std::vector<T>(g.nodes()), std::vector<T>(g.nodes())};
        const detail::cpu::RowTask<T> task{g,           typed<T>(p.model), detail::step_constants<T>(p),
                                           u0.n.data(), u0.f.data(),       u0.c.data(),
                                           got.n.data(), got.f.data(),     got.c.data()};
        step_rows(task, 0, static_cast<std::int64_t>(g.ny) * g.nz);
        EXPECT_TRUE(same_bits(got.n, want.n));
        EXPECT_TRUE(same_bits(got.f, want.f));
        EXPECT_TRUE(same_bits(got.c, want.c));
      }
    }
  }
}
TEST(AngioSolver, EveryCpuBuildEqualsReferenceFp32) { expect_every_build_equals_reference<float>(test::printed_seed(111)); }
TEST(AngioSolver, EveryCpuBuildEqualsReferenceFp64) { expect_every_build_equals_reference<double>(test::printed_seed(112)); }

TEST(AngioSolver, ReferenceSolverFollowsStepReference) {
  const std::uint64_t seed = test::printed_seed(105);
  std::mt19937_64 rng(seed);
  for (Form form : {Form::Expanded, Form::Flux}) {
    const Grid g = random_grid(rng, form == Form::Flux ? 0 : 2);
    const Fields<double> u0 = random_fields<double>(g, rng);
    const Problem p = random_problem(g, form, u0);
    auto solver = make_solver<double>(p, u0, Backend::Reference, RunOptions{});
    solver->advance(5, false);
    Fields<double> got, u = u0, next;
    solver->read(got);
    for (int s = 0; s < 5; ++s) {
      step_reference(g, p.model, p.dt, u, next, form);
      std::swap(u, next);
    }
    EXPECT_TRUE(same_bits(got.n, u.n) && same_bits(got.f, u.f) && same_bits(got.c, u.c))
        << "grid " << g.nx << "x" << g.ny << "x" << g.nz;
  }
}

// reduce() (a separate pass) and advance(.., true) (fused into the last step) agree bitwise; the
// integral agrees with angio::integral (a different summation order: nodes one by one instead of
// rows, so within 1e-12 relative -- a few thousand additions of positive terms round to < 1e-13);
// min and max are exactly the extreme values of the fields.
template <class T>
void expect_reductions_match_the_fields(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  for (int c = 0; c < kCases; ++c) {
    const Grid g = random_grid(rng, c);
    const Fields<T> u0 = random_fields<T>(g, rng);
    const Problem p = random_problem(g, c % 2 == 0 ? Form::Flux : Form::Expanded, u0);
    SCOPED_TRACE(fmt::format("seed {}, case {}: grid {}x{}x{}", seed, c, g.nx, g.ny, g.nz));
    for (Backend backend : {Backend::Reference, Backend::Cpu}) {
      auto solver = make_solver<T>(p, u0, backend, cpu_options(3));
      const Reductions fused = solver->advance(kSteps, true);
      const Reductions separate = solver->reduce();
      EXPECT_TRUE(same_bits(fused, separate)) << describe(fused) << "\n" << describe(separate);
      Fields<T> u;
      solver->read(u);
      ASSERT_TRUE(all_finite(u));
      const std::vector<T>* fields[3] = {&u.n, &u.f, &u.c};
      for (int q = 0; q < 3; ++q) {
        const std::vector<T>& v = *fields[q];
        const double want = integral(g, v);
        EXPECT_NEAR(fused.integral[q], want, 1e-12 * std::fabs(want)) << "field " << q;
        EXPECT_EQ(fused.min[q], static_cast<double>(*std::min_element(v.begin(), v.end()))) << "field " << q;
        EXPECT_EQ(fused.max[q], static_cast<double>(*std::max_element(v.begin(), v.end()))) << "field " << q;
      }
    }
  }
}

TEST(AngioSolver, ReductionsMatchTheFieldsFp64) { expect_reductions_match_the_fields<double>(test::printed_seed(106)); }
TEST(AngioSolver, ReductionsMatchTheFieldsFp32) { expect_reductions_match_the_fields<float>(test::printed_seed(107)); }

// A blown-up run must not look tidy: one NaN node makes that field's min, max and integral NaN,
// wherever it sits (first node, an interior node, last node) and whatever the thread split. In the
// state as given (reduce()) only the poisoned field is NaN; one step later the NaN has reached the
// neighbouring n values and f and c at that node (their updates read n), so all three are NaN.
template <class T>
void expect_nan_poisons_reductions(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  const Grid g{11, 7, 5, 0.1};
  const Fields<T> clean = random_fields<T>(g, rng);
  Problem p;
  p.grid = g;
  p.model = model();
  p.dt = 0.5 * check_stability(p, clean).largest_stable_k;
  for (std::size_t node : {std::size_t{0}, g.index(5, 3, 2), g.nodes() - 1})
    for (int q = 0; q < 3; ++q)
      for (Backend backend : {Backend::Reference, Backend::Cpu}) {
        SCOPED_TRACE(fmt::format("seed {}, NaN in field {} at node {}, backend {}", seed, q, node,
                                 backend == Backend::Cpu ? "cpu" : "reference"));
        Fields<T> u = clean;
        std::vector<T>* fields[3] = {&u.n, &u.f, &u.c};
        (*fields[q])[node] = std::numeric_limits<T>::quiet_NaN();
        auto solver = make_solver<T>(p, u, backend, cpu_options(3));
        const Reductions now = solver->reduce();
        for (int r = 0; r < 3; ++r) {
          EXPECT_EQ(std::isnan(now.min[r]), r == q) << "min of field " << r;
          EXPECT_EQ(std::isnan(now.max[r]), r == q) << "max of field " << r;
          EXPECT_EQ(std::isnan(now.integral[r]), r == q) << "integral of field " << r;
        }
        const Reductions next = solver->advance(1, true);
        // A NaN in n spreads to f and c at its node; a NaN in f or c spreads to n through the
        // taxis terms. So after one step every field with a NaN source is NaN in its reductions.
        EXPECT_TRUE(std::isnan(next.min[q]) && std::isnan(next.max[q]) && std::isnan(next.integral[q]));
        EXPECT_TRUE(std::isnan(next.min[0]) && std::isnan(next.max[0]) && std::isnan(next.integral[0]));
      }
}

TEST(AngioSolver, NanInOneNodeMakesThatFieldsReductionsNan) {
  const std::uint64_t seed = test::printed_seed(108);
  expect_nan_poisons_reductions<double>(seed);
  expect_nan_poisons_reductions<float>(seed);
}

}  // namespace
}  // namespace simkit::angio
