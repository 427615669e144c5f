# Third-party libraries, all from Debian packages (scripts/setup.sh installs them).
find_package(Threads REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)
find_package(fmt REQUIRED)
find_package(CLI11 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(PNG REQUIRED)

# toml++ and Random123 are used header-only (Debian's toml++ config would link its .so).
find_path(SIMKIT_TOMLPP_INCLUDE toml++/toml.h REQUIRED)
add_library(simkit_tomlpp INTERFACE)
target_include_directories(simkit_tomlpp SYSTEM INTERFACE "${SIMKIT_TOMLPP_INCLUDE}")
# toml++'s internal assertions are off in every build type, as NDEBUG turns them off in Release:
# 3.3.0 asserts a precondition of its key parser that a malformed table header ("[" then a newline,
# "[[[") breaks before its own check reports the parse error, so a Debug or sanitizer build aborted
# on such a config (found by the fuzz preset; tomlplusplus pull request #301 fixes it upstream).
# (A compile option: CMake drops function-style compile definitions.)
target_compile_definitions(simkit_tomlpp INTERFACE TOML_HEADER_ONLY=1 TOML_EXCEPTIONS=1)
target_compile_options(simkit_tomlpp INTERFACE "$<$<COMPILE_LANGUAGE:CXX>:-DTOML_ASSERT(expr)=static_assert(true)>")

find_path(SIMKIT_RANDOM123_INCLUDE Random123/philox.h REQUIRED)
add_library(simkit_random123 INTERFACE)
target_include_directories(simkit_random123 SYSTEM INTERFACE "${SIMKIT_RANDOM123_INCLUDE}")

if(SIMKIT_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SIMKIT_BUILD_BENCH)
  find_package(benchmark REQUIRED)
endif()

# simkit's own code (never its consumers) compiles against these: Random123 and fmt (header-only),
# OpenMP.
target_link_libraries(simkit_internal INTERFACE simkit_random123 fmt::fmt-header-only OpenMP::OpenMP_CXX Threads::Threads)
if(SIMKIT_HAVE_CUDA)
  target_link_libraries(simkit_internal INTERFACE CUDA::cudart_static)
endif()
