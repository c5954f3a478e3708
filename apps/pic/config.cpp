// The configuration (config.hpp): the named cases, the box, the checks.
#include "config.hpp"

#include <cmath>

#include <cunumpy/errors.hpp>

#include "config_table.hpp"

namespace pic {

namespace cn = cunumpy;

BoxLengths box_of(const Config& c) {
  // One wavelength of the wave vector's component along each axis it has one on: 2 pi / (k /
  // sqrt m) for m such axes; the others in proportion to their cells.
  const std::array<int, 3> mode = mode_of(c);
  const double m = mode[0] + mode[1] + mode[2];
  const double lx = 2.0 * M_PI * std::sqrt(m) / c.k;
  auto along = [&](int axis, int cells) {
    if (c.dim <= axis) return 1.0;
    return mode[axis] == 1 ? lx : lx * static_cast<double>(cells) / static_cast<double>(c.cells_x);
  };
  return {lx, along(1, c.cells_y), along(2, c.cells_z)};
}

std::array<int, 3> mode_of(const Config& c) {
  if (c.direction == "xyz") return {1, 1, 1};
  if (c.direction == "xy") return {1, 1, 0};
  return {1, 0, 0};
}

long long total_cells(const Config& c) {
  return static_cast<long long>(c.cells_x) * (c.dim >= 2 ? c.cells_y : 1LL) *
         (c.dim == 3 ? c.cells_z : 1LL);
}

double particle_weight(const Config& c) {
  const BoxLengths box = box_of(c);
  return box.lx * box.ly * box.lz / static_cast<double>(c.particles);
}

void apply_case(Config& c) {
  if (c.case_name == "landau") {
    c.k = 0.5;
    c.amplitude = 0.01;
    c.vth = 1.0;
    c.beam_velocity = 0.0;
  } else if (c.case_name == "two_stream") {
    c.k = 0.2;
    c.amplitude = 0.001;
    c.vth = 1.0;
    c.beam_velocity = 2.4;
  } else if (c.case_name != "custom") {
    throw cn::ValueError("unknown case '" + c.case_name +
                         "'; expected landau, two_stream or custom");
  }
}

void validate(const Config& c, int ranks) {
  // Each option within its row's range or choices (a NaN is outside every range: it would
  // reach float-to-int casts that are undefined behaviour).
  check_options(c);
  auto fail = [](const std::string& m) { throw cn::ValueError(m); };
  if (c.particles < ranks)
    fail("--particles must be at least the number of ranks (" + std::to_string(ranks) + ")");
  if (c.dim >= 2 && c.cells_y < 4)
    fail("--cells-y must be at least 4 in 2D and 3D, got " + std::to_string(c.cells_y));
  if (c.dim == 3 && c.cells_z < 4)
    fail("--cells-z must be at least 4 in 3D, got " + std::to_string(c.cells_z));
  if ((c.direction == "xy" && c.dim < 2) || (c.direction == "xyz" && c.dim < 3))
    fail("--direction " + c.direction + " needs --dim " + (c.direction == "xy" ? "2 or 3" : "3") +
         ", got --dim " + std::to_string(c.dim));
  if (c.direction != "x" && c.solver == "petsc")
    fail("--direction " + c.direction +
         " runs the spectral solver (--solver fft); the PETSc one measures the mode along x");
  // 3D runs every particle step on both layouts, with the spectral solver.
  if (c.dim == 3 && c.solver == "petsc")
    fail("--dim 3 runs the spectral solver (--solver fft); the PETSc one is 1D and 2D");
  if (c.beam_velocity != 0.0 && c.beam_velocity < 1e-12)
    fail("--beam-velocity must be 0 (one Maxwellian) or at least 1e-12");
  if ((c.output_every > 0 || c.checkpoint_every > 0) && c.output_folder.empty())
    fail("--output-every and --checkpoint-every need --output <folder>");
}

}  // namespace pic
