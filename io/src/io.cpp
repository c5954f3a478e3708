// The io layer's build facts (io.hpp).
#include <cunumpy/io.hpp>

#include <cunumpy/build_config.hpp>

namespace cunumpy {

bool hdf5_available() noexcept {
  return CUNUMPY_HAS_HDF5() != 0;
}

}  // namespace cunumpy
