# Build options. Defaults may come from the environment (SIMKIT_CUDA, SIMKIT_WERROR) so that
# CI runs the README's own commands with stricter settings.
if(NOT CMAKE_BUILD_TYPE AND NOT CMAKE_CONFIGURATION_TYPES)
  set(CMAKE_BUILD_TYPE Release CACHE STRING "Build type" FORCE)
endif()

set(_cuda_default AUTO)
if(DEFINED ENV{SIMKIT_CUDA})
  set(_cuda_default "$ENV{SIMKIT_CUDA}")
endif()
set(SIMKIT_CUDA "${_cuda_default}" CACHE STRING "Build the CUDA backends: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE SIMKIT_CUDA PROPERTY STRINGS AUTO ON OFF)

set(_werror_default OFF)
if(DEFINED ENV{SIMKIT_WERROR})
  set(_werror_default "$ENV{SIMKIT_WERROR}")
endif()
option(SIMKIT_WERROR "Treat warnings as errors" ${_werror_default})
option(SIMKIT_BUILD_TESTS "Build the GoogleTest suites" ${PROJECT_IS_TOP_LEVEL})
option(SIMKIT_BUILD_BENCH "Build the benchmarks" ${PROJECT_IS_TOP_LEVEL})
option(SIMKIT_BUILD_APPS "Build the simkit command" ON)
option(SIMKIT_PYTHON "Build the Python extension (python/; pip install . sets it)" OFF)
if(SIMKIT_PYTHON)
  # The static libraries end up in a shared Python extension.
  set(CMAKE_POSITION_INDEPENDENT_CODE ON)
endif()
option(SIMKIT_BUNDLE "Link for a self-contained bundle (RPATH \$ORIGIN, static runtimes)" OFF)

set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_EXPORT_COMPILE_COMMANDS ON)

# ccache (scripts/setup.sh installs it): besides rebuilds, `pip install .` after the release build
# (README's command 1, CI) compiles the same libraries with the same flags and compiler (the release
# preset names gcc/g++, as the Python build's environment does: ccache tells c++ from g++), so they
# come from the cache.
find_program(SIMKIT_CCACHE ccache)
if(SIMKIT_CCACHE)
  set(CMAKE_C_COMPILER_LAUNCHER "${SIMKIT_CCACHE}")
  set(CMAKE_CXX_COMPILER_LAUNCHER "${SIMKIT_CCACHE}")
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${SIMKIT_CCACHE}")
endif()

# CUDA as an optional language.
string(TOUPPER "${SIMKIT_CUDA}" SIMKIT_CUDA)
set(SIMKIT_HAVE_CUDA OFF)
if(NOT SIMKIT_CUDA STREQUAL "OFF")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    # sm_90 machine code plus compute_90 PTX (CMake's "90" means both).
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    enable_language(CUDA)
    set(SIMKIT_HAVE_CUDA ON)
    # CMake 3.25 predates nvcc's C++20 support: teach it the flag (newer CMake knows it already).
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
    find_package(CUDAToolkit REQUIRED)
  elseif(SIMKIT_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SIMKIT_CUDA=ON but no CUDA compiler was found (set CUDACXX or put nvcc on PATH)")
  else()
    message(STATUS "simkit: nvcc not found, building without the CUDA backends")
  endif()
endif()
message(STATUS "simkit: CUDA backends ${SIMKIT_HAVE_CUDA} (architectures: ${CMAKE_CUDA_ARCHITECTURES})")

# MPI for the distributed drivers (docs/scale-out.md): AUTO builds them when an MPI (OpenMPI from
# Debian: openmpi-bin libopenmpi-dev) is found. Without it every run is single-rank.
set(SIMKIT_MPI AUTO CACHE STRING "Build the MPI drivers: AUTO (when an MPI is found), ON or OFF")
set_property(CACHE SIMKIT_MPI PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${SIMKIT_MPI}" SIMKIT_MPI)
set(SIMKIT_HAVE_MPI OFF)
if(NOT SIMKIT_MPI STREQUAL "OFF")
  if(SIMKIT_MPI STREQUAL "ON")
    find_package(MPI REQUIRED COMPONENTS C)
  else()
    find_package(MPI QUIET COMPONENTS C)
  endif()
  if(MPI_C_FOUND)
    set(SIMKIT_HAVE_MPI ON)
    find_program(SIMKIT_MPIEXEC NAMES mpirun mpiexec HINTS "${MPI_C_COMPILER_DIRECTORY}")
  endif()
endif()
message(STATUS "simkit: MPI drivers ${SIMKIT_HAVE_MPI}")

# Sanitizers (docs/reliability.md, "Sanitizers and fuzzing"): SIMKIT_SANITIZE is a list for
# -fsanitize= ("address,undefined" in the asan preset, "thread" in tsan), applied to every C and C++
# file and link of the build: the libraries, the tests and the simkit command the CLI tests run.
# Undefined behaviour stops the program (-fno-sanitize-recover=all) so that a test fails on it. Host
# code only: nvcc does not take these flags, so a sanitizer build is a CPU build (SIMKIT_CUDA=OFF).
set(SIMKIT_SANITIZE "" CACHE STRING "Sanitizers for every C/C++ file and link, e.g. address,undefined or thread (empty: none)")
option(SIMKIT_FUZZ "Build the libFuzzer targets of tests/fuzz (clang; with SIMKIT_SANITIZE=address,undefined)" OFF)
if(SIMKIT_SANITIZE OR SIMKIT_FUZZ)
  if(SIMKIT_HAVE_CUDA)
    message(FATAL_ERROR "SIMKIT_SANITIZE and SIMKIT_FUZZ are for CPU builds: configure with -DSIMKIT_CUDA=OFF")
  endif()
  string(REPLACE ";" "," _simkit_sanitize "${SIMKIT_SANITIZE}")
  set(_simkit_sanitize_flags -fno-omit-frame-pointer)
  if(_simkit_sanitize)
    list(APPEND _simkit_sanitize_flags "-fsanitize=${_simkit_sanitize}")
    if(NOT _simkit_sanitize STREQUAL "thread")
      list(APPEND _simkit_sanitize_flags -fno-sanitize-recover=all)
    endif()
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:${_simkit_sanitize_flags}>")
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # The sanitizers' instrumentation makes GCC's -Wmaybe-uninitialized report false positives
    # (inside libstdc++'s <regex> here; GCC's manual advises against -Werror with sanitizers). The
    # release build keeps the warning.
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>")
  endif()
  if(_simkit_sanitize)
    add_link_options("-fsanitize=${_simkit_sanitize}")
  endif()
  if(SIMKIT_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      message(FATAL_ERROR "SIMKIT_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++ "
                          "-DCMAKE_C_COMPILER=clang (the fuzz preset does)")
    endif()
    # Coverage instrumentation for the libraries; the targets link libFuzzer (tests/fuzz).
    add_compile_options("$<$<COMPILE_LANGUAGE:C,CXX>:-fsanitize=fuzzer-no-link>")
  endif()
  message(STATUS "simkit: sanitizers '${_simkit_sanitize}', fuzz targets ${SIMKIT_FUZZ}")
endif()

# Every library is position-independent, so that a shared library or a Python module can link it.
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

# The floating-point rules that keep host and device arithmetic identical (no FMA contraction
# anywhere; docs/reproducibility.md). PUBLIC and installed: code that includes simkit's headers and
# calls its inline model functions must compile them under the same rules.
add_library(simkit_fp_rules INTERFACE)
set_target_properties(simkit_fp_rules PROPERTIES EXPORT_NAME fp_rules)
add_library(simkit::fp_rules ALIAS simkit_fp_rules)
target_compile_options(simkit_fp_rules INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>
  $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false -Xcompiler=-ffp-contract=off>)

# What simkit's own code builds with and consumers never see: warnings (-Werror in CI), the private
# headers under src/, and the build's CUDA switch. Linked PRIVATE through $<BUILD_INTERFACE:...>.
add_library(simkit_internal INTERFACE)
target_include_directories(simkit_internal INTERFACE "${PROJECT_SOURCE_DIR}/src")
target_compile_options(simkit_internal INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion>
  $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -Xcompiler=-Wall,-Wextra>)
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 14)
  # GCC 12/13 report false -Wrestrict positives inside libstdc++'s std::string (GCC bug 105329).
  target_compile_options(simkit_internal INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Wno-restrict>)
endif()
if(SIMKIT_WERROR)
  target_compile_options(simkit_internal INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Werror>
    $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings -Xcompiler=-Werror>)
endif()
if(SIMKIT_HAVE_CUDA)
  target_compile_definitions(simkit_internal INTERFACE SIMKIT_HAVE_CUDA=1)
endif()

if(SIMKIT_BUNDLE)
  set(CMAKE_BUILD_RPATH "\$ORIGIN")
  set(CMAKE_INSTALL_RPATH "\$ORIGIN")
  set(CMAKE_BUILD_RPATH_USE_ORIGIN ON)
endif()
