// cunumpy/io.hpp: what the io layer was built with.  The HDF5 and openPMD headers
// (<cunumpy/hdf5.hpp>, <cunumpy/openpmd.hpp>) exist when hdf5_available().
#pragma once

namespace cunumpy {

// Whether cunumpy was built with HDF5 (CUNUMPY_ENABLE_HDF5; parallel with MPI).
bool hdf5_available() noexcept;

}  // namespace cunumpy
