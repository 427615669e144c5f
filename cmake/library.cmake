# simkit_add_library(<target> <export name> <sources...>): one engine library in the shape every
# engine shares (docs/architecture.md): public headers from include/ (installed under include/),
# the floating-point rules PUBLIC, warnings and the private src/ headers PRIVATE, C++20 required of
# consumers, and an alias simkit::<export name> that reads the same in-tree and after find_package.
function(simkit_add_library target export_name)
  add_library(${target} STATIC ${ARGN})
  add_library(simkit::${export_name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${export_name} CUDA_SEPARABLE_COMPILATION OFF)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                              $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_link_libraries(${target} PUBLIC simkit_fp_rules PRIVATE $<BUILD_INTERFACE:simkit_internal>)
  set_property(GLOBAL APPEND PROPERTY SIMKIT_LIBRARIES ${target})
endfunction()
