// Defaults of the sanitizer runtimes for the programs of a sanitized build tree
// (CUNUMPY_SANITIZE=ON; the cunumpy target adds this file to the programs it builds, never to an
// installed package).  ASAN_OPTIONS and LSAN_OPTIONS set by the caller still apply on top.

// fast_unwind_on_malloc=0: allocation stacks by the slow unwinder, since Open MPI's libraries
// have no frame pointers and the fast one stops inside them, before the frames that the
// suppressions below name.  (It costs the test suite a few percent.)
extern "C" __attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "fast_unwind_on_malloc=0";
}

// LeakSanitizer: what Open MPI allocates for itself and never frees, by design or in its own
// threads: its state from MPI_Init (components, PMIx, the datatype and operation tables) and
// from MPI_Finalize, what its progress threads allocate inside libevent's loop, and the few
// bytes its MPI-IO component (OMPIO) keeps per collective write of parallel HDF5.  Each entry
// names a function of Open MPI or libevent (a leak is suppressed when its allocation stack
// passes through one); nothing of cunumpy's is listed, so a leak of ours (an MPI object we
// create and never free, say) is still reported.
extern "C" __attribute__((visibility("default"), used)) const char* __lsan_default_suppressions() {
  return "leak:ompi_mpi_init\n"      // MPI_Init / MPI_Init_thread: Open MPI's startup state
         "leak:ompi_mpi_finalize\n"  // MPI_Finalize: what it leaves behind
         "leak:event_base_loop\n"    // Open MPI's progress threads (libevent)
         "leak:PMPI_File_\n";        // Open MPI's MPI-IO (MPI_File_write_at_all & co.)
}
