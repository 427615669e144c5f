#pragma once
// Flushing subnormal numbers to zero on the calling thread (x86: the MXCSR FTZ and DAZ bits), for a
// scope. angio's fp32 steps run so on every host backend, as the cuda backend's fp32 kernels do
// (nvcc --ftz=true): subnormal operands and results are zero, the same bits everywhere, and the
// CPU avoids the slow subnormal path (docs/reproducibility.md). No-op on other processors.
#if defined(__x86_64__) || defined(_M_X64)
#include <xmmintrin.h>
#endif

namespace simkit {

class FlushSubnormals {
 public:
  explicit FlushSubnormals(bool on) {
#if defined(__x86_64__) || defined(_M_X64)
    if (on) {
      saved_ = _mm_getcsr();
      _mm_setcsr(saved_ | 0x8040u);  // FTZ (bit 15) and DAZ (bit 6)
      active_ = true;
    }
#else
    (void)on;
#endif
  }
  ~FlushSubnormals() {
#if defined(__x86_64__) || defined(_M_X64)
    if (active_) _mm_setcsr(saved_);
#endif
  }
  FlushSubnormals(const FlushSubnormals&) = delete;
  FlushSubnormals& operator=(const FlushSubnormals&) = delete;

 private:
  unsigned saved_ = 0;
  bool active_ = false;
};

}  // namespace simkit
