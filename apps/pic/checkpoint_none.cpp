// The mini-app built without HDF5 (checkpoint.hpp): checkpoints and openPMD output are not
// available, and asking for them is a clear error before the first step.
#include "checkpoint.hpp"

namespace pic {

namespace {
[[noreturn]] void no_hdf5() {
  throw cunumpy::BackendError(
      "built without HDF5, so --output-every, --checkpoint-every and --restart are not "
      "available; install libhdf5-openmpi-dev and build with MPI and -DCUNUMPY_ENABLE_HDF5=ON");
}
}  // namespace

template <typename Real>
std::string write_checkpoint(const std::string&, const cunumpy::Comm&, const Checkpoint<Real>&) {
  no_hdf5();
}
template <typename Real>
Checkpoint<Real> read_checkpoint(const std::string&, const cunumpy::Comm&, cunumpy::Backend) {
  no_hdf5();
}
template std::string write_checkpoint<double>(const std::string&, const cunumpy::Comm&,
                                              const Checkpoint<double>&);
template std::string write_checkpoint<float>(const std::string&, const cunumpy::Comm&,
                                             const Checkpoint<float>&);
template Checkpoint<double> read_checkpoint<double>(const std::string&, const cunumpy::Comm&,
                                                    cunumpy::Backend);
template Checkpoint<float> read_checkpoint<float>(const std::string&, const cunumpy::Comm&,
                                                  cunumpy::Backend);
Config read_checkpoint_config(const std::string&, const cunumpy::Comm&) {
  no_hdf5();
}
SnapshotWriter::SnapshotWriter(const std::string&, const cunumpy::Comm&, bool) {
  no_hdf5();
}
SnapshotWriter::~SnapshotWriter() = default;
template <typename Real>
std::string SnapshotWriter::write(int, double, double, const MeshBlock&,
                                  const cunumpy::ParticleSet<Real>&,
                                  const cunumpy::ParticleSpecies&) {
  no_hdf5();
}
template std::string SnapshotWriter::write<double>(int, double, double, const MeshBlock&,
                                                   const cunumpy::ParticleSet<double>&,
                                                   const cunumpy::ParticleSpecies&);
template std::string SnapshotWriter::write<float>(int, double, double, const MeshBlock&,
                                                  const cunumpy::ParticleSet<float>&,
                                                  const cunumpy::ParticleSpecies&);

}  // namespace pic
