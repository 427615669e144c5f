// `simkit info`: version, build options, CPU threads, CUDA runtime/driver and devices.
#include <fmt/format.h>
#include <omp.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "common.hpp"
#include "simkit/core/build_info.hpp"
#include "simkit/core/cuda_info.hpp"
#include "simkit/core/dist.hpp"

namespace simkit::cli {

namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
    }
  }
  return "unknown CPU";
}

std::string version_string(int v) { return v == 0 ? "none" : fmt::format("{}.{}", v / 1000, (v % 1000) / 10); }

int run_info(bool as_json) {
  const BuildInfo& b = build_info();
  const CudaStatus cuda = cuda_status();
  const std::string backend_auto = cuda.usable ? "cuda" : "cpu";
  if (as_json) {
    nlohmann::json devices = nlohmann::json::array();
    for (const auto& d : cuda.devices) {
      devices.push_back({{"index", d.index},
                         {"name", d.name},
                         {"memory_bytes", d.memory_bytes},
                         {"compute_capability", fmt::format("{}.{}", d.compute_major, d.compute_minor)},
                         {"multiprocessors", d.multiprocessors},
                         {"l2_bytes", d.l2_bytes}});
    }
    const nlohmann::json j = {{"version", b.version},
                              {"commit", b.commit},
                              {"build_type", b.build_type},
                              {"compiler", b.compiler},
                              {"openmp", b.openmp},
                              {"cuda_built", b.cuda},
                              {"cuda_compiler", b.cuda ? b.cuda_compiler : ""},
                              {"cuda_architectures", b.cuda ? b.cuda_architectures : ""},
                              {"cpu", cpu_model()},
                              {"cpu_threads", omp_get_max_threads()},
                              {"cuda_runtime", version_string(cuda.runtime_version)},
                              {"cuda_driver", version_string(cuda.driver_version)},
                              {"cuda_usable", cuda.usable},
                              {"cuda_reason", cuda.reason},
                              {"devices", devices},
                              {"mpi_built", dist::built_with_mpi()},
                              {"ranks", dist::Comm::world().size()},
                              {"backend_auto", backend_auto}};
    fmt::print("{}\n", j.dump());
    return 0;
  }
  fmt::print("simkit {} (commit {})\n", b.version, b.commit);
  fmt::print("build:    {} {}, C++20, OpenMP {}\n", b.build_type, b.compiler, b.openmp);
  if (b.cuda) {
    fmt::print("cuda:     backends built ({}, architectures {}); runtime {}, driver {}\n", b.cuda_compiler,
               b.cuda_architectures, version_string(cuda.runtime_version), version_string(cuda.driver_version));
  } else {
    fmt::print("cuda:     backends not built (SIMKIT_CUDA=OFF or nvcc not found)\n");
  }
  fmt::print("cpu:      {}, {} threads for the cpu backend (hardware: {})\n", cpu_model(), omp_get_max_threads(),
             std::thread::hardware_concurrency());
  fmt::print("mpi:      {}\n", !dist::built_with_mpi() ? std::string("not built (SIMKIT_MPI=OFF or no MPI found): one rank")
                                                       : fmt::format("built; this process is rank {} of {}{}",
                                                                     dist::Comm::world().rank(), dist::Comm::world().size(),
                                                                     dist::launched_by_launcher() ? "" : " (no launcher)"));
  for (const auto& d : cuda.devices) {
    fmt::print("device {}: {}, {:.1f} GiB, compute capability {}.{}, {} multiprocessors, {:.0f} MiB L2\n", d.index,
               d.name, static_cast<double>(d.memory_bytes) / (1024.0 * 1024 * 1024), d.compute_major, d.compute_minor,
               d.multiprocessors, static_cast<double>(d.l2_bytes) / (1024.0 * 1024));
  }
  if (b.cuda && !cuda.usable) fmt::print("devices:  none usable: {}\n", cuda.reason);
  fmt::print("backend auto -> {}\n", backend_auto);
  return 0;
}

}  // namespace

void add_info_command(CLI::App& app, Action& action) {
  auto* cmd = app.add_subcommand("info", "Version, build options, CPU threads, CUDA runtime, driver and devices");
  auto json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *json, "Print as one JSON object");
  cmd->callback([&action, json] { action = [json] { return run_info(*json); }; });
}

}  // namespace simkit::cli
