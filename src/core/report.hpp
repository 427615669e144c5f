#pragma once
// Progress on stderr for long runs and the one-line end-of-run summary.
#include <chrono>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace simkit {

// Rate and ETA on stderr, redrawn at most a few times a second, only when stderr is a terminal
// and not silenced with --quiet.
class Progress {
 public:
  Progress(std::string label, std::string unit, bool quiet);
  ~Progress();
  void update(double done, double total);
  // A short text shown after the ETA from the next redraw on ("best 0.0531").
  void set_detail(std::string detail) { detail_ = std::move(detail); }
  void finish();
  bool enabled() const { return enabled_; }

 private:
  std::string label_, unit_, detail_;
  bool enabled_ = false, drawn_ = false;
  std::chrono::steady_clock::time_point start_, last_;
};

// "simkit prolif: 0.012 s, backend cuda, NVIDIA H100 (device 0), 4.1e9 divisions/s" or, with
// --json, the same facts (plus extras) as one JSON object on one line of stdout.
struct RunSummary {
  std::string command;
  std::string backend;
  std::string device;
  double wall_seconds = 0;
  double throughput = 0;
  std::string throughput_unit;
  nlohmann::json extra = nlohmann::json::object();

  std::string text() const;
  nlohmann::json to_json() const;
  void print(bool as_json) const;
};

// Wall-clock stopwatch.
class Stopwatch {
 public:
  Stopwatch() : start_(std::chrono::steady_clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  std::chrono::steady_clock::time_point start_;
};

// Formats a number for people: 1234567 -> "1.23e+06", 12.5 -> "12.5".
std::string human_number(double value);

}  // namespace simkit
