# get_host_triple(var): what llvm-project's config.guess answers on Linux with glibc
# (`x86_64:Linux:*:*) echo x86_64-unknown-linux-gnu`, likewise for aarch64).

function(get_host_triple var)
  if(NOT CMAKE_HOST_SYSTEM_NAME STREQUAL "Linux")
    message(FATAL_ERROR "This mini llvm-project builds on Linux only.")
  endif()
  set(${var} "${CMAKE_HOST_SYSTEM_PROCESSOR}-unknown-linux-gnu" PARENT_SCOPE)
endfunction()
