// The CUDA twin of legacy.c's deposit: one thread a particle, the grid summed with atomics.
extern "C" __global__ void deposit(const float* part, float* q, float qm, int nop, int idimp,
                                   int nx) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= nop) return;
  const float x = part[idimp * j];
  const int n = (int)x;
  const float dx = x - (float)n;
  atomicAdd(&q[n], qm * (1.0f - dx));
  atomicAdd(&q[(n + 1) % nx], qm * dx);
}
