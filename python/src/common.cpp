#include "common.hpp"

#include <signal.h>

#include <atomic>
#include <mutex>

#include "simkit/core/error.hpp"

namespace simkit::python {

namespace {

// One SIGINT handler for all the engine calls running at once (several Python threads may each run
// one with the GIL released): installed by the first guard, restored by the last.
std::atomic<bool> g_interrupted{false};
std::mutex g_mutex;
int g_active = 0;
bool g_installed = false;
struct sigaction g_previous {};

extern "C" void on_sigint(int) { g_interrupted.store(true); }

}  // namespace

RunOptions run_options(const std::string& backend, int device, int threads, std::uint64_t seed) {
  if (device < 0) throw UserError("device", ": must be >= 0");
  if (threads < 0) throw UserError("threads", ": must be >= 0 (0: all)");
  RunOptions o;
  o.backend = resolve_backend(parse_backend(backend), device);
  o.device = device;
  o.threads = checked_threads(threads);
  o.seed = seed;
  return o;
}

InterruptGuard::InterruptGuard(RunOptions& options) {
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    if (g_active++ == 0) {
      g_interrupted.store(false);
      struct sigaction action {};
      action.sa_handler = on_sigint;
      sigemptyset(&action.sa_mask);
      g_installed = sigaction(SIGINT, &action, &g_previous) == 0;
    }
  }
  options.stop = [] { return g_interrupted.load(std::memory_order_relaxed); };
}

InterruptGuard::~InterruptGuard() {
  const std::lock_guard<std::mutex> lock(g_mutex);
  if (--g_active == 0) {
    if (g_installed) sigaction(SIGINT, &g_previous, nullptr);
    g_installed = false;
  }
}

void InterruptGuard::raise_if_interrupted() const {
  if (!g_interrupted.load()) return;
  {
    // The interrupt stops every call running now; the last one to finish clears it.
    const std::lock_guard<std::mutex> lock(g_mutex);
    if (g_active == 1) g_interrupted.store(false);
  }
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw nb::python_error();
}

void register_errors(nb::module_& m) {
  // Bad input (a value, an array, a file): ValueError with simkit's one-line message; too large for
  // the device: MemoryError; failures inside simkit: RuntimeError.
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const DeviceMemoryError& e) {
      PyErr_SetString(PyExc_MemoryError, printable_line(e.what()).c_str());
    } catch (const UserError& e) {
      PyErr_SetString(PyExc_ValueError, printable_line(e.what()).c_str());
    } catch (const Stopped&) {
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  (void)m;
}

}  // namespace simkit::python
