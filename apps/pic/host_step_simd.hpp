// apps/pic/host_step_simd.hpp: host_step's 2D and 3D CIC loops over whole vectors of particles
// (host_step_simd.cpp: one Google Highway source, the instruction set chosen at run time).
#pragma once

#include <cstdint>
#include <vector>

#include "host_step.hpp"

namespace pic::host_step {

// The field as the 2D float loop (cic_floats) reads it: guarded node c (the cell whose lower
// corner it is) holds the field at its four corners, E_x then E_y, in kernels::for_each_node's
// order (c, c + 1, c + row, c + row + 1), rounded to float: 32 bytes.  The last row and column
// of the guarded grid have no cell (their entries are unused).
void fill_cell_fields(long long nodes, long long row, const double* ex, const double* ey,
                      std::vector<float>& cells);

// 2D CIC particles [begin, end) by whole vectors (E from Step::exy): the gather, push and move
// of a chunk with vector instructions, its deposit (into the thread's guarded grid, double or
// int64) one particle at a time.  Returns where it stopped (the rest is the scalar loop's); adds to
// `sums`.  Returns begin when the CPU offers no vector target.
// Double or float particles (loaded as doubles, stored rounded as the scalar loop stores them).
long long cic_vectors(const Step<double>& s, long long begin, long long end, double* ne,
                      Sums& sums);
long long cic_vectors(const Step<double>& s, long long begin, long long end, std::int64_t* ne,
                      Sums& sums);
long long cic_vectors(const Step<float>& s, long long begin, long long end, std::int64_t* ne,
                      Sums& sums);
// Float particles with real grids (Step::floats, Step::cells32): 2D CIC particles [begin, end)
// in float arithmetic, whole vectors of floats (twice double's lanes), then the rest one lane at
// a time (every particle so on the baseline target with Step::one_lane or the portable choice:
// the same bits); each particle's kinetic energy term in float, the density and the sums in
// double.  Returns end.
long long cic_floats(const Step<float>& s, long long begin, long long end, double* ne, Sums& sums);
// The same in 3D (Step::nodes32): E at a stencil's eight corners from its four lines along z
// (two nodes, 32 bytes, each); the deposit unpaired (float_cic3_weights).  Returns end.
long long cic3_floats(const Step<float>& s, long long begin, long long end, double* ne, Sums& sums);
// 3D CIC by double vectors as cic_vectors, E's components gathered from Step::exy (3 doubles
// a node); float particles with integer grids (the deterministic step) likewise.
long long cic3_vectors(const Step<double>& s, long long begin, long long end, double* ne,
                       Sums& sums);
long long cic3_vectors(const Step<double>& s, long long begin, long long end, std::int64_t* ne,
                       Sums& sums);
long long cic3_vectors(const Step<float>& s, long long begin, long long end, std::int64_t* ne,
                       Sums& sums);

// Whether the host's vector targets run (not under the portable choice, CUNUMPY_HOST_SIMD):
// the loops above take the baseline's otherwise.
bool host_vectors();

// kernels::quanta of w[0, n) into out, whole vectors as the loops with integer grids compute
// them, the rest one at a time (std::llround(w 2^24) for finite |w 2^24| < 4e18; for the tests).
void quanta(const double* w, long long n, std::int64_t* out);

}  // namespace pic::host_step
