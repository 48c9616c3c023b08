/* What configure found (written by CMake from config.h.cmake). */
#ifndef CLANG_CONFIG_H
#define CLANG_CONFIG_H

/* Default target triple: what `--version` names, as LLVM_DEFAULT_TARGET_TRIPLE. */
#define LLVM_DEFAULT_TARGET_TRIPLE "${LLVM_DEFAULT_TARGET_TRIPLE}"

/* The distribution drivers every compilation is forwarded to. */
#define MINI_LLVM_FORWARD_CLANG "${MINI_LLVM_FORWARD_CLANG}"
#define MINI_LLVM_FORWARD_CLANGXX "${MINI_LLVM_FORWARD_CLANGXX}"

/* The distribution clang-offload-bundler ours forwards to. */
#define MINI_LLVM_FORWARD_CLANG_OFFLOAD_BUNDLER "${MINI_LLVM_FORWARD_CLANG_OFFLOAD_BUNDLER}"

#endif
