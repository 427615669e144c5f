#pragma once
#include <string>

namespace simkit {

struct BuildInfo {
  std::string version, commit, build_type, compiler, cuda_compiler, cuda_architectures;
  bool cuda = false;
  int openmp = 0;  // _OPENMP date
};

const BuildInfo& build_info();

}  // namespace simkit
