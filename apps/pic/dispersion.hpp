// apps/pic/dispersion.hpp: the theory the mini-app is checked against, and the fits.
//
// The electrostatic dispersion relation of drifting Maxwellian species (normalised units,
// omega_p = 1 for the total density, lambda_D = 1 for v_th = 1):
//   eps(omega, k) = 1 + sum_s (n_s / (k^2 v_s^2)) (1 + zeta_s Z(zeta_s)) = 0,
//   zeta_s = (omega - k u_s) / (sqrt(2) k v_s),
// with Z the plasma dispersion function, Z(z) = i sqrt(pi) w(z), w the Faddeeva function
// (entire, so the same series gives Landau's analytic continuation below the real axis).
#pragma once

#include <complex>
#include <string>
#include <vector>

namespace pic {

struct Species {
  double density;  // fraction of the total density (sum 1)
  double drift;    // u_s
  double thermal;  // v_s
};

// The Faddeeva function w(z) = exp(-z^2) erfc(-i z), by its Taylor series (|z| up to ~5).
std::complex<double> faddeeva(std::complex<double> z);
// The plasma dispersion function Z(z) = i sqrt(pi) w(z).
std::complex<double> plasma_z(std::complex<double> z);

std::complex<double> dielectric(std::complex<double> omega, double k,
                                const std::vector<Species>& species);

// The root of eps(omega, k) = 0 with the largest growth rate (imaginary part) among those
// reached from a few starting points; omega = real + i gamma.
std::complex<double> solve_dispersion(double k, const std::vector<Species>& species);

// A fit that could not be made has NaN rates and says why in `failure` (empty when fitted).
struct Fit {
  double gamma = 0.0;  // growth (> 0) or damping (< 0) rate of the field amplitude
  double omega = 0.0;  // real frequency (0 for a purely growing mode)
  int points = 0;      // samples used
  double t_begin = 0.0, t_end = 0.0;
  std::string failure;
};

// Landau-type damping from the field energy W(t) ~ exp(2 gamma t) cos^2(omega t): the peaks
// of W while they decrease (the linear phase, until the noise floor), log-linear fit of the
// peaks for gamma, their spacing pi / omega for omega.  The linear phase ends at the first
// peak within a factor 10 of the noise floor (the median of the run's last quarter), or when
// the peaks stop decreasing or come closer than the oscillation allows.
Fit fit_damped(const std::vector<double>& t, const std::vector<double>& energy);
// Exponential growth: a log-linear fit of W over the window where it has grown by e^2 above
// its start and is still below 1/20 of its maximum.
Fit fit_growing(const std::vector<double>& t, const std::vector<double>& energy);

}  // namespace pic
