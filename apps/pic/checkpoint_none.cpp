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

std::string write_checkpoint(const std::string&, const cunumpy::Comm&, const Checkpoint&) {
  no_hdf5();
}
Checkpoint read_checkpoint(const std::string&, const cunumpy::Comm&) {
  no_hdf5();
}
Config read_checkpoint_config(const std::string&, const cunumpy::Comm&) {
  no_hdf5();
}
SnapshotWriter::SnapshotWriter(const std::string&, const cunumpy::Comm&, bool) {
  no_hdf5();
}
SnapshotWriter::~SnapshotWriter() = default;
std::string SnapshotWriter::write(int, double, double, const MeshBlock&, const ParticleBlock&) {
  no_hdf5();
}

}  // namespace pic
