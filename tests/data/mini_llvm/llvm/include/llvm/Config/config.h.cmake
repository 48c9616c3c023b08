/* What configure found (written by CMake from config.h.cmake), as llvm/Config/config.h. */
#ifndef CONFIG_H
#define CONFIG_H

#define PACKAGE_NAME "LLVM"
#define PACKAGE_VERSION "${PACKAGE_VERSION}"

/* Whether CMAKE_BUILD_TYPE is Debug. */
#cmakedefine01 LLVM_IS_DEBUG_BUILD

/* The distribution tools llvm-objdump and llvm-readobj/llvm-readelf forward to. */
#define MINI_LLVM_FORWARD_LLVM_OBJDUMP "${MINI_LLVM_FORWARD_LLVM_OBJDUMP}"
#define MINI_LLVM_FORWARD_LLVM_READOBJ "${MINI_LLVM_FORWARD_LLVM_READOBJ}"
#define MINI_LLVM_FORWARD_LLVM_READELF "${MINI_LLVM_FORWARD_LLVM_READELF}"

#endif
