// Comm without MPI built in: the world is the serial stand-in (internal/comm_impl.hpp).
#include <cunumpy/internal/comm_impl.hpp>

namespace cunumpy {

namespace detail {
std::shared_ptr<CommImpl> make_world_comm() {
  return nullptr;
}
}  // namespace detail

bool mpi_initialized() {
  return false;
}
bool init_mpi(int*, char***) {
  return false;
}
void finalize_mpi() {}

}  // namespace cunumpy
