// angio cpu backend: rows shared among OpenMP threads, each updated by the vectorised row kernel
// of the widest instruction set the processor runs (cpu_rows.hpp). Every node is computed by the
// same formula from the same inputs in the same order as the reference, and the reductions are
// combined in the fixed row order, so fields and series are bitwise equal to reference whatever
// the thread count and instruction set.
#include <omp.h>

#include <fmt/format.h>

#include <string_view>
#include <type_traits>

#include "angio/continuous/cpu_rows.hpp"
#include "angio/continuous/kernels.hpp"
#include "core/subnormal.hpp"

namespace simkit::angio::detail::cpu {

const char* instruction_set() {
#ifdef SIMKIT_ANGIO_X86
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return "avx512";
  if (__builtin_cpu_supports("avx2")) return "avx2";
#endif
  return "generic";
}

template <class T>
StepRows<T> row_function() {
#ifdef SIMKIT_ANGIO_X86
  const std::string_view isa = instruction_set();
  if (isa == "avx512") return &avx512::step_rows<T>;
  if (isa == "avx2") return &avx2::step_rows<T>;
#endif
  return &generic::step_rows<T>;
}
template StepRows<float> row_function<float>();
template StepRows<double> row_function<double>();

namespace {

template <class T>
class CpuSolver final : public Solver<T> {
 public:
  CpuSolver(const Problem& p, const Fields<T>& initial, int threads, const SlabSetup& slab)
      : g_(p.grid),
        m_(typed<T>(p.model)),
        sc_(step_constants<T>(p)),
        s_(slab),
        threads_(effective_threads(threads)),
        u_(initial),
        next_(initial),
        rows_(static_cast<std::size_t>(g_.ny) * static_cast<std::size_t>(s_.slab.own_end - s_.slab.own_begin)),
        step_rows_(row_function<T>()) {}

  Reductions advance(std::int64_t steps, bool reduce) override {
    const std::int64_t rows = static_cast<std::int64_t>(rows_.size());
    const std::int64_t row0 = static_cast<std::int64_t>(s_.slab.own_begin) * g_.ny;  // the slab's own rows
    for (std::int64_t s = 0; s < steps; ++s) {
      const bool last = reduce && s + 1 == steps;
      const RowTask<T> task{g_,           m_,           sc_,          u_.n.data(), u_.f.data(), u_.c.data(),
                            next_.n.data(), next_.f.data(), next_.c.data()};
#pragma omp parallel num_threads(threads_)
      {
        const FlushSubnormals flush(std::is_same_v<T, float>);  // as the reference (a thread's own flag)
        // Contiguous blocks of rows, (l, j) order: a thread's planes stay in its caches.
        const std::int64_t workers = omp_get_num_threads(), me = omp_get_thread_num();
        const std::int64_t first = rows * me / workers, end = rows * (me + 1) / workers;
        step_rows_(task, row0 + first, row0 + end);
        if (last) {
          for (std::int64_t r = first; r < end; ++r)
            rows_[r] = reduce_row(g_, next_, static_cast<int>((row0 + r) % g_.ny), static_cast<int>((row0 + r) / g_.ny));
        }
      }
      std::swap(u_, next_);
      exchange_ghosts(g_, s_, u_, halo_);
    }
    return reduce ? combine() : Reductions{};
  }

  Reductions reduce() override {
    const std::int64_t rows = static_cast<std::int64_t>(rows_.size());
    const std::int64_t row0 = static_cast<std::int64_t>(s_.slab.own_begin) * g_.ny;
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (std::int64_t r = 0; r < rows; ++r)
      rows_[r] = reduce_row(g_, u_, static_cast<int>((row0 + r) % g_.ny), static_cast<int>((row0 + r) / g_.ny));
    return combine();
  }

  void read(Fields<T>& out) override { out = u_; }
  std::string device() const override { return fmt::format("CPU, {} threads, {}", threads_, instruction_set()); }

 private:
  // Rows in (l, j) order, then the ranks in order (fold_rows): the same sums whatever the thread
  // and rank counts.
  Reductions combine() const { return fold_rows(g_, s_, rows_); }

  Grid g_;
  TypedModelParams<T> m_;
  StepConstants<T> sc_;
  SlabSetup s_;
  HostHalo<T> halo_;
  int threads_;
  Fields<T> u_, next_;
  std::vector<Reductions> rows_;
  StepRows<T> step_rows_;
};

}  // namespace

template <class T>
std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, const RunOptions& options,
                                const SlabSetup& slab) {
  return std::make_unique<CpuSolver<T>>(problem, initial, options.threads, slab);
}
template std::unique_ptr<Solver<float>> make<float>(const Problem&, const Fields<float>&, const RunOptions&,
                                                   const SlabSetup&);
template std::unique_ptr<Solver<double>> make<double>(const Problem&, const Fields<double>&, const RunOptions&,
                                                     const SlabSetup&);

}  // namespace simkit::angio::detail::cpu
