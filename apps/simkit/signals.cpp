// SIGINT and SIGTERM stop a run cleanly: the handler only records the signal; long runs poll it
// through RunOptions::stop between steps, realisations, runs or chunks of cells, end with
// simkit::Stopped, and main exits with 128 + the signal (130, 143) once the staged outputs are
// gone. SA_RESETHAND makes a second Ctrl-C kill the process at once, as users expect.
#include <signal.h>

#include <atomic>

#include "common.hpp"

namespace simkit::cli {
namespace {

std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler needs a lock-free flag");

extern "C" void on_stop_signal(int signal) { g_signal.store(signal, std::memory_order_relaxed); }

}  // namespace

void install_stop_handlers() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int stop_signal() { return g_signal.load(std::memory_order_relaxed); }

void throw_if_signalled() {
  if (stop_signal() != 0) throw Stopped();
}

}  // namespace simkit::cli
