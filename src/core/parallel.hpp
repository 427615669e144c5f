#pragma once
// OpenMP helpers every engine shares (docs/architecture.md, "Shared core"): a loop that carries the
// first exception out of the parallel region (an exception must never leave one: the program would
// terminate), and a parallel sort that needs only OpenMP and the standard library (libstdc++'s
// parallel mode tied ddm to one standard library).
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <utility>
#include <vector>

namespace simkit {

// The first exception thrown inside a parallel region, kept to be rethrown after it. guard() may be
// called from any thread of the region.
class ErrorSlot {
 public:
  template <class F>
  void guard(F&& f) noexcept {
    try {
      std::forward<F>(f)();
    } catch (...) {
#pragma omp critical(simkit_error_slot)
      if (!error_) error_ = std::current_exception();
      failed_.store(true, std::memory_order_relaxed);
    }
  }
  // Whether some guarded call threw (cheap: loops use it to skip the work left).
  bool failed() const noexcept { return failed_.load(std::memory_order_relaxed); }
  // Rethrows the kept exception, if any, and forgets it.
  void rethrow() {
    failed_.store(false, std::memory_order_relaxed);
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  std::exception_ptr error_;
  std::atomic<bool> failed_{false};
};

// How parallel_for shares the iterations: static blocks, or dynamic chunks of `chunk` iterations.
struct Schedule {
  int threads = 1;          // OpenMP threads (at least 1)
  std::int64_t chunk = 0;   // 0: static schedule; > 0: dynamic with this chunk
};

// Calls body(i) for every i in [begin, end) on schedule.threads threads. If a call throws, the
// iterations not yet started are skipped and the first exception is rethrown after the loop.
template <class F>
void parallel_for(std::int64_t begin, std::int64_t end, const Schedule& schedule, F&& body) {
  ErrorSlot errors;
  const int threads = std::max(1, schedule.threads);
  if (schedule.chunk > 0) {
    const std::int64_t chunk = schedule.chunk;
#pragma omp parallel for num_threads(threads) schedule(dynamic, chunk)
    for (std::int64_t i = begin; i < end; ++i) {
      if (!errors.failed()) errors.guard([&] { body(i); });
    }
  } else {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (std::int64_t i = begin; i < end; ++i) {
      if (!errors.failed()) errors.guard([&] { body(i); });
    }
  }
  errors.rethrow();
}

namespace detail {

// Merges the sorted runs [a, a_end) and [b, b_end) into out on up to `threads` threads: the output is
// cut into equal pieces and each piece's split point found by binary search along its diagonal
// (merge path), so every thread merges the same number of elements.
template <class It, class Out, class Cmp>
void parallel_merge(It a, It a_end, It b, It b_end, Out out, int threads, Cmp cmp) {
  using Diff = typename std::iterator_traits<It>::difference_type;
  const Diff na = a_end - a, nb = b_end - b, n = na + nb;
  const int pieces = static_cast<int>(std::clamp<Diff>(n / 8192, 1, threads));
  // The number of elements taken from a among the first `diagonal` of the output.
  auto split = [&](Diff diagonal) {
    Diff lo = std::max<Diff>(0, diagonal - nb), hi = std::min(diagonal, na);
    while (lo < hi) {
      const Diff mid = lo + (hi - lo) / 2;
      // Take a[mid] before b[diagonal - mid - 1] unless b's is strictly smaller (a first on ties).
      if (cmp(b[diagonal - mid - 1], a[mid])) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  };
#pragma omp parallel for num_threads(pieces) schedule(static, 1) if (pieces > 1)
  for (int p = 0; p < pieces; ++p) {
    const Diff d0 = n * p / pieces, d1 = n * (p + 1) / pieces;
    const Diff i0 = split(d0), i1 = split(d1);
    std::merge(std::make_move_iterator(a + i0), std::make_move_iterator(a + i1),
               std::make_move_iterator(b + (d0 - i0)), std::make_move_iterator(b + (d1 - i1)), out + d0, cmp);
  }
}

}  // namespace detail

// Sorts [first, last) by cmp on up to `threads` OpenMP threads: sorted blocks, then rounds of
// parallel pairwise merges through a buffer. As std::sort, the order of elements that compare
// equal is unspecified; with no such ties (keys that include a unique index) the result is the same
// whatever the thread count. Needs default-constructible, movable elements.
template <class It, class Cmp = std::less<>>
void parallel_sort(It first, It last, int threads, Cmp cmp = {}) {
  using Diff = typename std::iterator_traits<It>::difference_type;
  using Value = typename std::iterator_traits<It>::value_type;
  const Diff n = last - first;
  const int blocks = static_cast<int>(std::clamp<Diff>(n / 32768, 1, std::max(1, threads)));
  if (blocks == 1) {
    std::sort(first, last, cmp);
    return;
  }
  std::vector<Diff> bound(static_cast<std::size_t>(blocks) + 1);
  for (int b = 0; b <= blocks; ++b) bound[static_cast<std::size_t>(b)] = n * b / blocks;
#pragma omp parallel for num_threads(blocks) schedule(static, 1)
  for (int b = 0; b < blocks; ++b) {
    std::sort(first + bound[static_cast<std::size_t>(b)], first + bound[static_cast<std::size_t>(b) + 1], cmp);
  }
  std::vector<Value> buffer(static_cast<std::size_t>(n));
  bool in_buffer = false;  // where the current runs live
  for (int width = 1; width < blocks; width *= 2) {
    for (int b = 0; b < blocks; b += 2 * width) {
      const Diff lo = bound[static_cast<std::size_t>(b)];
      const Diff mid = bound[static_cast<std::size_t>(std::min(b + width, blocks))];
      const Diff hi = bound[static_cast<std::size_t>(std::min(b + 2 * width, blocks))];
      if (in_buffer) {
        detail::parallel_merge(buffer.begin() + lo, buffer.begin() + mid, buffer.begin() + mid, buffer.begin() + hi,
                               first + lo, threads, cmp);
      } else {
        detail::parallel_merge(first + lo, first + mid, first + mid, first + hi, buffer.begin() + lo, threads, cmp);
      }
    }
    in_buffer = !in_buffer;
  }
  if (in_buffer) std::move(buffer.begin(), buffer.end(), first);
}

}  // namespace simkit
