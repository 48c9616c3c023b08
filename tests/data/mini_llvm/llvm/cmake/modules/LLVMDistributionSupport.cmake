# The default distribution of llvm-project's llvm/cmake/modules/LLVMDistributionSupport.cmake
# (Apache-2.0 WITH LLVM-exception; rewritten here, same targets and messages):
# LLVM_DISTRIBUTION_COMPONENTS names install components; `distribution` builds their
# targets, `install-distribution` and `install-distribution-stripped` run their
# install-<component>[-stripped] targets. Named distributions (LLVM_DISTRIBUTIONS) and
# CMake export sets are not in this stand-in.

include_guard(GLOBAL)

# Create the targets for installing the configured distribution: `distribution` builds
# it, `install-distribution` installs it, and `install-distribution-stripped` installs a
# stripped version. Called at the end of llvm/CMakeLists.txt, when every install target
# exists.
function(llvm_distribution_add_targets)
  set(distribution_target distribution)
  set(distribution_components ${LLVM_DISTRIBUTION_COMPONENTS})

  add_custom_target(${distribution_target})
  add_custom_target(install-${distribution_target})
  add_custom_target(install-${distribution_target}-stripped)

  foreach(target ${distribution_components})
    # Note that some distribution components may not have an actual target, but only an
    # install-FOO target. This happens for example if a target is an INTERFACE target.
    if(TARGET ${target})
      add_dependencies(${distribution_target} ${target})
    endif()

    if(TARGET install-${target})
      add_dependencies(install-${distribution_target} install-${target})
    else()
      message(SEND_ERROR "Specified distribution component '${target}' doesn't have an install target")
    endif()

    if(TARGET install-${target}-stripped)
      add_dependencies(install-${distribution_target}-stripped install-${target}-stripped)
    else()
      message(SEND_ERROR
              "Specified distribution component '${target}' doesn't have an install-stripped target."
              " Its installation target creation should be changed to use add_llvm_install_targets,"
              " or you should manually create the 'install-${target}-stripped' target.")
    endif()
  endforeach()
endfunction()
