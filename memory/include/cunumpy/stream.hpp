// cunumpy/stream.hpp: a CUDA stream for a scope.
//
//   {
//     auto s = cunumpy::stream();          // non-blocking, current for this thread
//     cunumpy::parallel_for(...);           // issued on s
//     s.synchronize();                      // counted as a stream synchronisation
//   }                                       // the previous stream is current again
//
// On cuda it owns a cudaStream_t (created non-blocking, destroyed at the end of the scope);
// on emulated a stream object with the same rules (work completes as it is issued); on host
// it does nothing and synchronize() is a no-op.
#pragma once

#include <source_location>

#include <cunumpy/backend.hpp>

namespace cunumpy {

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  // Waits for the work issued on this stream (counted; nothing on host).
  void synchronize(std::source_location where = std::source_location::current()) const;
  // The cudaStream_t (nullptr on host).
  void* handle() const noexcept { return handle_; }
  Backend backend() const noexcept { return backend_; }

 private:
  Backend backend_;
  void* handle_ = nullptr;
  void* previous_ = nullptr;
};

[[nodiscard]] inline Stream stream() { return {}; }

}  // namespace cunumpy
