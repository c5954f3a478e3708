// apps/pic/builtin_step.hpp: the separate passes of the builtin step (builtin_step.cpp), which
// the deterministic step shares.
#pragma once

#include "layout.hpp"
#include "particles.hpp"
#include "step.hpp"

namespace pic::builtin {

// The field at the particles: particles.ex[, ey[, ez]] from the layout's E (allocated here
// when released).
void gather(Particles& particles, const FieldLayout& layout);
// gather and push without moving, in one pass and without the field at the particles in
// arrays: v += dv E.  The same bits as gather + push(move = false).
StepSums kick(Particles& particles, const FieldLayout& layout, double dv);
// v += dv E at the particles; then, if `move`, x += dt v (wrapped).  This rank's sums.
StepSums push(Particles& particles, const FieldLayout& layout, double dv, double dt, bool move);
// layout.ne = the density by atomics on the device (zeroed first).
void deposit_atomics(const Particles& particles, FieldLayout& layout);
// layout.ne = the density by private per-thread grids on the host (the kernel catalog's host
// deposit).
void deposit_private_grids(const Particles& particles, FieldLayout& layout);

}  // namespace pic::builtin
