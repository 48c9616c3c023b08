/* What configure found (written by CMake from config.h.cmake). */
#ifndef LLD_COMMON_CONFIG_H
#define LLD_COMMON_CONFIG_H

/* The distribution ld.lld the GNU flavor forwards to. */
#define MINI_LLVM_FORWARD_LLD "${MINI_LLVM_FORWARD_LLD}"

#endif
