// apps/pic/builtin_step.hpp: the separate passes of the builtin step (builtin_step.cpp), which
// the deterministic step shares (instantiated for double and float particles).
#pragma once

#include "layout.hpp"
#include "particles.hpp"
#include "step.hpp"

namespace pic::builtin {

// The field at the particles: particles.ex[, ey[, ez]] from the layout's E (allocated here
// when released).
template <typename Real>
void gather(Particles<Real>& particles, const FieldLayout& layout);
// gather and push without moving, in one pass and without the field at the particles in
// arrays: v += dv E.  The same bits as gather + push(move = false).
template <typename Real>
StepSums kick(Particles<Real>& particles, const FieldLayout& layout, double dv);
// v += dv E at the particles; then, if `move`, x += dt v (wrapped).  This rank's sums.
template <typename Real>
StepSums push(Particles<Real>& particles, const FieldLayout& layout, double dv, double dt,
              bool move);
// layout.ne = the density by atomics on the device (zeroed first).
template <typename Real>
void deposit_atomics(const Particles<Real>& particles, FieldLayout& layout);
// layout.ne = the density by private per-thread grids on the host (the kernel catalog's host
// deposit).
template <typename Real>
void deposit_private_grids(const Particles<Real>& particles, FieldLayout& layout);

}  // namespace pic::builtin
