# The functions of llvm-project's llvm/cmake/modules/AddLLVM.cmake (Apache-2.0 WITH
# LLVM-exception; rewritten here, cut down to what this tree uses, same behaviour on
# Linux): libraries and tools, how they link LLVM (its component libraries, or the one
# libLLVM.so with LLVM_LINK_LLVM_DYLIB), their RPATH, install components and
# install-<component>[-stripped] targets, and tool symlinks.

include(LLVMDistributionSupport)

# LLVM_LINK_COMPONENTS names -> libraries: component Foo is the library LLVMFoo.
function(llvm_map_components_to_libnames out_libs)
  set(libs)
  foreach(c IN LISTS ARGN)
    if(NOT TARGET LLVM${c})
      message(FATAL_ERROR "Target ${c} is not in the set of libraries.")
    endif()
    list(APPEND libs LLVM${c})
  endforeach()
  set(${out_libs} ${libs} PARENT_SCOPE)
endfunction()

# llvm_config(target [USE_SHARED] components...): link LLVM, or those components.
function(llvm_config executable)
  cmake_parse_arguments(ARG "USE_SHARED" "" "" ${ARGN})
  if(ARG_USE_SHARED)
    target_link_libraries(${executable} PRIVATE LLVM)
  else()
    llvm_map_components_to_libnames(libs ${ARG_UNPARSED_ARGUMENTS})
    target_link_libraries(${executable} PRIVATE ${libs})
  endif()
endfunction()

# $ORIGIN/../lib, in the build tree and once installed (LLVM sets BUILD_RPATH and
# INSTALL_RPATH so; the install rewrites the one to the other).
function(llvm_setup_rpath name)
  if(CMAKE_INSTALL_RPATH)
    return()
  endif()
  set_property(TARGET ${name} APPEND PROPERTY BUILD_RPATH "\$ORIGIN/../lib${LLVM_LIBDIR_SUFFIX}")
  set_target_properties(${name} PROPERTIES INSTALL_RPATH "\$ORIGIN/../lib${LLVM_LIBDIR_SUFFIX}")
endfunction()

# llvm_add_library(name [SHARED|STATIC] [OBJECT] [COMPONENT_LIB]
#   [DISABLE_LLVM_LINK_LLVM_DYLIB] [OUTPUT_NAME n] [DEPENDS targets...]
#   [LINK_COMPONENTS components...] [LINK_LIBS libs...] sources...)
# OBJECT: the sources compile once, into obj.<name>, and the library is made of its
# objects (as clang's libraries are, so libclang-cpp.so can take the same objects).
function(llvm_add_library name)
  cmake_parse_arguments(ARG
    "SHARED;STATIC;OBJECT;DISABLE_LLVM_LINK_LLVM_DYLIB;COMPONENT_LIB"
    "OUTPUT_NAME"
    "DEPENDS;LINK_COMPONENTS;LINK_LIBS"
    ${ARGN})
  set(sources ${ARG_UNPARSED_ARGUMENTS})
  if(NOT ARG_SHARED)
    set(ARG_STATIC TRUE)
  endif()

  if(ARG_OBJECT)
    set(obj_name "obj.${name}")
    add_library(${obj_name} OBJECT EXCLUDE_FROM_ALL ${sources})
    target_include_directories(${obj_name} PRIVATE $<TARGET_PROPERTY:${name},INCLUDE_DIRECTORIES>)
    if(ARG_DEPENDS)
      add_dependencies(${obj_name} ${ARG_DEPENDS})
    endif()
    set(sources "$<TARGET_OBJECTS:${obj_name}>")
  endif()

  if(ARG_SHARED)
    add_library(${name} SHARED ${sources})
  else()
    add_library(${name} STATIC ${sources})
  endif()
  if(ARG_OUTPUT_NAME)
    set_target_properties(${name} PROPERTIES OUTPUT_NAME ${ARG_OUTPUT_NAME})
  endif()
  if(ARG_COMPONENT_LIB)
    set_property(GLOBAL APPEND PROPERTY LLVM_COMPONENT_LIBS ${name})
  endif()

  if(ARG_SHARED)
    llvm_setup_rpath(${name})
    # Since 18.1.0, the ABI version is indicated by the major and minor version.
    set_target_properties(${name} PROPERTIES
      SOVERSION ${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}${LLVM_VERSION_SUFFIX}
      VERSION ${LLVM_VERSION_MAJOR}.${LLVM_VERSION_MINOR}${LLVM_VERSION_SUFFIX}
      DEFINE_SYMBOL "")
  endif()

  if(ARG_STATIC)
    set(libtype PUBLIC)
  else()
    set(libtype PRIVATE)  # a shared object knows its dependent libraries
  endif()
  if(ARG_COMPONENT_LIB)
    llvm_map_components_to_libnames(llvm_libs ${ARG_LINK_COMPONENTS})
  elseif(LLVM_LINK_LLVM_DYLIB AND NOT ARG_DISABLE_LLVM_LINK_LLVM_DYLIB)
    set(llvm_libs LLVM)
  else()
    llvm_map_components_to_libnames(llvm_libs ${ARG_LINK_COMPONENTS} ${LLVM_LINK_COMPONENTS})
  endif()
  target_link_libraries(${name} ${libtype} ${ARG_LINK_LIBS} ${llvm_libs})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
endfunction()

# A library of LLVM's, installed in its own component (install-<name>[-stripped]).
function(add_llvm_library name)
  llvm_add_library(${name} ${ARGN})
  install(TARGETS ${name}
          LIBRARY DESTINATION lib${LLVM_LIBDIR_SUFFIX} COMPONENT ${name}
          ARCHIVE DESTINATION lib${LLVM_LIBDIR_SUFFIX} COMPONENT ${name}
          RUNTIME DESTINATION bin COMPONENT ${name})
  add_llvm_install_targets(install-${name} DEPENDS ${name} COMPONENT ${name})
endfunction()

# A component library: its code goes into libLLVM.so, and tools name it in
# LLVM_LINK_COMPONENTS (without the LLVM prefix).
function(add_llvm_component_library name)
  add_llvm_library(${name} COMPONENT_LIB ${ARGN})
endfunction()

# add_llvm_executable(name [DISABLE_LLVM_LINK_LLVM_DYLIB] [DEPENDS targets...] sources...)
# linking LLVM_LINK_COMPONENTS: libLLVM.so when LLVM_LINK_LLVM_DYLIB is ON.
function(add_llvm_executable name)
  cmake_parse_arguments(ARG "DISABLE_LLVM_LINK_LLVM_DYLIB" "" "DEPENDS" ${ARGN})
  add_executable(${name} ${ARG_UNPARSED_ARGUMENTS})
  llvm_setup_rpath(${name})
  if(ARG_DEPENDS)
    add_dependencies(${name} ${ARG_DEPENDS})
  endif()
  if(LLVM_LINK_LLVM_DYLIB AND NOT ARG_DISABLE_LLVM_LINK_LLVM_DYLIB)
    set(USE_SHARED USE_SHARED)
  endif()
  llvm_config(${name} ${USE_SHARED} ${LLVM_LINK_COMPONENTS})
endfunction()

# A tool of LLVM's, installed in bin/ in its own component.
function(add_llvm_tool name)
  add_llvm_executable(${name} ${ARGN})
  install(TARGETS ${name} RUNTIME DESTINATION "${LLVM_TOOLS_INSTALL_DIR}" COMPONENT ${name})
  add_llvm_install_targets(install-${name} DEPENDS ${name} COMPONENT ${name})
endfunction()

# install-<target> and install-<target>-stripped: cmake_install.cmake run for one
# component (what `cmake --install . --component <c> [--strip]` does; DESTDIR honoured).
function(add_llvm_install_targets target)
  cmake_parse_arguments(ARG "" "COMPONENT;PREFIX;SYMLINK" "DEPENDS" ${ARGN})
  if(ARG_COMPONENT)
    set(component_option -DCMAKE_INSTALL_COMPONENT="${ARG_COMPONENT}")
  endif()
  if(ARG_PREFIX)
    set(prefix_option -DCMAKE_INSTALL_PREFIX="${ARG_PREFIX}")
  endif()

  set(file_dependencies)
  set(target_dependencies)
  foreach(dependency ${ARG_DEPENDS})
    if(TARGET ${dependency})
      list(APPEND target_dependencies ${dependency})
    else()
      list(APPEND file_dependencies ${dependency})
    endif()
  endforeach()

  add_custom_target(${target}
                    DEPENDS ${file_dependencies}
                    COMMAND "${CMAKE_COMMAND}"
                            ${component_option}
                            ${prefix_option}
                            -P "${CMAKE_BINARY_DIR}/cmake_install.cmake"
                    USES_TERMINAL)
  add_custom_target(${target}-stripped
                    DEPENDS ${file_dependencies}
                    COMMAND "${CMAKE_COMMAND}"
                            ${component_option}
                            ${prefix_option}
                            -DCMAKE_INSTALL_DO_STRIP=1
                            -P "${CMAKE_BINARY_DIR}/cmake_install.cmake"
                    USES_TERMINAL)
  if(target_dependencies)
    add_dependencies(${target} ${target_dependencies})
    add_dependencies(${target}-stripped ${target_dependencies})
  endif()

  if(ARG_SYMLINK)
    add_dependencies(${target} install-${ARG_SYMLINK})
    add_dependencies(${target}-stripped install-${ARG_SYMLINK}-stripped)
  endif()
endfunction()

function(llvm_find_install_symlink_script out_var)
  foreach(path ${CMAKE_MODULE_PATH})
    if(EXISTS ${path}/LLVMInstallSymlink.cmake)
      set(${out_var} ${path}/LLVMInstallSymlink.cmake PARENT_SCOPE)
      return()
    endif()
  endforeach()
  message(FATAL_ERROR "LLVMInstallSymlink.cmake is not in CMAKE_MODULE_PATH")
endfunction()

# lib<name>.so -> <dest>, installed in lib/ in COMPONENT (default: name).
function(llvm_install_library_symlink name dest type)
  cmake_parse_arguments(ARG "FULL_DEST" "COMPONENT" "" ${ARGN})
  llvm_find_install_symlink_script(INSTALL_SYMLINK)
  set(component ${ARG_COMPONENT})
  if(NOT component)
    set(component ${name})
  endif()
  set(full_name ${CMAKE_${type}_LIBRARY_PREFIX}${name}${CMAKE_${type}_LIBRARY_SUFFIX})
  if(ARG_FULL_DEST)
    set(full_dest ${dest})
  else()
    set(full_dest ${CMAKE_${type}_LIBRARY_PREFIX}${dest}${CMAKE_${type}_LIBRARY_SUFFIX})
  endif()
  install(SCRIPT ${INSTALL_SYMLINK}
          CODE "install_symlink(\"${full_name}\" \"${full_dest}\" \"lib${LLVM_LIBDIR_SUFFIX}\" \"create_symlink\")"
          COMPONENT ${component})
endfunction()

# bin/<name> -> <dest> at install. ALWAYS_GENERATE: in dest's component (clang++ is
# installed with clang); otherwise in a component of its own, whose install target
# installs dest too (llvm-readelf).
function(llvm_install_symlink project name dest)
  cmake_parse_arguments(ARG "ALWAYS_GENERATE" "COMPONENT" "" ${ARGN})
  llvm_find_install_symlink_script(INSTALL_SYMLINK)
  if(ARG_COMPONENT)
    set(component ${ARG_COMPONENT})
  elseif(ARG_ALWAYS_GENERATE)
    set(component ${dest})
  else()
    set(component ${name})
  endif()
  set(output_dir "${${project}_TOOLS_INSTALL_DIR}")
  install(SCRIPT ${INSTALL_SYMLINK}
          CODE "install_symlink(\"${name}\" \"${dest}\" \"${output_dir}\" \"create_symlink\")"
          COMPONENT ${component})
  if(NOT ARG_ALWAYS_GENERATE)
    add_llvm_install_targets(install-${name}
                             DEPENDS ${name} ${dest}
                             COMPONENT ${component}
                             SYMLINK ${dest})
  endif()
endfunction()

# bin/<link_name> -> <target> in the build tree: made after each link of target
# (ALWAYS_GENERATE), or by a target of its own, which also installs it.
function(llvm_add_tool_symlink project link_name target)
  cmake_parse_arguments(ARG "ALWAYS_GENERATE" "OUTPUT_DIR" "" ${ARGN})
  set(dest_binary "$<TARGET_FILE_NAME:${target}>")
  if(NOT ARG_OUTPUT_DIR)
    get_target_property(ARG_OUTPUT_DIR ${target} RUNTIME_OUTPUT_DIRECTORY)
  endif()
  set(output_path "${ARG_OUTPUT_DIR}/${link_name}${CMAKE_EXECUTABLE_SUFFIX}")

  set(target_name ${link_name})
  if(TARGET ${link_name})
    set(target_name ${link_name}-link)
  endif()

  if(ARG_ALWAYS_GENERATE)
    set_property(DIRECTORY APPEND PROPERTY ADDITIONAL_MAKE_CLEAN_FILES ${dest_binary})
    add_custom_command(TARGET ${target} POST_BUILD
      COMMAND ${CMAKE_COMMAND} -E create_symlink "${dest_binary}" "${output_path}")
  else()
    add_custom_command(OUTPUT ${output_path}
                       COMMAND ${CMAKE_COMMAND} -E create_symlink "${dest_binary}" "${output_path}"
                       DEPENDS ${target})
    set(should_build_all)
    get_target_property(target_excluded_from_all ${target} EXCLUDE_FROM_ALL)
    if(NOT target_excluded_from_all)
      set(should_build_all ALL)
    endif()
    add_custom_target(${target_name} ${should_build_all} DEPENDS ${target} ${output_path})
    llvm_install_symlink("${project}" ${link_name} ${target})
  endif()
endfunction()

function(add_llvm_tool_symlink link_name target)
  llvm_add_tool_symlink(LLVM ${ARGV})
endfunction()
