// The CUDA twin of scale_host (kernel_pair.cpp): the catalog finds it as <name>/<name>_cuda.cu.
extern "C" __global__ void scale(double* x, double a, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
