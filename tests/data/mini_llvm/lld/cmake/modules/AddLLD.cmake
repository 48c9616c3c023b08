# The functions of llvm-project's lld/cmake/modules/AddLLD.cmake (Apache-2.0 WITH
# LLVM-exception; rewritten here, cut down, same behaviour on Linux).

function(add_lld_library name)
  llvm_add_library(${name} ${ARGN})
  install(TARGETS ${name}
    COMPONENT ${name}
    LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX}
    ARCHIVE DESTINATION lib${LLVM_LIBDIR_SUFFIX}
    RUNTIME DESTINATION bin)
  add_llvm_install_targets(install-${name} DEPENDS ${name} COMPONENT ${name})
endfunction()

function(add_lld_executable name)
  add_llvm_executable(${name} ${ARGN})
endfunction()

function(add_lld_tool name)
  add_lld_executable(${name} ${ARGN})
  install(TARGETS ${name} RUNTIME DESTINATION "${LLD_TOOLS_INSTALL_DIR}" COMPONENT ${name})
  add_llvm_install_targets(install-${name} DEPENDS ${name} COMPONENT ${name})
endfunction()

# bin/<name> -> <dest>, made after each link of dest and installed with it.
function(add_lld_symlink name dest)
  llvm_add_tool_symlink(LLD ${name} ${dest} ALWAYS_GENERATE)
  # Always generate install targets
  llvm_install_symlink(LLD ${name} ${dest} ALWAYS_GENERATE)
endfunction()

function(lld_target_link_libraries target type)
  target_link_libraries(${target} ${type} ${ARGN})
endfunction()
