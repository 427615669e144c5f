// simkit._simkit: the engines for Python (docs/python.md). The public API is the pure-Python
// package around it (python/simkit/).
#include <nanobind/stl/string.h>

#include "common.hpp"
#include "simkit/core/build_info.hpp"
#include "simkit/core/cuda_info.hpp"

NB_MODULE(_simkit, m) {
  namespace nb = nanobind;
  using namespace simkit::python;
  m.doc() = "simkit's engines (prolif, angio, ddm); use the simkit package, not this module";
  register_errors(m);
  m.def(
      "build_info",
      [] {
        const simkit::BuildInfo& b = simkit::build_info();
        nb::dict d;
        d["version"] = b.version;
        d["commit"] = b.commit;
        d["build_type"] = b.build_type;
        d["compiler"] = b.compiler;
        d["cuda_built"] = b.cuda;
        d["cuda_compiler"] = b.cuda_compiler;
        d["cuda_architectures"] = b.cuda_architectures;
        d["openmp"] = b.openmp;
        return d;
      },
      "What this build of simkit has: version, commit, compiler, whether the CUDA backends are built.");
  m.def(
      "cuda_status",
      [] {
        const simkit::CudaStatus s = simkit::cuda_status();
        nb::dict d;
        d["usable"] = s.usable;
        d["reason"] = s.reason;
        nb::list devices;
        for (const auto& dev : s.devices) devices.append(dev.name);
        d["devices"] = devices;
        return d;
      },
      "Whether a CUDA device can be used now, why not, and the devices' names.");
  auto prolif = m.def_submodule("prolif", "Cell proliferation (ProCell model)");
  bind_prolif(prolif);
  auto ddm = m.def_submodule("ddm", "HLA Data Distribution Management matching");
  bind_ddm(ddm);
  auto angio = m.def_submodule("angio", "Tumour-induced angiogenesis (Anderson & Chaplain)");
  bind_angio(angio);
}
