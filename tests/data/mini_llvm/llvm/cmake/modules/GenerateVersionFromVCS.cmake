# CMake script that writes version control information to a header, as llvm-project's
# llvm/cmake/modules/GenerateVersionFromVCS.cmake does (same inputs, same precedence:
# LLVM_FORCE_VC_REVISION/_REPOSITORY win for every name, then <NAME>_VC_REPOSITORY with
# <NAME>_VC_REVISION (both, or neither is used), then the git of <NAME>_SOURCE_DIR).
#
# Input variables:
#   NAMES             - A list of names for each of the source directories.
#   <NAME>_SOURCE_DIR - A path to source directory for each name in NAMES.
#   HEADER_FILE       - The header file to write
#
# The output header will contain macros <NAME>_REPOSITORY and <NAME>_REVISION.

get_filename_component(LLVM_CMAKE_DIR "${CMAKE_SCRIPT_MODE_FILE}" PATH)
list(APPEND CMAKE_MODULE_PATH "${LLVM_CMAKE_DIR}")
include(VersionFromVCS)

set(ENV{TERM} "dumb")

function(append_info name revision repository)
  if(revision)
    file(APPEND "${HEADER_FILE}.tmp"
      "#define ${name}_REVISION \"${revision}\"\n")
  else()
    file(APPEND "${HEADER_FILE}.tmp"
      "#undef ${name}_REVISION\n")
  endif()
  if(repository)
    file(APPEND "${HEADER_FILE}.tmp"
      "#define ${name}_REPOSITORY \"${repository}\"\n")
  else()
    file(APPEND "${HEADER_FILE}.tmp"
      "#undef ${name}_REPOSITORY\n")
  endif()
endfunction()

file(REMOVE "${HEADER_FILE}.tmp")
string(REPLACE "|" ";" NAMES "${NAMES}")
foreach(name IN LISTS NAMES)
  if(LLVM_FORCE_VC_REVISION AND LLVM_FORCE_VC_REPOSITORY)
    set(revision ${LLVM_FORCE_VC_REVISION})
    set(repository ${LLVM_FORCE_VC_REPOSITORY})
  elseif(LLVM_FORCE_VC_REVISION)
    set(revision ${LLVM_FORCE_VC_REVISION})
  elseif(LLVM_FORCE_VC_REPOSITORY)
    set(repository ${LLVM_FORCE_VC_REPOSITORY})
  elseif(${name}_VC_REPOSITORY AND ${name}_VC_REVISION)
    set(revision ${${name}_VC_REVISION})
    set(repository ${${name}_VC_REPOSITORY})
  elseif(DEFINED ${name}_SOURCE_DIR)
    if(${name}_SOURCE_DIR)
      get_source_info("${${name}_SOURCE_DIR}" revision repository)
    endif()
  else()
    message(FATAL_ERROR "${name}_SOURCE_DIR is not defined")
  endif()
  append_info(${name} "${revision}" "${repository}")
endforeach()

# Copy the file only if it has changed: an unchanged revision recompiles nothing.
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different
  "${HEADER_FILE}.tmp" "${HEADER_FILE}")
file(REMOVE "${HEADER_FILE}.tmp")
