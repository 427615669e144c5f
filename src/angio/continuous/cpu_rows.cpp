// One instruction-set build of the cpu backend's row update (cpu_rows.hpp): CMake compiles this
// file once per namespace SIMKIT_ANGIO_ISA (generic, avx2, avx512) with that set's flags.
#include "angio/continuous/cpu_rows.hpp"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "angio/continuous/kernels.hpp"

#ifdef SIMKIT_ANGIO_X86
#include <immintrin.h>
#endif

#ifndef SIMKIT_ANGIO_ISA
#error "compile with -DSIMKIT_ANGIO_ISA=generic|avx2|avx512"
#endif

namespace simkit::angio::detail::cpu::SIMKIT_ANGIO_ISA {
namespace {

// Nodes 1..nx-2 of a row (n, f, c point at its node 0; the outputs are the row's own) without
// mirror branches: i +- 1 are plain neighbours, the j and l mirrors the fixed offsets jp, jm, lp, lm.
template <int kDims, bool kFlux, bool kTaf, class T>
void interior(const TypedModelParams<T>& m, const StepConstants<T>& sc, const T* __restrict n,
              const T* __restrict f, const T* __restrict c, T* __restrict n_out, T* __restrict f_out,
              T* __restrict c_out, std::ptrdiff_t nx, std::ptrdiff_t jp, std::ptrdiff_t jm, std::ptrdiff_t lp,
              std::ptrdiff_t lm) {
#pragma GCC ivdep  // (not omp simd: its per-lane copies of the stencil arrays defeat the vectoriser)
  for (std::ptrdiff_t i = 1; i < nx - 1; ++i) {
    Stencil<T> s;
    T nn[7];
    s.c[0] = c[i], s.f[0] = f[i], nn[0] = n[i];
    s.c[1] = c[i + 1], s.f[1] = f[i + 1], nn[1] = n[i + 1];
    s.c[2] = c[i - 1], s.f[2] = f[i - 1], nn[2] = n[i - 1];
    s.c[3] = c[i + jp], s.f[3] = f[i + jp], nn[3] = n[i + jp];
    s.c[4] = c[i + jm], s.f[4] = f[i + jm], nn[4] = n[i + jm];
    s.c[5] = c[i + lp], s.f[5] = f[i + lp], nn[5] = n[i + lp];
    s.c[6] = c[i + lm], s.f[6] = f[i + lm], nn[6] = n[i + lm];
    T n_new, f_new, c_new;
    update_node_taf<kDims, kFlux, kTaf>(m, sc, nn, s, n_new, f_new, c_new);
    n_out[i] = n_new;
    f_out[i] = f_new;
    c_out[i] = c_new;
  }
}

// Copies a finished row to the output with non-temporal stores where the build has them: the
// output is not read again in this step, and skipping the read-for-ownership of every line it
// writes saves a third of the step's memory traffic.
template <class T>
void stream_row(T* __restrict dst, const T* __restrict src, std::ptrdiff_t count) {
  std::ptrdiff_t k = 0;
#ifdef SIMKIT_ANGIO_X86
  constexpr std::ptrdiff_t kBytes = 16;  // SSE2 streaming stores, in every x86-64 build
  while (k < count && reinterpret_cast<std::uintptr_t>(dst + k) % kBytes != 0) {
    dst[k] = src[k];
    ++k;
  }
  constexpr std::ptrdiff_t kLanes = kBytes / static_cast<std::ptrdiff_t>(sizeof(T));
  for (; k + kLanes <= count; k += kLanes) {
    if constexpr (sizeof(T) == 4) {
      _mm_stream_ps(reinterpret_cast<float*>(dst + k), _mm_loadu_ps(reinterpret_cast<const float*>(src + k)));
    } else {
      _mm_stream_pd(reinterpret_cast<double*>(dst + k), _mm_loadu_pd(reinterpret_cast<const double*>(src + k)));
    }
  }
#endif
  for (; k < count; ++k) dst[k] = src[k];
}

// Rows of j per block of the traversal (rows(), below): 32 rows of 400 nodes, three fields, three
// planes is 0.9 MB in fp64, inside a core's L2.
constexpr std::int64_t kBlockRows = 32;

template <int kDims, bool kFlux, class T>
void rows(const RowTask<T>& t, std::int64_t first, std::int64_t last) {
  const Grid& g = t.grid;
  const std::ptrdiff_t nx = g.nx, plane = nx * g.ny;
  const T* n = t.n;
  const T* f = t.f;
  const T* c = t.c;
  T* __restrict n_out = t.n_out;
  T* __restrict f_out = t.f_out;
  T* __restrict c_out = t.c_out;
  const TypedModelParams<T> m = t.model;
  const StepConstants<T> sc = t.constants;
  // The row is computed into these (L1-resident) and then streamed out.
  thread_local std::vector<T> row_n, row_f, row_c;
  row_n.resize(static_cast<std::size_t>(nx));
  row_f.resize(static_cast<std::size_t>(nx));
  row_c.resize(static_cast<std::size_t>(nx));
  auto step_row_at = [&](std::int64_t r) {
    const int j = static_cast<int>(r % g.ny), l = static_cast<int>(r / g.ny);
    const std::ptrdiff_t base = l * plane + static_cast<std::ptrdiff_t>(j) * nx;
    // The boundary nodes of the row, with the reference's mirror lookups.
    for (const int i : {0, g.nx - 1}) {
      if (i > 0 && g.nx == 1) break;
      update_at(g, m, sc, n, f, c, i, j, l, row_n[i], row_f[i], row_c[i]);
    }
    // The interior, decided once per row whether TAF diffuses.
    const std::ptrdiff_t jp = (upper_neighbour(j, g.ny) - j) * nx, jm = (lower_neighbour(j, g.ny) - j) * nx;
    const std::ptrdiff_t lp = (upper_neighbour(l, g.nz) - l) * plane, lm = (lower_neighbour(l, g.nz) - l) * plane;
    if (m.taf_diffusion != 0) {
      interior<kDims, kFlux, true>(m, sc, n + base, f + base, c + base, row_n.data(), row_f.data(), row_c.data(), nx,
                                   jp, jm, lp, lm);
    } else {
      interior<kDims, kFlux, false>(m, sc, n + base, f + base, c + base, row_n.data(), row_f.data(), row_c.data(), nx,
                                    jp, jm, lp, lm);
    }
    stream_row(n_out + base, row_n.data(), nx);
    stream_row(f_out + base, row_f.data(), nx);
    stream_row(c_out + base, row_c.data(), nx);
  };
  // The range's rows in blocks of kBlockRows rows of j, each block marched up through the range's
  // planes: the planes l - 1, l and l + 1 of a block stay in the core's L2 from one plane to the
  // next, so each input row comes from memory about once (three planes of three fields do not fit:
  // 11.5 MB at 400 x 400 in fp64). Every node's value is independent of the order, and the
  // reductions are per row: the same bits.
  const std::int64_t ny = g.ny;
  const std::int64_t l_first = first / ny, l_last = (last - 1) / ny;
  for (std::int64_t jb = 0; jb < ny; jb += kBlockRows) {
    for (std::int64_t l = l_first; l <= l_last; ++l) {
      const std::int64_t r_begin = std::max(first, l * ny + jb);
      const std::int64_t r_end = std::min(last, l * ny + std::min<std::int64_t>(jb + kBlockRows, ny));
      for (std::int64_t r = r_begin; r < r_end; ++r) step_row_at(r);
    }
  }
#ifdef SIMKIT_ANGIO_X86
  _mm_sfence();  // the streamed rows are visible to every thread after the step's barrier
#endif
}

}  // namespace

template <class T>
void step_rows(const RowTask<T>& t, std::int64_t first, std::int64_t last) {
  if (t.constants.dims == 3) {
    t.constants.flux ? rows<3, true>(t, first, last) : rows<3, false>(t, first, last);
  } else {
    t.constants.flux ? rows<2, true>(t, first, last) : rows<2, false>(t, first, last);
  }
}

template void step_rows<float>(const RowTask<float>&, std::int64_t, std::int64_t);
template void step_rows<double>(const RowTask<double>&, std::int64_t, std::int64_t);

}  // namespace simkit::angio::detail::cpu::SIMKIT_ANGIO_ISA
