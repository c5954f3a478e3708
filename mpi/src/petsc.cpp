// PETSc vectors on cunumpy arrays (petsc.hpp).
#include <cunumpy/petsc.hpp>

#include <mpi.h>

namespace cunumpy {

namespace {
// MPI_Finalize calls the delete callbacks of MPI_COMM_SELF's attributes first, while MPI still
// works: PETSc is finalised there, whoever ends MPI.
int finalize_petsc(MPI_Comm, int, void*, void*) {
  PetscBool finalized = PETSC_FALSE;
  PetscFinalized(&finalized);
  if (!finalized) PetscFinalize();
  return MPI_SUCCESS;
}
}  // namespace

void check_petsc(PetscErrorCode code, const char* call) {
  if (code == 0) return;
  const char* text = nullptr;
  PetscErrorMessage(code, &text, nullptr);
  throw Error(std::string("PETSc: ") + call + " failed with error " + std::to_string(code) +
              (text ? std::string(" (") + text + ")" : std::string()));
}

void petsc_initialize() {
  PetscBool running = PETSC_FALSE;
  PetscInitialized(&running);
  if (running) return;
  int mpi = 0;
  MPI_Initialized(&mpi);
  if (!mpi)
    throw ValueError(
        "petsc_initialize: MPI is not running; start it first (cunumpy::init_mpi, or a Runtime "
        "under a launcher)");
  check_petsc(PetscInitializeNoArguments(), "PetscInitializeNoArguments");
  int key = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, finalize_petsc, &key, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
  // The attribute keeps the key valid until MPI_Finalize deletes it (calling finalize_petsc);
  // our handle to it goes now (LeakSanitizer saw it leaked).
  MPI_Comm_free_keyval(&key);
}

void PetscVec::reset() noexcept {
  if (vec_ != nullptr) {
    PetscBool finalized = PETSC_FALSE;
    PetscFinalized(&finalized);
    if (!finalized) VecDestroy(&vec_);
    vec_ = nullptr;
  }
  memory_.reset();
}

namespace detail {
void throw_petsc_type(std::string_view dtype) {
  throw TypeError("petsc_vec: PETSc's scalar type here is " +
                  std::string(sizeof(PetscScalar) == 8 ? "float64" : "another type") +
                  ", the array holds " + std::string(dtype) +
                  "; sharing memory needs the same type (convert the array first)");
}

PetscVec petsc_vec_of(void* data, long long size, Backend backend,
                      std::shared_ptr<MemoryBlock> memory, const Comm& comm) {
  if (location_of(backend) == Location::device) {
#if defined(PETSC_HAVE_CUDA)
    // A CUDA PETSc would take the device pointer (VecCreateMPICUDAWithArray); not built here.
#endif
    throw BackendError(
        "petsc_vec: the array is on the " + std::string(to_string(backend)) +
        " device and this PETSc was built without CUDA, so it cannot use device memory; copy "
        "the array to the host (cunumpy::to_host) or use a CUDA-enabled PETSc");
  }
  petsc_initialize();
  Vec v = nullptr;
  if (comm.size() == 1)
    check_petsc(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, static_cast<PetscInt>(size),
                                      static_cast<PetscScalar*>(data), &v),
                "VecCreateSeqWithArray");
  else
    check_petsc(VecCreateMPIWithArray(comm.native(), 1, static_cast<PetscInt>(size), PETSC_DECIDE,
                                      static_cast<PetscScalar*>(data), &v),
                "VecCreateMPIWithArray");
  return PetscVec(v, std::move(memory));
}
}  // namespace detail

}  // namespace cunumpy
