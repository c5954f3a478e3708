// The baselines again, built with -O3 -march=x86-64-v3 (bench_baselines.hpp).
#define BASELINE_NAMESPACE baseline_avx2
#include "bench_baselines.cpp"  // NOLINT(bugprone-suspicious-include)
