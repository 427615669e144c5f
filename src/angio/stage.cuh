#pragma once
// Shared-memory staging of one plane of a field on a 32 x 8 tile plus its one-node ring, by
// asynchronous copies (cp.async): the continuous solver's staged kernel and the hybrid model's TAF
// diffusion use it to keep several planes' loads in flight without holding registers. The ring
// holds the mirror ghosts at the grid's faces, so every stencil operand is at a fixed offset.
#include <cuda_pipeline.h>

#include "angio/model.hpp"

namespace simkit::angio::detail {

struct StageTile {
  static constexpr int kX = 32, kY = 8, kThreads = kX * kY;
  static constexpr int kEx = kX + 2, kEy = kY + 2, kExt = kEx * kEy;
  static constexpr int kRing = kExt - kThreads;  // ring cells, corners included (84 < kThreads)

  int own;       // this thread's tile cell in the extended tile, row-major
  int own_src;   // its node's in-plane index (j nx + i) in the grid
  int ring;      // the ring cell this thread copies (-1: none)
  int ring_src;  // its source: a mirror ghost at the faces, anything valid beyond them

  // Index p of a plane sequence that may run one past either end of [0, n): mirrored.
  __device__ static int mirrored(int p, int n) {
    return p < 0 ? lower_neighbour(0, n) : (p >= n ? upper_neighbour(n - 1, n) : p);
  }

  // Thread `t` of the block whose tile starts at (i0, j0) on an nx x ny plane.
  __device__ StageTile(int t, int i0, int j0, int nx, int ny) {
    auto source = [&](int ex, int ey) { return mirrored(j0 - 1 + ey, ny) * nx + mirrored(i0 - 1 + ex, nx); };
    const int tx = t % kX, ty = t / kX;
    own = (ty + 1) * kEx + tx + 1;
    own_src = source(tx + 1, ty + 1);
    ring = -1;
    ring_src = 0;
    if (t < kRing) {  // the top and bottom rows, then the sides
      int ex, ey;
      if (t < 2 * kEx) {
        ex = t % kEx, ey = t < kEx ? 0 : kEy - 1;
      } else {
        const int u = t - 2 * kEx;
        ex = u < kY ? 0 : kEx - 1, ey = 1 + u % kY;
      }
      ring = ey * kEx + ex;
      ring_src = source(ex, ey);
    }
  }

  // Starts the copies of this thread's cells of one plane (`plane` points at its first node) into
  // `slot` (kExt values). Complete with __pipeline_commit / __pipeline_wait_prior, then a barrier.
  template <class T>
  __device__ void copy(T* slot, const T* plane) const {
    __pipeline_memcpy_async(slot + own, plane + own_src, sizeof(T));
    if (ring >= 0) __pipeline_memcpy_async(slot + ring, plane + ring_src, sizeof(T));
  }
};

}  // namespace simkit::angio::detail
