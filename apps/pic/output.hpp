// apps/pic/output.hpp: what a run writes while it runs: openPMD snapshots of the fields and the
// particles, staged (copied to pinned host memory beside the step, written at its end).
// energy.csv and summary.json are pic.hpp's write_outputs (output.cpp too).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "checkpoint.hpp"
#include "layout.hpp"
#include "particles.hpp"

namespace pic {

class StagedOutput {
 public:
  StagedOutput(const std::string& folder, const cunumpy::Comm& comm, bool overwrite);
  // Starts the copies of rho_n, E_n and the particles at x_n (HostStaging: no wait).
  template <typename Real>
  void start(const Particles<Real>& particles, const FieldLayout& layout, int step);
  bool pending() const noexcept { return pending_.has_value(); }
  // Waits for the copies (they landed during the step, on a GPU) and writes them; the file.
  std::string write(const FieldLayout& layout, double dt, double weight);

 private:
  template <typename T>
  static cunumpy::StagedCopy<T> stage(std::unique_ptr<cunumpy::HostStaging<T>>& staging,
                                      const cunumpy::Array<T>& a);
  struct Pending {
    int step = 0;
    long long n = 0;
    std::vector<cunumpy::StagedCopy<double>> fields, columns;  // rho, ex[, ey]; x, vx[, y, vy]
    std::vector<cunumpy::StagedCopy<float>> columns32;         // x, vx[, ...] of float particles
    std::vector<cunumpy::StagedCopy<std::int32_t>> cells;      // cx[, cy[, cz]]: mixed precision
    std::vector<double> cell_size;                             // with cells
    std::optional<cunumpy::StagedCopy<std::int64_t>> id;
  };
  SnapshotWriter writer_;
  // One staging per array, remade when an array's shape changes (a particle array that grew).
  std::vector<std::unique_ptr<cunumpy::HostStaging<double>>> doubles_;
  std::vector<std::unique_ptr<cunumpy::HostStaging<float>>> floats_;
  std::unique_ptr<cunumpy::HostStaging<std::int64_t>> ids_;
  std::vector<std::unique_ptr<cunumpy::HostStaging<std::int32_t>>> cells_;
  std::optional<Pending> pending_;
  int dim_ = 1;
};

}  // namespace pic
