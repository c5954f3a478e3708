// apps/pic/output.hpp: what a run writes while it runs: openPMD snapshots of the fields and the
// particles, staged (copied to pinned host memory beside the step, written at its end).
// energy.csv and summary.json are pic.hpp's write_outputs (output.cpp too).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
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
  using Staging = std::variant<std::unique_ptr<cunumpy::HostStaging<double>>,
                               std::unique_ptr<cunumpy::HostStaging<float>>,
                               std::unique_ptr<cunumpy::HostStaging<std::int32_t>>,
                               std::unique_ptr<cunumpy::HostStaging<std::int64_t>>>;
  using StagedColumn =
      std::variant<cunumpy::StagedCopy<double>, cunumpy::StagedCopy<float>,
                   cunumpy::StagedCopy<std::int32_t>, cunumpy::StagedCopy<std::int64_t>>;
  struct Pending {
    int step = 0;
    long long n = 0;
    bool single = false;  // float particles
    cunumpy::ParticleLayout layout;
    std::vector<cunumpy::StagedCopy<double>> fields;  // rho, ex[, ey[, ez]]
    // Every column of the particle set, by name (ParticleSet::for_each_column's order).
    std::vector<std::pair<std::string, StagedColumn>> columns;
    std::vector<double> cell_size;  // with cells
  };
  template <typename Real>
  std::string write_as(Pending& p, const MeshBlock& mesh, cunumpy::ParticleSpecies& species,
                       double dt);
  SnapshotWriter writer_;
  // One staging per array, remade when an array's shape changes (a particle array that grew).
  std::vector<std::unique_ptr<cunumpy::HostStaging<double>>> fields_;
  std::map<std::string, Staging> columns_;  // by column name
  std::optional<Pending> pending_;
};

}  // namespace pic
