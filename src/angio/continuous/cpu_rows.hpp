#pragma once
// The cpu backend's row update (docs/angio.md, "Backends"): the interior of each (j, l) row in a
// loop without mirror branches that the compiler vectorises, the two boundary nodes through the
// reference's neighbour lookup. The same update_node formula in the same operand order as the
// reference, and IEEE vector arithmetic (no FMA contraction, no approximate reciprocals), so every
// instruction-set build gives the reference's bits. cpu_rows.cpp is compiled once per instruction
// set; the solver picks the widest one the processor supports.
#include <cstdint>

#include "angio/model.hpp"
#include "simkit/angio/angio.hpp"

namespace simkit::angio::detail::cpu {

template <class T>
struct RowTask {
  Grid grid;
  TypedModelParams<T> model;
  StepConstants<T> constants;
  const T* n;
  const T* f;
  const T* c;
  T* n_out;
  T* f_out;
  T* c_out;
};

// Updates rows first..last-1 (row r is j = r % ny, l = r / ny) from the task's input into its output.
template <class T>
using StepRows = void (*)(const RowTask<T>& task, std::int64_t first, std::int64_t last);

#define SIMKIT_ANGIO_CPU_ISA(isa)                                                      \
  namespace isa {                                                                      \
  template <class T>                                                                   \
  void step_rows(const RowTask<T>& task, std::int64_t first, std::int64_t last);       \
  }
SIMKIT_ANGIO_CPU_ISA(generic)
SIMKIT_ANGIO_CPU_ISA(avx2)
SIMKIT_ANGIO_CPU_ISA(avx512)
#undef SIMKIT_ANGIO_CPU_ISA

// The widest build this processor runs ("avx512", "avx2" or "generic") and its row function.
const char* instruction_set();
template <class T>
StepRows<T> row_function();

}  // namespace simkit::angio::detail::cpu
