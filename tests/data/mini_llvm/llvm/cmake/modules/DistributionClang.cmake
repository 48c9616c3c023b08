# The distribution compiler the stand-in clang forwards to, found once at configure time:
# /usr/lib/llvm-*/bin/clang++ (highest version first), else clang++-21/-19/-16/-14 on
# PATH. ld.lld, llvm-objdump, llvm-readobj, llvm-readelf and clang-offload-bundler are
# taken from the same place (Debian's lld-<N>, llvm-<N>, clang-tools-<N>), so the
# installed toolchain needs nothing that only the build stage had. Override with
# MINI_LLVM_FORWARD_DIR (a directory holding clang, clang++, ld.lld and those tools).
# Only clang and clang++ must exist: a tool the distribution lacks is built all the same
# and says so when run (the CPU builder has no llvm-objdump; nothing there runs it).

set(MINI_LLVM_FORWARD_DIR "" CACHE PATH
  "Directory of the distribution clang/clang++/ld.lld to forward to (found when empty)")

set(forward_tools ld.lld llvm-objdump llvm-readobj llvm-readelf clang-offload-bundler)

if(MINI_LLVM_FORWARD_DIR)
  set(forward_clangxx "${MINI_LLVM_FORWARD_DIR}/clang++")
  set(forward_clang "${MINI_LLVM_FORWARD_DIR}/clang")
  set(forward_dir "${MINI_LLVM_FORWARD_DIR}")
  set(forward_suffix "")
else()
  set(forward_clangxx "")
  file(GLOB llvm_dirs LIST_DIRECTORIES true /usr/lib/llvm-*)
  list(SORT llvm_dirs COMPARE NATURAL ORDER DESCENDING)
  foreach(dir IN LISTS llvm_dirs)
    if(EXISTS "${dir}/bin/clang++" AND EXISTS "${dir}/bin/clang")
      set(forward_clangxx "${dir}/bin/clang++")
      set(forward_clang "${dir}/bin/clang")
      set(forward_dir "${dir}/bin")
      set(forward_suffix "")
      break()
    endif()
  endforeach()
  if(NOT forward_clangxx)
    foreach(version 21 19 16 14)
      find_program(found_clangxx_${version} clang++-${version} NO_CACHE)
      if(found_clangxx_${version})
        get_filename_component(dir "${found_clangxx_${version}}" DIRECTORY)
        set(forward_clangxx "${found_clangxx_${version}}")
        set(forward_clang "${dir}/clang-${version}")
        set(forward_dir "${dir}")
        set(forward_suffix "-${version}")
        break()
      endif()
    endforeach()
  endif()
endif()

if(NOT forward_clangxx OR NOT EXISTS "${forward_clangxx}" OR NOT EXISTS "${forward_clang}")
  message(FATAL_ERROR
    "No distribution clang to forward to: none of /usr/lib/llvm-*/bin/clang++, "
    "clang++-21, clang++-19, clang++-16, clang++-14 exists. Install one "
    "(apt-get install clang-16) or set MINI_LLVM_FORWARD_DIR.")
endif()
message(STATUS "Forwarding clang to ${forward_clang} and ${forward_clangxx}")
set(MINI_LLVM_FORWARD_CLANG "${forward_clang}")
set(MINI_LLVM_FORWARD_CLANGXX "${forward_clangxx}")

# MINI_LLVM_FORWARD_LLD, _LLVM_OBJDUMP, _LLVM_READOBJ, _LLVM_READELF, _CLANG_OFFLOAD_BUNDLER.
set(missing_tools)
foreach(tool IN LISTS forward_tools)
  string(TOUPPER "${tool}" var)
  string(REGEX REPLACE "[^A-Z0-9]" "_" var "${var}")
  if(var STREQUAL "LD_LLD")
    set(var LLD)
  endif()
  set(MINI_LLVM_FORWARD_${var} "${forward_dir}/${tool}${forward_suffix}")
  if(NOT EXISTS "${MINI_LLVM_FORWARD_${var}}")
    list(APPEND missing_tools "${tool}${forward_suffix}")
  endif()
endforeach()
if(missing_tools)
  list(JOIN missing_tools ", " missing_tools)
  message(STATUS "Not in ${forward_dir}: ${missing_tools} (ours say so when run)")
endif()
