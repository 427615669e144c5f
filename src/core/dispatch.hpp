#pragma once
// One dispatch for every engine: an engine's backends live in namespaces reference::, cpu:: and
// cuda:: (under the engine's detail namespace) and export the same functions with identical
// signatures, taking the engine's problem and the caller's RunOptions. SIMKIT_DISPATCH(backend,
// call) calls reference::call, cpu::call or cuda::call for a resolved backend, so the three must
// accept the same arguments (the compiler checks each). A build without CUDA provides cuda:: entry
// points that call throw_not_built.
#include <utility>

#include "simkit/core/backend.hpp"
#include "simkit/core/error.hpp"

namespace simkit {

// Calls the callable for `backend` (resolved: not Auto).
template <class Reference, class Cpu, class Cuda>
decltype(auto) pick_backend(Backend backend, Reference&& reference, Cpu&& cpu, Cuda&& cuda) {
  switch (backend) {
    case Backend::Reference:
      return std::forward<Reference>(reference)();
    case Backend::Cpu:
      return std::forward<Cpu>(cpu)();
    case Backend::Cuda:
      return std::forward<Cuda>(cuda)();
    case Backend::Auto:
      break;
  }
  throw InternalError("backend dispatch: the backend was not resolved (resolve_backend first)");
}

}  // namespace simkit

// Inside an engine's detail namespace: SIMKIT_DISPATCH(backend, run(problem, options)).
#define SIMKIT_DISPATCH(backend, call)                                                                   \
  ::simkit::pick_backend(                                                                                \
      (backend), [&]() -> decltype(auto) { return reference::call; }, [&]() -> decltype(auto) { return cpu::call; }, \
      [&]() -> decltype(auto) { return cuda::call; })
