#include "core/report.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

namespace simkit {

Progress::Progress(std::string label, std::string unit, bool quiet)
    : label_(std::move(label)),
      unit_(std::move(unit)),
      enabled_(!quiet && ::isatty(STDERR_FILENO) == 1),
      start_(std::chrono::steady_clock::now()),
      last_(start_) {}

Progress::~Progress() { finish(); }

void Progress::update(double done, double total) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (drawn_ && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? done / elapsed : 0.0;
  const double fraction = total > 0 ? done / total : 0.0;
  std::string eta = "?";
  if (rate > 0 && total >= done) eta = fmt::format("{:.0f} s", (total - done) / rate);
  fmt::print(stderr, "\r{}: {:5.1f}%  {} {}/s  ETA {}{}{}   ", label_, 100.0 * fraction, human_number(rate), unit_, eta,
             detail_.empty() ? "" : "  ", detail_);
  std::fflush(stderr);
  drawn_ = true;
}

void Progress::finish() {
  if (enabled_ && drawn_) {
    fmt::print(stderr, "\r{:<100}\r", "");
    std::fflush(stderr);
  }
  drawn_ = false;
}

std::string human_number(double value) {
  if (value == 0) return "0";
  const double a = std::fabs(value);
  if (a >= 1e5 || a < 1e-3) return fmt::format("{:.3g}", value);
  return fmt::format("{:.4g}", value);
}

std::string RunSummary::text() const {
  return fmt::format("{}: {:.4g} s, backend {}, {}, {} {}/s", command, wall_seconds, backend, device,
                     human_number(throughput), throughput_unit);
}

nlohmann::json RunSummary::to_json() const {
  nlohmann::json j = {{"command", command},       {"wall_seconds", wall_seconds},
                      {"backend", backend},       {"device", device},
                      {"throughput", throughput}, {"throughput_unit", throughput_unit + "/s"}};
  for (auto it = extra.begin(); it != extra.end(); ++it) j[it.key()] = it.value();
  return j;
}

void RunSummary::print(bool as_json) const {
  if (as_json) {
    fmt::print("{}\n", to_json().dump());
  } else {
    fmt::print("{}\n", text());
  }
  std::fflush(stdout);
}

}  // namespace simkit
