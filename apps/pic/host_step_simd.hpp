// apps/pic/host_step_simd.hpp: host_step's CIC loop over whole vectors of particles
// (host_step_simd.cpp: one Google Highway source, the instruction set chosen at run time).
#pragma once

#include <vector>

#include "host_step.hpp"

namespace pic::host_step {

// The field as the vector loop reads it: cell (i, j), i in [0, nx], j in [0, ny], holds the
// field at its four corners, E_x then E_y, in kernels::for_each_node's order ((i, j), (i, j+1),
// (i+1, j), (i+1, j+1)): 64 bytes, one load per particle and component gathered from one line.
void fill_cell_fields(long long nx, long long ny, const double* ex, const double* ey,
                      std::vector<double>& cells);

// CIC particles [begin, end) by whole vectors: the gather, push and move of a chunk with
// vector instructions, its deposit (into the guarded `ne`) one particle at a time.  Returns
// where it stopped (the rest is the scalar loop's); adds to `sums`.  Returns begin when the
// CPU offers no vector target.
long long cic_vectors(const GuardedGrid& g, const Step& s, const double* cells, long long begin,
                      long long end, double* ne, Sums& sums);

}  // namespace pic::host_step
