// cunumpy/config.cuh: the one place that spells CUDA's function qualifiers.
//
// Every host+device function of cunumpy is declared CUNUMPY_HD (or CUNUMPY_HD_INLINE);
// lambdas handed to parallel_for are written CUNUMPY_LAMBDA.  Compiled by a host compiler
// (g++, clang) the qualifiers are empty, so the same header builds everywhere.  Conditions
// are function-like macros: a typo is a preprocessor error instead of a silent 0.
#pragma once

// True in any compilation by nvcc or NVRTC (host and device passes), and for kernels compiled
// by cunumpy's kernel emulator (<cunumpy/emulator.hpp>), whose device pass is the host's.
#if defined(__CUDACC__) || defined(CUNUMPY_EMULATOR)
#define CUNUMPY_CUDA_COMPILATION() 1
#else
#define CUNUMPY_CUDA_COMPILATION() 0
#endif

// True only in the device pass of nvcc, or under NVRTC.
#if defined(__CUDA_ARCH__) || defined(__CUDACC_RTC__)
#define CUNUMPY_DEVICE_PASS() 1
#else
#define CUNUMPY_DEVICE_PASS() 0
#endif

// True under NVRTC, where the C++ standard library is not available.
#if defined(__CUDACC_RTC__)
#define CUNUMPY_NVRTC() 1
#else
#define CUNUMPY_NVRTC() 0
#endif

// Qualifiers for code that both the host compiler and nvcc compile: CUNUMPY_HD (host and
// device functions), CUNUMPY_HD_INLINE, CUNUMPY_DEVICE, and CUNUMPY_LAMBDA (a lambda capturing
// by value that a device loop can run).  Empty or plain inline for host-only compilers.
#if CUNUMPY_CUDA_COMPILATION()
#define CUNUMPY_HD __host__ __device__
#define CUNUMPY_HD_INLINE __host__ __device__ __forceinline__
#define CUNUMPY_DEVICE __device__
#define CUNUMPY_LAMBDA [=] __host__ __device__
#else
#define CUNUMPY_HD
#define CUNUMPY_HD_INLINE inline
#define CUNUMPY_DEVICE
#define CUNUMPY_LAMBDA [=]
#endif
