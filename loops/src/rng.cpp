// Philox over arrays and the random streams (rng.hpp).  Compiled as CUDA when the CUDA backend
// is built, so its loops run on the device there.
#include <cunumpy/rng.hpp>
#include <cunumpy/stream.hpp>

#include <cunumpy/internal/context.hpp>

#include <random>
#include <string>

#include <cunumpy/errors.hpp>
#include <cunumpy/parallel.hpp>
#include <cunumpy/random.cuh>

#include "host_fast.hpp"

namespace cunumpy {
namespace {

// What a kernel needs of an operand: a pointer or a scalar.
struct OperandView {
  const std::uint64_t* data;
  std::uint64_t scalar;
  CUNUMPY_HD_INLINE std::uint64_t operator[](long long i) const {
    return data != nullptr ? data[i] : scalar;
  }
};

struct Broadcast {
  Shape shape;
  Backend backend;
};

// The common shape and backend of the operands (scalars broadcast).
Broadcast broadcast(const char* what, std::initializer_list<const U64Operand*> ops) {
  const U64Operand* first = nullptr;
  for (const U64Operand* op : ops) {
    if (!op->is_array()) continue;
    if (first == nullptr) {
      first = op;
      continue;
    }
    if (!(op->array().shape() == first->array().shape()))
      throw ValueError(std::string(what) + ": array arguments of shapes " +
                       first->array().shape().str() + " and " + op->array().shape().str() +
                       " do not broadcast; pass arrays of one shape, or scalars");
    if (op->array().backend() != first->array().backend())
      throw TypeError(std::string(what) + ": array arguments on different backends (" +
                      std::string(to_string(first->array().backend())) + ", " +
                      std::string(to_string(op->array().backend())) +
                      "); move them to one side first");
  }
  if (first == nullptr) return {Shape{1}, get_backend()};
  return {first->array().shape(), first->array().backend()};
}

OperandView view_of(const U64Operand& op) {
  return {op.is_array() ? op.array().data() : nullptr, op.scalar()};
}

// kind: 0 uniform, 1 uniform2, 2 normal, 3 normal2
std::pair<Array<double>, Array<double>> philox_apply(const char* what, int kind,
                                                     const U64Operand& seed,
                                                     const U64Operand& stream,
                                                     const U64Operand& counter) {
  const Broadcast b = broadcast(what, {&seed, &stream, &counter});
  const Target t = on(b.backend);
  Array<double> out0(b.shape, b.backend);
  Array<double> out1 =
      (kind == 1 || kind == 3) ? Array<double>(b.shape, b.backend) : Array<double>();
  const OperandView s = view_of(seed), st = view_of(stream), c = view_of(counter);
  double* o0 = out0.data();
  double* o1 = out1.data();
  // Keyed by particle id (the common case) on host memory: the vectorised host loop.
  if (b.backend != Backend::cuda && (kind == 0 || kind == 1) && !seed.is_array() &&
      stream.is_array() && !counter.is_array()) {
    detail::emulated_order(t);
    detail::host_fast::philox_uniform_ids(o0, kind == 1 ? o1 : nullptr, seed.scalar(), st.data,
                                          counter.scalar(), b.shape.size());
    return {out0, out1};
  }
  switch (kind) {
    case 0:
      CUNUMPY_FOR_ON(t, what, b.shape.size(), i, o0[i] = cunumpy_uniform(s[i], st[i], c[i]););
      break;
    case 1:
      CUNUMPY_FOR_ON(t, what, b.shape.size(), i,
                     cunumpy_uniform2(s[i], st[i], c[i], &o0[i], &o1[i]););
      break;
    case 2:
      CUNUMPY_FOR_ON(t, what, b.shape.size(), i, o0[i] = cunumpy_normal(s[i], st[i], c[i]););
      break;
    default:
      CUNUMPY_FOR_ON(t, what, b.shape.size(), i,
                     cunumpy_normal2(s[i], st[i], c[i], &o0[i], &o1[i]););
      break;
  }
  return {out0, out1};
}

}  // namespace

Array<std::uint32_t> philox4x32_10(const Array<std::uint32_t>& counters, std::uint32_t key0,
                                   std::uint32_t key1) {
  if (counters.ndim() != 2 || counters.shape(1) != 4)
    throw ValueError("philox4x32_10: counters of shape (n, 4) are required, got " +
                     counters.shape().str());
  Array<std::uint32_t> out(counters.shape(), counters.backend());
  const std::uint32_t* in = counters.data();
  std::uint32_t* o = out.data();
  CUNUMPY_FOR_ON(on(counters), "philox4x32_10", counters.shape(0), i,
                 cunumpy_u32x4 c{{in[4 * i], in[4 * i + 1], in[4 * i + 2], in[4 * i + 3]}};
                 const cunumpy_u32x4 r = cunumpy_philox4x32_10(c, key0, key1);
                 for (int k = 0; k < 4; ++k) o[4 * i + k] = r.v[k];);
  return out;
}

Array<double> philox_uniform(U64Operand seed, U64Operand stream, U64Operand counter) {
  return philox_apply("philox_uniform", 0, seed, stream, counter).first;
}
std::pair<Array<double>, Array<double>> philox_uniform2(U64Operand seed, U64Operand stream,
                                                        U64Operand counter) {
  return philox_apply("philox_uniform2", 1, seed, stream, counter);
}
Array<double> philox_normal(U64Operand seed, U64Operand stream, U64Operand counter) {
  return philox_apply("philox_normal", 2, seed, stream, counter).first;
}
std::pair<Array<double>, Array<double>> philox_normal2(U64Operand seed, U64Operand stream,
                                                       U64Operand counter) {
  return philox_apply("philox_normal2", 3, seed, stream, counter);
}

namespace detail {
// kind: 0 uniform(a, b), 1 normal(a = mean, b = stddev).  Element j of the fill is word pair
// j % 2 of counter base + j / 2, so two numbers come from each Philox call.
Array<double> generator_draw(Backend backend, std::uint64_t seed, std::uint64_t stream,
                             std::uint64_t base, Shape shape, int kind, double a, double b) {
  const Target t = on(backend);
  Array<double> out(shape, backend);
  const long long n = shape.size();
  double* o = out.data();
  if (backend != Backend::cuda) {
    emulated_order(t);
    host_fast::generator_fill(o, n, seed, stream, base, kind, a, b);
    return out;
  }
  parallel_for(
      t, kind == 0 ? "Generator::uniform" : "Generator::normal", (n + 1) / 2,
      CUNUMPY_LAMBDA(long long p) {
        double x0, x1;
        if (kind == 0) {
          cunumpy_uniform2(seed, stream, base + static_cast<std::uint64_t>(p), &x0, &x1);
          x0 = detail::scale_shift(a, b - a, x0);
          x1 = detail::scale_shift(a, b - a, x1);
        } else {
          cunumpy_normal2(seed, stream, base + static_cast<std::uint64_t>(p), &x0, &x1);
          x0 = detail::scale_shift(a, b, x0);
          x1 = detail::scale_shift(a, b, x1);
        }
        o[2 * p] = x0;
        if (2 * p + 1 < n) o[2 * p + 1] = x1;
      });
  return out;
}
}  // namespace detail

Array<double> Generator::take(Shape shape, int kind, double a, double b) {
  const auto pairs = static_cast<std::uint64_t>((shape.size() + 1) / 2);
  const std::uint64_t base = counter_.fetch_add(pairs);
  return detail::generator_draw(backend_, seed_, stream_, base, shape, kind, a, b);
}

Array<double> Generator::random(Shape shape) {
  return take(shape, 0, 0.0, 1.0);
}
Array<double> Generator::uniform(double low, double high, Shape shape) {
  return take(shape, 0, low, high);
}
Array<double> Generator::standard_normal(Shape shape) {
  return take(shape, 1, 0.0, 1.0);
}
Array<double> Generator::normal(double mean, double stddev, Shape shape) {
  if (!(stddev >= 0.0))
    throw ValueError("normal: the standard deviation must be non-negative, got " +
                     std::to_string(stddev));
  return take(shape, 1, mean, stddev);
}

void RandomStreams::seed(std::optional<std::uint64_t> value, int rank) {
  const std::lock_guard lock(mutex_);
  seed_locked(value, rank);
}

void RandomStreams::seed_locked(std::optional<std::uint64_t> value, int rank) {
  if (rank < 0)
    throw ValueError("RandomStreams::seed: rank must be non-negative, got " + std::to_string(rank));
  if (value) {
    seed_ = *value;
  } else {
    std::random_device os;
    seed_ = (static_cast<std::uint64_t>(os()) << 32) ^ os();
  }
  rank_ = rank;
  seeded_ = true;
  // In place: references to the generators stay valid (a reseed is not meant to run beside
  // draws of other threads).
  for (auto& g : generators_)
    if (g) *g = Generator(seed_, rank_stream_id(rank_), g->backend());
}

Generator& RandomStreams::generator(std::optional<Backend> backend) {
  const std::lock_guard lock(mutex_);
  if (!seeded_) seed_locked(std::nullopt, 0);
  const Backend b = backend.value_or(get_backend());
  auto& slot = generators_[static_cast<int>(b)];
  if (!slot) slot.emplace(seed_, rank_stream_id(rank_), b);
  return *slot;
}

Generator RandomStreams::make_generator(std::uint64_t seed, std::optional<Backend> backend) const {
  const std::lock_guard lock(mutex_);
  return Generator(seed, rank_stream_id(rank_) ^ (std::uint64_t{1} << 62),
                   backend.value_or(get_backend()));
}

RandomStreams& random_streams() {
  return detail::context_slot<RandomStreams>().get();
}

}  // namespace cunumpy
