// cunumpy/cunumpy.hpp: the umbrella header, everything a simulation uses.
#pragma once

#include <cunumpy/algorithms.hpp>
#include <cunumpy/arithmetic.cuh>
#include <cunumpy/array.hpp>
#include <cunumpy/atomic.cuh>
#include <cunumpy/backend.hpp>
#include <cunumpy/build_config.hpp>
#include <cunumpy/comm.hpp>
#include <cunumpy/decomposition.hpp>
#include <cunumpy/device.hpp>
#include <cunumpy/device_mirror.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/halo.hpp>
#include <cunumpy/host_staging.hpp>
#include <cunumpy/launcher.hpp>
#include <cunumpy/memory.hpp>
#include <cunumpy/memory_block.hpp>
#include <cunumpy/morton.cuh>
#include <cunumpy/mpi_buffer.hpp>
#include <cunumpy/parallel.hpp>
#include <cunumpy/profiling.hpp>
#include <cunumpy/random.cuh>
#include <cunumpy/rng.hpp>
#include <cunumpy/runtime.hpp>
#include <cunumpy/stream.hpp>
#include <cunumpy/transfer.hpp>
