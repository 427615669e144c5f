// prolif benchmarks: divisions per second per backend on
//  - the real-data case (AML9 bone marrow H(0), ProCell's model 3, t_max = 240 h, phi_min = 11),
//    both start modes; needs $SIMKIT_DATA_DIR/procell (or ../shared/data), skipped otherwise;
//  - the real-data case as a batch of 100 replicates in one simulate_batch (one GPU launch);
//  - a calibration: `prolif fit` of model 3's structure (6 free values, ProCell's bounds) to the
//    240 h target, 50 particles x 100 iterations, 1 replicate per evaluation (the speed
//    floor: under 10 s on one H100/H200); the host backends run 50 x 10 (evaluations/s is the
//    comparable figure);
//  - a synthetic case of 10^6 initial cells (1000 rows) reaching more than 10^9 cells
//    (one population, mean 10 h, sd 2 h, t_max 105 h: about 10 generations). The host backends
//    run it to t_max 75 h (about 1.3e8 divisions) so that a run stays in seconds; divisions/s is
//    the comparable figure.
// The CUDA context is created once, before any benchmark, and its cost reported as context
// "cuda_first_call_ms"; the timed iterations exclude it.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <optional>

#include "simkit/core/cuda_info.hpp"
#include "core/report.hpp"
#include "simkit/prolif/fit.hpp"
#include "simkit/prolif/io.hpp"
#include "simkit/prolif/prolif.hpp"

namespace {

using namespace simkit;
using namespace simkit::prolif;

std::optional<std::filesystem::path> procell_dir() {
  std::filesystem::path base = std::getenv("SIMKIT_DATA_DIR") ? std::getenv("SIMKIT_DATA_DIR") : "../shared/data";
  if (std::filesystem::exists(base / "procell/AML9_Exp3_t10d_UT1_BM_GFPpos.txt")) return base / "procell";
  return std::nullopt;
}

Model procell_model3(StartMode start) {
  Model m;
  Population q;
  q.name = "quiescent";
  q.proportion = 0.06;
  q.quiescent = true;
  Population slow;
  slow.name = "slow";
  slow.proportion = 0.47;
  slow.mean = 63.7;
  slow.sd = 28.9;
  Population fast;
  fast.name = "fast";
  fast.proportion = 0.47;
  fast.mean = 41.1;
  fast.sd = 14.3;
  m.populations = {q, slow, fast};
  m.phi_min = 11;
  m.times = {240};
  m.start = start;
  return m;
}

InitialHistogram synthetic_histogram() {
  InitialHistogram h;
  h.source = "synthetic";
  for (int i = 0; i < 1000; ++i) {
    h.values.push_back(std::pow(10.0, 4.0 + 2.0 * i / 999.0));
    h.counts.push_back(1000);
  }
  return h;
}

Model synthetic_model(double t_max) {
  Model m;
  Population p;
  p.name = "P1";
  p.proportion = 1.0;
  p.mean = 10;
  p.sd = 2;
  m.populations = {p};
  m.phi_min = 1;
  m.times = {t_max};
  return m;
}

void run(benchmark::State& state, const InitialHistogram& h, const Model& m, Backend backend) {
  RunOptions o;
  o.backend = backend;
  o.seed = 1;
  std::uint64_t divisions = 0, cells = 0;
  for (auto _ : state) {
    const Result r = simulate(h, m, o);
    divisions = r.divisions;
    cells = r.total(r.times - 1);
    benchmark::DoNotOptimize(r.counts.data());
  }
  state.counters["divisions"] = static_cast<double>(divisions);
  state.counters["cells_at_tmax"] = static_cast<double>(cells);
  state.counters["divisions_per_s"] =
      benchmark::Counter(static_cast<double>(divisions), benchmark::Counter::kIsIterationInvariantRate);
}

void real_data(benchmark::State& state, Backend backend, StartMode start) {
  const auto dir = procell_dir();
  if (!dir) {
    state.SkipWithError("real data not found (set SIMKIT_DATA_DIR)");
    return;
  }
  const InitialHistogram h = read_histogram(*dir / "AML9_Exp3_t10d_UT1_BM_GFPpos.txt");
  run(state, h, procell_model3(start), backend);
}

void real_batch(benchmark::State& state, Backend backend) {
  const auto dir = procell_dir();
  if (!dir) {
    state.SkipWithError("real data not found (set SIMKIT_DATA_DIR)");
    return;
  }
  const InitialHistogram h = read_histogram(*dir / "AML9_Exp3_t10d_UT1_BM_GFPpos.txt");
  const std::vector<Model> models(100, procell_model3(StartMode::ProcellAsync));
  std::vector<std::uint64_t> seeds;
  for (std::uint64_t r = 0; r < 100; ++r) seeds.push_back(1 + r);
  RunOptions o;
  o.backend = backend;
  std::uint64_t divisions = 0;
  for (auto _ : state) {
    const std::vector<Result> rs = simulate_batch(h, models, seeds, o);
    divisions = 0;
    for (const Result& r : rs) divisions += r.divisions;
    benchmark::DoNotOptimize(rs.data());
  }
  state.counters["runs_per_s"] = benchmark::Counter(100.0, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["divisions_per_s"] =
      benchmark::Counter(static_cast<double>(divisions), benchmark::Counter::kIsIterationInvariantRate);
}

void real_fit(benchmark::State& state, Backend backend) {
  const auto dir = procell_dir();
  if (!dir) {
    state.SkipWithError("real data not found (set SIMKIT_DATA_DIR)");
    return;
  }
  const InitialHistogram h = read_histogram(*dir / "AML9_Exp3_t10d_UT1_BM_GFPpos.txt");
  const std::vector<FitTarget> targets = {{read_histogram(*dir / "AML9_Exp3_t10d_DOX3_BM_GFPpos.txt"), 240.0}};
  FitSpec spec;
  spec.model = procell_model3(StartMode::ProcellAsync);
  spec.free.resize(3);
  for (auto& f : spec.free) f.proportion = Range{0, 1};
  spec.free[1].mean = Range{63, 504};
  spec.free[1].sd = Range{0.1, 30};
  spec.free[2].mean = Range{30, 63};
  spec.free[2].sd = Range{0.1, 20};
  FitOptions o;
  o.particles = 50;
  o.iterations = backend == Backend::Cuda ? 100 : 10;
  o.run.backend = backend;
  FitResult r;
  for (auto _ : state) {
    r = fit(h, spec, targets, o);
    benchmark::DoNotOptimize(r.best_x.data());
  }
  state.counters["evaluations"] = static_cast<double>(r.evaluations);
  state.counters["fitness"] = r.fitness;
  state.counters["evaluations_per_s"] =
      benchmark::Counter(static_cast<double>(r.evaluations), benchmark::Counter::kIsIterationInvariantRate);
}

// The smallest call: one H(0) row of 10 cells, 24 h. What the Python binding adds to a call is
// measured against this (bench/python_overhead.py; docs/performance.md).
void tiny(benchmark::State& state, Backend backend) {
  InitialHistogram h;
  h.source = "tiny";
  h.values = {1000};
  h.counts = {10};
  RunOptions o;
  o.backend = backend;
  o.threads = 1;
  const Model m = synthetic_model(24.0);
  for (auto _ : state) {
    const Result r = simulate(h, m, o);
    benchmark::DoNotOptimize(r.counts.data());
  }
}

void synthetic(benchmark::State& state, Backend backend) {
  static const InitialHistogram h = synthetic_histogram();
  run(state, h, synthetic_model(backend == Backend::Cuda ? 105.0 : 75.0), backend);
}

bool cuda_ok() { return cuda_status().usable; }

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const bool cuda = cuda_ok();
  if (cuda) {
    // First CUDA call of the process: context creation and module load, reported apart.
    Stopwatch sw;
    RunOptions o;
    o.backend = Backend::Cuda;
    InitialHistogram tiny;
    tiny.source = "tiny";
    tiny.values = {100};
    tiny.counts = {1};
    simulate(tiny, synthetic_model(1.0), o);
    benchmark::AddCustomContext("cuda_first_call_ms", std::to_string(sw.seconds() * 1e3));
    benchmark::AddCustomContext("cuda_device", cuda_status().devices.at(0).name);
  }
  for (Backend b : {Backend::Reference, Backend::Cpu, Backend::Cuda}) {
    if (b == Backend::Cuda && !cuda) continue;
    const std::string name(to_string(b));
    benchmark::RegisterBenchmark(("prolif_real_async/" + name).c_str(), real_data, b, StartMode::ProcellAsync)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("prolif_real_sync/" + name).c_str(), real_data, b, StartMode::Sync)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
    benchmark::RegisterBenchmark(("prolif_tiny/" + name).c_str(), tiny, b)->Unit(benchmark::kMicrosecond);
    if (b != Backend::Reference) {
      benchmark::RegisterBenchmark(("prolif_real_batch100/" + name).c_str(), real_batch, b)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
      benchmark::RegisterBenchmark(("prolif_fit_model3/" + name).c_str(), real_fit, b)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime()
          ->Iterations(1);
    }
    if (b != Backend::Reference || std::getenv("SIMKIT_BENCH_SLOW")) {
      benchmark::RegisterBenchmark(("prolif_synthetic_1e6/" + name).c_str(), synthetic, b)
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
