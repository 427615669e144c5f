#pragma once
// Plumbing shared by the bindings: run options from Python arguments, running an engine with the
// GIL released and Ctrl-C turned into RunOptions::stop, and simkit's errors as Python exceptions.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <optional>
#include <type_traits>
#include <string>
#include <utility>
#include <vector>

#include "simkit/core/backend.hpp"
#include "simkit/core/error.hpp"

namespace simkit::python {

namespace nb = nanobind;

// backend "auto" | "reference" | "cpu" | "cuda" (a ValueError names the accepted values).
RunOptions run_options(const std::string& backend, int device, int threads, std::uint64_t seed = 1);

// While alive (created with the GIL held, in the main thread): SIGINT sets a flag that `options.stop`
// reports, so the engine stops at its next safe point; the destructor restores Python's handler.
class InterruptGuard {
 public:
  explicit InterruptGuard(RunOptions& options);
  ~InterruptGuard();
  InterruptGuard(const InterruptGuard&) = delete;
  InterruptGuard& operator=(const InterruptGuard&) = delete;
  // Raises KeyboardInterrupt (as a nb::python_error) when SIGINT arrived.
  void raise_if_interrupted() const;
};

// Runs f() with the GIL released, Ctrl-C stopping it; a stop becomes KeyboardInterrupt.
template <class F>
auto run_released(RunOptions& options, F&& f) -> decltype(f()) {
  using R = decltype(f());
  InterruptGuard guard(options);
  if constexpr (std::is_void_v<R>) {
    try {
      nb::gil_scoped_release release;
      f();
    } catch (const Stopped&) {
      guard.raise_if_interrupted();
      throw;
    }
    guard.raise_if_interrupted();
  } else {
    std::optional<R> value;
    try {
      nb::gil_scoped_release release;
      value.emplace(f());
    } catch (const Stopped&) {
      guard.raise_if_interrupted();
      throw;
    }
    guard.raise_if_interrupted();
    return std::move(*value);
  }
}

// A 1-D NumPy array owning `v`'s data (no copy).
template <class T>
nb::ndarray<nb::numpy, T> owned_array(std::vector<T>&& v, std::initializer_list<std::size_t> shape) {
  auto* heap = new std::vector<T>(std::move(v));
  nb::capsule owner(heap, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  std::vector<std::size_t> s(shape);
  return nb::ndarray<nb::numpy, T>(heap->data(), s.size(), s.data(), owner);
}

void register_errors(nb::module_& m);
void bind_prolif(nb::module_& m);
void bind_ddm(nb::module_& m);
void bind_angio(nb::module_& m);

}  // namespace simkit::python
