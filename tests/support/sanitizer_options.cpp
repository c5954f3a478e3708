// Defaults of the sanitizer runtimes for the programs of a sanitized build tree
// (CUNUMPY_SANITIZE=ON; the cunumpy target adds this file to the programs it builds, never to an
// installed package).  ASAN_OPTIONS and LSAN_OPTIONS set by the caller still apply on top.

// fast_unwind_on_malloc=0: allocation stacks by the slow unwinder, since Open MPI's libraries
// have no frame pointers and the fast one stops inside them, before the frames that the
// suppressions below name.  (It costs the test suite a few percent.)
// intercept_tls_get_addr=0: GCC 12's runtime takes a dynamic TLS block that starts 16 bytes
// into a page for glibc 2.19's layout and reads the two words before it as the block's bounds;
// LeakSanitizer's scan at exit then crashes ("Tracer caught signal 11").  NVRTC
// (libnvrtc.so.13: 32 bytes of TLS, 8-aligned, so its block is a plain malloc) is opened at
// run time by every program that compiles a kernel for cuda, and lands there now and then.
// The kernel libraries' own TLS is aligned so that this cannot happen to them, and
// test_cuda_emulator_lsan_at_exit checks that with the interception on (ASAN_OPTIONS wins).
extern "C" __attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "fast_unwind_on_malloc=0:intercept_tls_get_addr=0";
}

// LeakSanitizer: what Open MPI allocates for itself and never frees, by design or in its own
// threads: its state from MPI_Init (components, PMIx, the datatype and operation tables) and
// from MPI_Finalize, what its progress threads allocate inside libevent's loop, and the few
// bytes its MPI-IO component (OMPIO) keeps per collective write or read of parallel HDF5.  Each entry
// names a function of Open MPI or libevent (a leak is suppressed when its allocation stack
// passes through one); nothing of cunumpy's is listed, so a leak of ours (an MPI object we
// create and never free, say) is still reported.
extern "C" __attribute__((visibility("default"), used)) const char* __lsan_default_suppressions() {
  return "leak:ompi_mpi_init\n"      // MPI_Init / MPI_Init_thread: Open MPI's startup state
         "leak:ompi_mpi_finalize\n"  // MPI_Finalize: what it leaves behind
         "leak:event_base_loop\n"    // Open MPI's progress threads (libevent)
         "leak:MPI_File_\n";         // Open MPI's MPI-IO ([P]MPI_File_write_at_all, read_at_all)
}
