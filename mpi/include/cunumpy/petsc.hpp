// cunumpy/petsc.hpp: PETSc vectors that share the memory of cunumpy arrays (the C++ form of
// the Python reference's cunumpy.petsc.petsc_vec).
//
//   auto b = cunumpy::zeros<double>({n_local});               // this rank's part
//   cunumpy::PetscVec bv = cunumpy::petsc_vec(b, world);      // never copied
//   KSPSolve(ksp, bv.get(), xv.get());                        // PETSc writes into x's array
//
// The vector is a sequential one on one rank and an MPI vector over `comm` otherwise, whose
// local part is the array (its global size the sum of the ranks' array sizes; collective).
// The PetscVec owns the Vec (VecDestroy when it goes) and a reference to the array's memory,
// so the memory outlives the Vec.  PETSc is initialised at the first call (after MPI) and
// finalised when MPI ends (a callback of MPI_Finalize), unless the application did either
// itself.  Errors, as the reference's: an element type other than PetscScalar is a TypeError
// (it would need a copy); a device array with a PETSc built without CUDA is a BackendError
// (instead of PETSc working on a host copy).  cunumpy arrays are always contiguous, so the
// reference's non-contiguous error has no C++ counterpart.  Host work on the array and PETSc's
// work on the vector are ordered by the caller (synchronise device work before handing a
// device array to PETSc).
#pragma once

#include <cunumpy/build_config.hpp>

#if !CUNUMPY_HAS_PETSC()
#error \
    "cunumpy was built without PETSc: install petsc-dev and configure with -DCUNUMPY_ENABLE_PETSC=ON"
#endif

#include <memory>
#include <string>

#include <petscvec.h>

#include <cunumpy/array.hpp>
#include <cunumpy/comm.hpp>
#include <cunumpy/errors.hpp>

namespace cunumpy {

// Starts PETSc if it is not running (MPI first: cunumpy::init_mpi or the application).
void petsc_initialize();

// A PETSc Vec on an array's memory (no copy), destroyed with the object.
class PetscVec {
 public:
  PetscVec() = default;
  PetscVec(Vec v, std::shared_ptr<MemoryBlock> memory) : vec_(v), memory_(std::move(memory)) {}
  ~PetscVec() { reset(); }
  PetscVec(PetscVec&& o) noexcept : vec_(o.vec_), memory_(std::move(o.memory_)) {
    o.vec_ = nullptr;
  }
  PetscVec& operator=(PetscVec&& o) noexcept {
    if (this != &o) {
      reset();
      vec_ = o.vec_;
      memory_ = std::move(o.memory_);
      o.vec_ = nullptr;
    }
    return *this;
  }
  PetscVec(const PetscVec&) = delete;
  PetscVec& operator=(const PetscVec&) = delete;

  Vec get() const noexcept { return vec_; }
  operator Vec() const noexcept { return vec_; }  // NOLINT: hands the Vec to PETSc calls

 private:
  void reset() noexcept;
  Vec vec_ = nullptr;
  std::shared_ptr<MemoryBlock> memory_;
};

namespace detail {
PetscVec petsc_vec_of(void* data, long long size, Backend backend,
                      std::shared_ptr<MemoryBlock> memory, const Comm& comm);
[[noreturn]] void throw_petsc_type(std::string_view dtype);
}  // namespace detail

// The PETSc Vec on `array` over `comm` (see above).
template <Element T>
PetscVec petsc_vec(const Array<T>& array, const Comm& comm = Comm::world()) {
  if constexpr (!std::is_same_v<T, PetscScalar>)
    detail::throw_petsc_type(dtype_name<T>());
  else
    return detail::petsc_vec_of(array.data(), array.size(), array.backend(), array.memory(), comm);
}

// PETSc error codes as cunumpy::Error naming the call.
void check_petsc(PetscErrorCode code, const char* call);

}  // namespace cunumpy
