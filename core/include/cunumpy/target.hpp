// cunumpy/target.hpp: where work runs, as a value that is passed down.
//
//   cunumpy::parallel_for(cunumpy::on(rho), "scale", n, body);      // where rho lives
//   cunumpy::parallel_for(cunumpy::on(stream), "scale", n, body);   // on a given stream
//   cunumpy::parallel_for("scale", n, body);                        // the active backend
//
// A Target is a backend and the stream of that backend its device work is issued on (the
// Kokkos execution-space instance, Cabana's RangePolicy<execution_space>).  The library's own
// operations (loops, algorithms, random numbers, halo packing, migration) take the target of
// the arrays they work on and pass it down; none of them reads or changes the active backend
// (<cunumpy/backend.hpp>), so a call in one thread never steers the work of another.
#pragma once

#include <cunumpy/array.hpp>
#include <cunumpy/backend.hpp>
#include <cunumpy/stream.hpp>

namespace cunumpy {

// Where a loop or a kernel runs: a backend and the stream of it its device work goes on.
struct Target {
  Backend backend = Backend::host;
  // The stream of `backend` device work is issued on (empty on host).
  StreamRef stream;
};

// The target of `backend`: the calling thread's current stream of that backend.
inline Target on(Backend backend) noexcept {
  return {backend, current_stream(backend)};
}
// Work on `stream`, of the stream's backend.
inline Target on(StreamRef stream) noexcept {
  return {stream.backend(), stream};
}
// Where `array` lives.
template <Element T>
Target on(const Array<T>& array) noexcept {
  return on(array.backend());
}
// The calling thread's active backend and its current stream: application code's default.
inline Target active_target() {
  return on(get_backend());
}

namespace detail {
// Waits, uncounted, for the work queued on the target's stream when it is an emulated one:
// what an operation that the emulated device runs inline does first.
inline void emulated_order(const Target& target) {
  if (target.backend == Backend::emulated) emulated_drain(target.stream);
}
}  // namespace detail

}  // namespace cunumpy
