// Default AddressSanitizer options for the programs of a sanitized build tree (CUNUMPY_SANITIZE=ON;
// the cunumpy target adds this file to the programs it builds, never to an installed package).
//
// intercept_tls_get_addr=0: the sanitizer runtime of GCC up to 13 (LLVM up to 16) takes a dynamic
// TLS block whose address happens to lie 16 bytes into a page for glibc 2.19's layout and reads a
// bogus range in front of it; LeakSanitizer then crashes at exit ("Tracer caught signal 11") after
// every test passed.  The libraries the kernel emulator loads have such blocks (threadIdx and
// __shared__ are thread_local there).  Without the interception LeakSanitizer does not scan those
// blocks, which hold no pointers.  ASAN_OPTIONS set by the caller still apply on top.
extern "C" __attribute__((visibility("default"), used)) const char* __asan_default_options() {
  return "intercept_tls_get_addr=0";
}
