// cunumpy/rng.hpp: Philox random numbers over arrays, and the process's random streams.
//
//   auto ids = cunumpy::arange<std::uint64_t>(n);                  // global particle ids
//   auto [u0, u1] = cunumpy::philox_uniform2(seed, ids, step);      // == cunumpy_uniform2 in
//   thread i auto v = cunumpy::random_streams().normal(0.0, v_th, {n, 3});   // from the (seed,
//   rank) stream
//
// Keying by a particle's global id.  philox_*(seed, id, counter) depends only on the seed,
// the particle's global id and the counter (e.g. step * decisions_per_step + decision), so a
// particle draws the same numbers whichever rank holds it and however many ranks there are:
// initialise and perturb particles this way when results must not depend on the
// decomposition.  RandomStreams are per-rank streams for draws that belong to a rank, not to
// a particle.
//
// Streams: the process generators use Philox stream ids with the top bit set (2^63 | rank),
// the keyed functions any id below 2^63, so the two never share numbers.  Every function runs
// on the backend of its array arguments (the active backend for scalars only) and gives the
// same uniform bits on host, emulated and cuda.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <utility>

#include <cunumpy/array.hpp>

namespace cunumpy {

// A uint64 argument: a scalar, broadcast, or an array (uint64 or int64, read as its bits).
class U64Operand {
 public:
  U64Operand(std::uint64_t scalar) : scalar_(scalar) {}  // NOLINT: implicit by design
  U64Operand(int scalar) : scalar_(static_cast<std::uint64_t>(scalar)) {}    // NOLINT
  U64Operand(const Array<std::uint64_t>& a) : array_(a), is_array_(true) {}  // NOLINT
  U64Operand(const Array<std::int64_t>& a)                                   // NOLINT
      : array_(Array<std::uint64_t>::adopt(a.memory(), a.shape())), keep_(a), is_array_(true) {}

  bool is_array() const noexcept { return is_array_; }
  const Array<std::uint64_t>& array() const noexcept { return array_; }
  std::uint64_t scalar() const noexcept { return scalar_; }

 private:
  std::uint64_t scalar_ = 0;
  Array<std::uint64_t> array_;
  Array<std::int64_t> keep_;  // keeps borrowed int64 memory alive
  bool is_array_ = false;
};

// The raw generator over rows of counter words: counters (n, 4) uint32 -> (n, 4) uint32.
Array<std::uint32_t> philox4x32_10(const Array<std::uint32_t>& counters, std::uint32_t key0,
                                   std::uint32_t key1);

// Elementwise cunumpy_uniform / uniform2 / normal / normal2 of (seed, stream, counter), with
// scalars broadcast to the shape of the array arguments (which must agree).
Array<double> philox_uniform(U64Operand seed, U64Operand stream, U64Operand counter);
std::pair<Array<double>, Array<double>> philox_uniform2(U64Operand seed, U64Operand stream,
                                                        U64Operand counter);
Array<double> philox_normal(U64Operand seed, U64Operand stream, U64Operand counter);
std::pair<Array<double>, Array<double>> philox_normal2(U64Operand seed, U64Operand stream,
                                                       U64Operand counter);

// A stream of random numbers: Philox with key `seed` and stream id `stream`, consumed in order
// (each fill takes the next counters).  The same (seed, stream) gives the same numbers on
// every backend.  Fills run where the generator's backend is, whatever thread calls them; a
// generator shared by threads is safe (each fill reserves its counters atomically), but the
// order in which threads' fills take the counters is theirs: for reproducible draws give each
// thread its own generator (RandomStreams::make_generator).
class Generator {
 public:
  Generator(std::uint64_t seed, std::uint64_t stream, Backend backend)
      : seed_(seed), stream_(stream), backend_(backend) {}
  Generator(const Generator& other)
      : seed_(other.seed_),
        stream_(other.stream_),
        counter_(other.position()),
        backend_(other.backend_) {}
  Generator& operator=(const Generator& other) {
    seed_ = other.seed_;
    stream_ = other.stream_;
    counter_.store(other.position());
    backend_ = other.backend_;
    return *this;
  }

  Array<double> random(Shape shape);  // uniform in [0, 1)
  Array<double> uniform(double low, double high, Shape shape);
  Array<double> standard_normal(Shape shape);
  Array<double> normal(double mean, double stddev, Shape shape);

  std::uint64_t seed() const noexcept { return seed_; }
  std::uint64_t stream() const noexcept { return stream_; }
  Backend backend() const noexcept { return backend_; }
  std::uint64_t position() const noexcept { return counter_.load(); }  // counters used so far

 private:
  Array<double> take(Shape shape, int kind, double a, double b);
  std::uint64_t seed_, stream_;
  std::atomic<std::uint64_t> counter_{0};
  Backend backend_;
};

// One seeded generator per process and backend, for reproducible MPI runs: after
// seed(value, rank) every draw comes from the stream (value, rank), so the same seed and
// number of ranks give the same results and the ranks' streams are independent.  seed() with
// no value seeds from the operating system.  The Runtime seeds it at start-up.  Thread-safe:
// the generators are created under a lock, and a draw from a shared one reserves its counters
// atomically.
class RandomStreams {
 public:
  void seed(std::optional<std::uint64_t> value = std::nullopt, int rank = 0);
  std::uint64_t seed_value() const noexcept { return seed_; }
  int rank() const noexcept { return rank_; }

  // The process generator of `backend` (the active one by default), created on first use.
  Generator& generator(std::optional<Backend> backend = std::nullopt);
  // A component's own generator with its own seed (stream: this rank), independent of the
  // process generators.
  Generator make_generator(std::uint64_t seed, std::optional<Backend> backend = std::nullopt) const;

  Array<double> random(Shape shape) { return generator().random(shape); }
  Array<double> uniform(double low, double high, Shape shape) {
    return generator().uniform(low, high, shape);
  }
  Array<double> standard_normal(Shape shape) { return generator().standard_normal(shape); }
  Array<double> normal(double mean, double stddev, Shape shape) {
    return generator().normal(mean, stddev, shape);
  }

 private:
  void seed_locked(std::optional<std::uint64_t> value, int rank);
  mutable std::mutex mutex_;
  std::uint64_t seed_ = 0;
  int rank_ = 0;
  bool seeded_ = false;
  std::optional<Generator> generators_[3];  // by Backend; never reset while in use
};

// The process instance: the Runtime's (it seeds it at start-up with RuntimeOptions::seed, or
// with a seed drawn by rank 0 and shared, and the world rank).
RandomStreams& random_streams();

// The Philox stream id of rank `rank`'s process generator: 2^63 | rank.
constexpr std::uint64_t rank_stream_id(int rank) noexcept {
  return (std::uint64_t{1} << 63) | static_cast<std::uint64_t>(rank);
}

}  // namespace cunumpy
