// The mini-app's CIC vector loop (apps/pic/host_step_simd.cpp) against its scalar loop: positions,
// velocities and density bit for bit, far movers included.  Built and run by
// scripts/arm_check.sh under qemu-user for NEON, SVE and SVE2.
#include <cstdio>
#include <random>
#include <vector>
#include "host_step.hpp"
#include "host_step_simd.hpp"
namespace hs = pic::host_step;
int main() {
  const long long nx = 16, ny = 12, n = 1003;
  const hs::GuardedGrid g = hs::guarded(nx, ny);
  std::mt19937_64 gen(5);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> ex(nx * ny), ey(nx * ny), exy, cells;
  for (auto& e : ex) e = u(gen) - 0.5;
  for (auto& e : ey) e = u(gen) - 0.5;
  hs::fill_guarded_fields(g, ex.data(), ey.data(), exy);
  hs::fill_cell_fields(nx, ny, ex.data(), ey.data(), cells);
  std::vector<double> x(n), y(n), vx(n), vy(n);
  for (long long i = 0; i < n; ++i) {
    x[i] = u(gen) * nx;
    y[i] = u(gen) * ny;
    vx[i] = 4 * (u(gen) - 0.5);
    vy[i] = 4 * (u(gen) - 0.5);
  }
  vx[17] = 31.0 * nx;
  vy[18] = -22.0 * ny;
  std::vector<double> res[2][5];
  for (int v = 0; v < 2; ++v) {
    std::vector<double> px = x, py = y, pvx = vx, pvy = vy;
    const hs::Step step{px.data(), py.data(), pvx.data(), pvy.data(), n,
                        1,         1.0,       1.0,        double(nx), double(ny),
                        -0.1,      0.1,       0.5,        exy.data(), v ? cells.data() : nullptr};
    std::vector<std::vector<double>> grid(1, std::vector<double>(g.nodes(), 0.0));
    hs::push_and_deposit(g, step, grid);
    std::vector<double> ne(nx * ny);
    hs::fold_densities(g, grid, ne.data());
    res[v][0] = px;
    res[v][1] = py;
    res[v][2] = pvx;
    res[v][3] = pvy;
    res[v][4] = ne;
  }
  bool same = true;
  for (int k = 0; k < 5; ++k) same = same && res[0][k] == res[1][k];
  std::printf("%s\n", same ? "vector loop == scalar loop" : "DIFFERENT");
  return same ? 0 : 1;
}
