#pragma once
// Backend choice shared by every engine: reference (serial oracle), cpu (threads), cuda.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "simkit/core/names.hpp"

namespace simkit {

enum class Backend { Auto, Reference, Cpu, Cuda };
inline constexpr Named<Backend> kBackendNames[] = {
    {Backend::Auto, "auto"}, {Backend::Reference, "reference"}, {Backend::Cpu, "cpu"}, {Backend::Cuda, "cuda"}};

// Parses a name of kBackendNames; a UserError names the field and the accepted values.
Backend parse_backend(std::string_view text);
std::string_view to_string(Backend backend);

// The error of a backend this build lacks (every engine's entry points for a backend that was not
// compiled call it): a UserError naming the backend and how to get it.
[[noreturn]] void throw_not_built(Backend backend);

// Auto becomes Cuda when the build has CUDA and `device` is usable, else Cpu. Asking for Cuda on a
// build or machine without it is a UserError that says why.
Backend resolve_backend(Backend requested, int device);

// Called now and then by long runs: work done so far out of total (same unit as the summary).
using ProgressCallback = std::function<void(double done, double total)>;

// Asked now and then by long runs, from any of their threads: true ends the run at the next safe
// point (between steps, realisations, runs, or chunks of cells) with simkit::Stopped. It must be
// cheap and thread-safe (reading an atomic flag, say).
using StopCallback = std::function<bool()>;

// What every engine entry point takes besides its problem. The device is explicit, never global.
struct RunOptions {
  Backend backend = Backend::Auto;
  int device = 0;
  std::uint64_t seed = 1;
  int threads = 0;  // 0: all hardware threads
  ProgressCallback progress;
  StopCallback stop;
};

// Whether `options` asks the run to stop (never, without a stop callback).
inline bool stop_requested(const RunOptions& options) { return options.stop && options.stop(); }
// Throws simkit::Stopped when the run is asked to stop; call it outside parallel regions.
void throw_if_stopped(const RunOptions& options);

// Human-readable description of what ran: "NVIDIA H100 80GB HBM3 (device 0)" or "CPU, 16 threads".
std::string device_description(Backend resolved, int device, int threads);

// The most threads a run may ask for: four times the machine's hardware threads, and at least 256
// (far more threads than cores only slow a run; tens of thousands exhaust the OpenMP runtime).
int max_threads();
// `requested` (0: all), or a UserError naming `threads` when it is negative or above max_threads().
int checked_threads(int requested);
// Number of threads the cpu backend uses for `requested` (0 = all); checked_threads first.
int effective_threads(int requested);

}  // namespace simkit
