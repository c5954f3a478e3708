// Box copies (internal/box_copy.hpp).  Compiled as CUDA when the CUDA backend is built, so
// that the loops run on the device for device memory.
#include <cunumpy/internal/box_copy.hpp>

#include <complex>
#include <cstdint>
#include <string>

#include <cunumpy/errors.hpp>
#include <cunumpy/parallel.hpp>

namespace cunumpy::detail {

namespace {

// The box's index arithmetic in plain values (captured by the loop bodies, host and device).
// The loops run over the box's rows (its innermost axis is contiguous in the array and in the
// buffer), so the index arithmetic (two divisions) is paid once per row, not per element.
struct Walk {
  long long d1, d2, d3;      // array dims of the inner three axes
  long long b0, b1, b2, b3;  // box begin
  long long e1, e2, e3;      // box extent of the inner three axes
  // The array offset (in units) of the first unit of the box's row r.
  CUNUMPY_HD_INLINE long long row_offset(long long r) const {
    const long long a2 = r % e2;
    const long long q = r / e2;
    const long long a1 = q % e1;
    const long long a0 = q / e1;
    return (((b0 + a0) * d1 + (b1 + a1)) * d2 + (b2 + a2)) * d3 + b3;
  }
};

Walk walk_of(const Box& b) {
  return {b.dims[1],  b.dims[2],  b.dims[3],   b.begin[0],  b.begin[1],
          b.begin[2], b.begin[3], b.extent[1], b.extent[2], b.extent[3]};
}

// Rows of the box, each `row_words` words of W.
template <typename W>
void copy_words(const Target& t, const char* name, W* array, const Box& box, W* buffer, bool pack) {
  const Walk w = walk_of(box);
  const long long unit_words = box.unit / static_cast<long long>(sizeof(W));
  const long long row_words = unit_words * box.extent[3];
  const long long rows = box.units() / box.extent[3];
  if (pack)
    CUNUMPY_FOR_ON(t, name, rows, r, const W* src = array + w.row_offset(r) * unit_words;
                   W* dst = buffer + r * row_words;
                   for (long long k = 0; k < row_words; ++k) dst[k] = src[k];);
  else
    CUNUMPY_FOR_ON(t, name, rows, r, W* dst = array + w.row_offset(r) * unit_words;
                   const W* src = buffer + r * row_words;
                   for (long long k = 0; k < row_words; ++k) dst[k] = src[k];);
}

void copy_box(Backend backend, void* array, const Box& box, void* buffer, bool pack) {
  if (box.units() == 0) return;
  const Target t = on(backend);
  const char* name = pack ? "halo pack" : "halo unpack";
  const auto aligned = [&](std::size_t n) {
    return box.unit % static_cast<long long>(n) == 0 &&
           reinterpret_cast<std::uintptr_t>(array) % n == 0 &&
           reinterpret_cast<std::uintptr_t>(buffer) % n == 0;
  };
  if (aligned(8))
    copy_words(t, name, static_cast<std::uint64_t*>(array), box,
               static_cast<std::uint64_t*>(buffer), pack);
  else if (aligned(4))
    copy_words(t, name, static_cast<std::uint32_t*>(array), box,
               static_cast<std::uint32_t*>(buffer), pack);
  else
    copy_words(t, name, static_cast<std::uint8_t*>(array), box, static_cast<std::uint8_t*>(buffer),
               pack);
}

template <typename S>
void add_scalars(const Target& t, S* array, const Box& box, const S* buffer) {
  const Walk w = walk_of(box);
  const long long k = box.unit / static_cast<long long>(sizeof(S));
  const long long row = k * box.extent[3];
  const long long rows = box.units() / box.extent[3];
  CUNUMPY_FOR_ON(t, "halo sum", rows, r, S* dst = array + w.row_offset(r) * k;
                 const S* src = buffer + r * row;
                 for (long long c = 0; c < row; ++c) dst[c] += src[c];);
}

}  // namespace

void pack_box(Backend backend, const void* array, const Box& box, void* buffer) {
  copy_box(backend, const_cast<void*>(array), box, buffer, true);
}

void unpack_box(Backend backend, void* array, const Box& box, const void* buffer) {
  copy_box(backend, array, box, const_cast<void*>(buffer), false);
}

void unpack_add_box(Backend backend, DType dtype, void* array, const Box& box, const void* buffer) {
  if (box.units() == 0) return;
  const Target t = on(backend);
  switch (dtype) {
    case DType::int8:
      return add_scalars(t, static_cast<std::int8_t*>(array), box,
                         static_cast<const std::int8_t*>(buffer));
    case DType::uint8:
      return add_scalars(t, static_cast<std::uint8_t*>(array), box,
                         static_cast<const std::uint8_t*>(buffer));
    case DType::int16:
      return add_scalars(t, static_cast<std::int16_t*>(array), box,
                         static_cast<const std::int16_t*>(buffer));
    case DType::uint16:
      return add_scalars(t, static_cast<std::uint16_t*>(array), box,
                         static_cast<const std::uint16_t*>(buffer));
    case DType::int32:
      return add_scalars(t, static_cast<std::int32_t*>(array), box,
                         static_cast<const std::int32_t*>(buffer));
    case DType::uint32:
      return add_scalars(t, static_cast<std::uint32_t*>(array), box,
                         static_cast<const std::uint32_t*>(buffer));
    case DType::int64:
      return add_scalars(t, static_cast<std::int64_t*>(array), box,
                         static_cast<const std::int64_t*>(buffer));
    case DType::uint64:
      return add_scalars(t, static_cast<std::uint64_t*>(array), box,
                         static_cast<const std::uint64_t*>(buffer));
    case DType::float32:
    case DType::complex64:  // both parts: the unit holds twice as many floats
      return add_scalars(t, static_cast<float*>(array), box, static_cast<const float*>(buffer));
    case DType::float64:
    case DType::complex128:
      return add_scalars(t, static_cast<double*>(array), box, static_cast<const double*>(buffer));
    case DType::boolean:
      break;
  }
  throw TypeError("halo sum: cannot add fields of " + std::string(to_string(dtype)) +
                  "; sum needs numbers (use fill for booleans)");
}

}  // namespace cunumpy::detail
