#include "dispersion.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace pic {

std::complex<double> faddeeva(std::complex<double> z) {
  // w(z) = sum_n (i z)^n / Gamma(n / 2 + 1)
  const std::complex<double> iz(-z.imag(), z.real());
  std::complex<double> term(1.0, 0.0), sum(0.0, 0.0);
  for (int n = 0; n < 400; ++n) {
    const std::complex<double> contribution = term / std::tgamma(0.5 * n + 1.0);
    sum += contribution;
    if (n > 10 && std::abs(contribution) < 1e-17 * std::abs(sum)) break;
    term *= iz;
  }
  return sum;
}

std::complex<double> plasma_z(std::complex<double> z) {
  return std::complex<double>(0.0, std::sqrt(M_PI)) * faddeeva(z);
}

std::complex<double> dielectric(std::complex<double> omega, double k,
                                const std::vector<Species>& species) {
  std::complex<double> eps(1.0, 0.0);
  for (const Species& s : species) {
    const std::complex<double> zeta = (omega - k * s.drift) / (std::sqrt(2.0) * k * s.thermal);
    eps += s.density / (k * k * s.thermal * s.thermal) * (1.0 + zeta * plasma_z(zeta));
  }
  return eps;
}

namespace {
bool newton(double k, const std::vector<Species>& species, std::complex<double>& omega) {
  for (int it = 0; it < 100; ++it) {
    const std::complex<double> f = dielectric(omega, k, species);
    const std::complex<double> h(1e-7, 0.0);
    const std::complex<double> df = (dielectric(omega + h, k, species) - f) / h;
    if (std::abs(df) == 0.0) return false;
    const std::complex<double> step = f / df;
    omega -= step;
    if (std::abs(omega) > 1e3 || !std::isfinite(omega.real()) || !std::isfinite(omega.imag()))
      return false;
    if (std::abs(step) < 1e-13 * std::max(1.0, std::abs(omega)))
      return std::abs(dielectric(omega, k, species)) < 1e-8;
  }
  return false;
}
}  // namespace

std::complex<double> solve_dispersion(double k, const std::vector<Species>& species) {
  double vth2 = 0.0;
  for (const Species& s : species) vth2 += s.density * s.thermal * s.thermal;
  const double bohm_gross = std::sqrt(1.0 + 3.0 * k * k * vth2);
  const std::complex<double> guesses[] = {
      {bohm_gross, -0.1}, {0.0, 0.3}, {0.0, 0.1}, {0.5, 0.2}, {1.0, 0.0}};
  bool found = false;
  std::complex<double> best;
  for (std::complex<double> g : guesses) {
    std::complex<double> omega = g;
    if (!newton(k, species, omega)) continue;
    omega = std::complex<double>(std::abs(omega.real()), omega.imag());  // +/- omega pairs
    if (!found || omega.imag() > best.imag() + 1e-9) best = omega;
    found = true;
  }
  return found ? best : std::complex<double>(std::nan(""), std::nan(""));
}

namespace {
// Least-squares slope and intercept of y(x).
std::pair<double, double> line_fit(const std::vector<double>& x, const std::vector<double>& y) {
  const double n = static_cast<double>(x.size());
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / n;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / n;
  double sxy = 0, sxx = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxy += (x[i] - mx) * (y[i] - my);
    sxx += (x[i] - mx) * (x[i] - mx);
  }
  const double slope = sxx > 0 ? sxy / sxx : 0.0;
  return {slope, my - slope * mx};
}
// A fit that could not be made: NaN rates and the reason.
Fit no_fit(Fit fit, std::string why) {
  fit.gamma = fit.omega = std::nan("");
  fit.failure = std::move(why);
  return fit;
}
}  // namespace

Fit fit_damped(const std::vector<double>& t, const std::vector<double>& energy) {
  Fit fit;
  if (energy.size() < 8)
    return no_fit(fit, "too few samples of the mode's energy (" + std::to_string(energy.size()) +
                           "; the fit needs at least 8)");
  // The noise floor: the median of the last quarter of the run.  Peaks within a factor 10 of
  // it are no longer the linear mode.
  std::vector<double> tail(energy.end() - static_cast<long>(energy.size() / 4), energy.end());
  std::nth_element(tail.begin(), tail.begin() + static_cast<long>(tail.size() / 2), tail.end());
  const double floor = tail[tail.size() / 2];
  std::vector<double> pt, pl;
  for (std::size_t i = 1; i + 1 < energy.size(); ++i) {
    if (!(energy[i] > energy[i - 1] && energy[i] >= energy[i + 1])) continue;
    if (energy[i] < 10.0 * floor) break;  // the noise floor is near: the linear phase is over
    // Refine the peak time with a parabola through the three samples.
    const double a = energy[i - 1], b = energy[i], c = energy[i + 1];
    const double denom = a - 2 * b + c;
    const double shift = denom != 0 ? 0.5 * (a - c) / denom : 0.0;
    const double peak_t = t[i] + shift * (t[i + 1] - t[i]);
    const double peak_log = std::log(b);
    if (!pl.empty() && peak_log >= pl.back()) break;  // no longer decaying
    // A maximum much closer than the first spacing is noise, not the next oscillation.
    if (pt.size() >= 2 && peak_t - pt.back() < 0.6 * (pt[1] - pt[0])) break;
    pt.push_back(peak_t);
    pl.push_back(peak_log);
  }
  fit.points = static_cast<int>(pt.size());
  if (pt.empty())
    return no_fit(fit,
                  "the mode never rose above the noise: no peak of its energy stood a factor 10 "
                  "above the noise floor (the median of the run's last quarter); more particles "
                  "a cell lower the floor");
  if (pt.size() < 3)
    return no_fit(fit, "only " + std::to_string(pt.size()) +
                           " peak(s) of the mode's energy before the noise floor (the fit needs "
                           "3); more particles a cell lower the floor");
  fit.gamma = 0.5 * line_fit(pt, pl).first;
  fit.omega = M_PI * static_cast<double>(pt.size() - 1) / (pt.back() - pt.front());
  fit.t_begin = pt.front();
  fit.t_end = pt.back();
  return fit;
}

Fit fit_growing(const std::vector<double>& t, const std::vector<double>& energy) {
  Fit fit;
  if (energy.size() < 4)
    return no_fit(fit, "too few samples of the mode's energy (" + std::to_string(energy.size()) +
                           "; the fit needs at least 4)");
  const double start = energy.front() > 0 ? energy.front() : 1e-300;
  const double top = *std::max_element(energy.begin(), energy.end());
  std::vector<double> x, y;
  for (std::size_t i = 0; i < energy.size(); ++i) {
    if (energy[i] >= top / 20.0) break;
    if (energy[i] > start * std::exp(2.0)) {
      x.push_back(t[i]);
      y.push_back(std::log(energy[i]));
    }
  }
  fit.points = static_cast<int>(x.size());
  if (x.size() < 3)
    return no_fit(fit, std::to_string(x.size()) +
                           " sample(s) where the mode had grown e^2 above its start and was still "
                           "below 1/20 of its largest energy (the fit needs 3): it never grew out "
                           "of the noise, or the run is too short or its output too sparse");
  fit.gamma = 0.5 * line_fit(x, y).first;
  fit.t_begin = x.front();
  fit.t_end = x.back();
  return fit;
}

}  // namespace pic
