# The functions of llvm-project's clang/cmake/modules/AddClang.cmake (Apache-2.0 WITH
# LLVM-exception; rewritten here, cut down, same behaviour on Linux). clang's libraries
# compile into obj.<name> object libraries, so libclang-cpp.so is made of the same
# objects; with CLANG_LINK_CLANG_DYLIB (LLVM_LINK_LLVM_DYLIB's value by default) the
# tools link libclang-cpp.so instead of the static libraries.

function(add_clang_library name)
  cmake_parse_arguments(ARG "SHARED;STATIC;INSTALL_WITH_TOOLCHAIN" "" "" ${ARGN})
  if(ARG_SHARED)
    set(LIBTYPE SHARED)
  else()
    set(LIBTYPE STATIC OBJECT)
    set_property(GLOBAL APPEND PROPERTY CLANG_STATIC_LIBS ${name})
  endif()
  llvm_add_library(${name} ${LIBTYPE} ${ARG_UNPARSED_ARGUMENTS})

  install(TARGETS ${name}
    COMPONENT ${name}
    LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX}
    ARCHIVE DESTINATION lib${LLVM_LIBDIR_SUFFIX}
    RUNTIME DESTINATION bin)
  add_llvm_install_targets(install-${name} DEPENDS ${name} COMPONENT ${name})
endfunction()

function(add_clang_executable name)
  add_llvm_executable(${name} ${ARGN})
endfunction()

# A tool of clang's, installed in bin/ in its own component; built after the resource
# headers, as clang's tools are.
function(add_clang_tool name)
  add_clang_executable(${name} ${ARGN})
  add_dependencies(${name} clang-resource-headers)
  install(TARGETS ${name} RUNTIME DESTINATION "${CLANG_TOOLS_INSTALL_DIR}" COMPONENT ${name})
  add_llvm_install_targets(install-${name} DEPENDS ${name} COMPONENT ${name})
endfunction()

# bin/<name> -> <dest>, made after each link of dest and installed with it.
function(add_clang_symlink name dest)
  llvm_add_tool_symlink(CLANG ${name} ${dest} ALWAYS_GENERATE)
  # Always generate install targets
  llvm_install_symlink(CLANG ${name} ${dest} ALWAYS_GENERATE)
endfunction()

function(clang_target_link_libraries target type)
  if(TARGET obj.${target})
    target_link_libraries(obj.${target} ${ARGN})
  endif()
  if(CLANG_LINK_CLANG_DYLIB)
    target_link_libraries(${target} ${type} clang-cpp)
  else()
    target_link_libraries(${target} ${type} ${ARGN})
  endif()
endfunction()
