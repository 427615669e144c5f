# `cmake --install`: the public headers, the four static libraries (position-independent), the
# simkit command, and a CMake package so that another project does
#   find_package(simkit 0.1 REQUIRED)  and links  simkit::prolif, simkit::angio, simkit::ddm, simkit::core
# (docs/architecture.md, "Using simkit from another project").
include(CMakePackageConfigHelpers)

get_property(_simkit_libraries GLOBAL PROPERTY SIMKIT_LIBRARIES)
install(TARGETS ${_simkit_libraries} simkit_fp_rules EXPORT simkitTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY "${PROJECT_SOURCE_DIR}/include/simkit" DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(SIMKIT_BUILD_APPS)
  install(TARGETS simkit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

set(SIMKIT_CMAKE_DIR "${CMAKE_INSTALL_LIBDIR}/cmake/simkit")
install(EXPORT simkitTargets NAMESPACE simkit:: DESTINATION "${SIMKIT_CMAKE_DIR}")
configure_package_config_file(cmake/simkitConfig.cmake.in "${PROJECT_BINARY_DIR}/simkitConfig.cmake"
                              INSTALL_DESTINATION "${SIMKIT_CMAKE_DIR}")
write_basic_package_version_file("${PROJECT_BINARY_DIR}/simkitConfigVersion.cmake"
                                 COMPATIBILITY SameMinorVersion)
install(FILES "${PROJECT_BINARY_DIR}/simkitConfig.cmake" "${PROJECT_BINARY_DIR}/simkitConfigVersion.cmake"
        DESTINATION "${SIMKIT_CMAKE_DIR}")

# The GPU bundle (scripts/gpu-bundle.sh): `cmake --install build/bundle --component bundle` puts the
# simkit command, the C examples, the test and benchmark binaries, and the few shared libraries a bare
# GPU machine lacks (libgomp, libbenchmark, libpng) side by side in bundle/ (RPATH $ORIGIN).
if(SIMKIT_BUNDLE)
  get_property(_bundle_targets GLOBAL PROPERTY SIMKIT_BUNDLE_TARGETS)
  set(_bundle_apps)
  foreach(_target simkit ddm_c_example ddm_rti_ticks)
    if(TARGET ${_target})
      list(APPEND _bundle_apps ${_target})
    endif()
  endforeach()
  install(TARGETS ${_bundle_apps} ${_bundle_targets} RUNTIME_DEPENDENCY_SET simkit_bundle_libraries
          RUNTIME DESTINATION bundle COMPONENT bundle EXCLUDE_FROM_ALL)
  install(RUNTIME_DEPENDENCY_SET simkit_bundle_libraries DESTINATION bundle COMPONENT bundle EXCLUDE_FROM_ALL
          POST_INCLUDE_REGEXES "libgomp" "libbenchmark" "libpng"
          POST_EXCLUDE_REGEXES ".*")
endif()
