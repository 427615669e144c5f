// angio cpu backend: the reference's row update, rows shared among OpenMP threads. Every node is
// computed by the same code from the same inputs, and the reductions are combined in the fixed
// row order, so fields and series are bitwise equal to reference whatever the thread count.
#include <omp.h>

#include <fmt/format.h>

#include "angio/kernels.hpp"

namespace simkit::angio::detail::cpu {
namespace {

template <class T>
class CpuSolver final : public Solver<T> {
 public:
  CpuSolver(const Problem& p, const Fields<T>& initial, int threads)
      : g_(p.grid),
        m_(typed<T>(p.model)),
        sc_(step_constants<T>(p)),
        threads_(effective_threads(threads)),
        u_(initial),
        next_(initial),
        rows_(static_cast<std::size_t>(g_.ny) * g_.nz) {}

  Reductions advance(std::int64_t steps, bool reduce) override {
    const std::int64_t rows = static_cast<std::int64_t>(rows_.size());
    for (std::int64_t s = 0; s < steps; ++s) {
      const bool last = reduce && s + 1 == steps;
      const T *n = u_.n.data(), *f = u_.f.data(), *c = u_.c.data();
      T *n_out = next_.n.data(), *f_out = next_.f.data(), *c_out = next_.c.data();
#pragma omp parallel for schedule(static) num_threads(threads_)
      for (std::int64_t r = 0; r < rows; ++r) {
        const int j = static_cast<int>(r % g_.ny), l = static_cast<int>(r / g_.ny);
        Reductions* row = nullptr;
        if (last) {
          rows_[r] = empty_reductions();
          row = &rows_[r];
        }
        step_row(g_, m_, sc_, n, f, c, n_out, f_out, c_out, j, l, row);
      }
      std::swap(u_, next_);
    }
    return reduce ? combine() : Reductions{};
  }

  Reductions reduce() override {
    const std::int64_t rows = static_cast<std::int64_t>(rows_.size());
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (std::int64_t r = 0; r < rows; ++r)
      rows_[r] = reduce_row(g_, u_, static_cast<int>(r % g_.ny), static_cast<int>(r / g_.ny));
    return combine();
  }

  void read(Fields<T>& out) override { out = u_; }
  std::string device() const override { return fmt::format("CPU, {} threads", threads_); }

 private:
  Reductions combine() const {
    Reductions total = empty_reductions();
    for (std::size_t r = 0; r < rows_.size(); ++r) {
      const int j = static_cast<int>(r % g_.ny), l = static_cast<int>(r / g_.ny);
      add_row(total, rows_[r], row_weight(g_, j, l));
    }
    scale_integrals(total, g_);
    return total;
  }

  Grid g_;
  TypedModelParams<T> m_;
  StepConstants<T> sc_;
  int threads_;
  Fields<T> u_, next_;
  std::vector<Reductions> rows_;
};

}  // namespace

template <class T>
std::unique_ptr<Solver<T>> make(const Problem& problem, const Fields<T>& initial, int threads) {
  return std::make_unique<CpuSolver<T>>(problem, initial, threads);
}
template std::unique_ptr<Solver<float>> make<float>(const Problem&, const Fields<float>&, int);
template std::unique_ptr<Solver<double>> make<double>(const Problem&, const Fields<double>&, int);

}  // namespace simkit::angio::detail::cpu
