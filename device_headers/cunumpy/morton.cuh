// cunumpy/morton.cuh: Morton (Z-order) keys, host and device.
//
// A key interleaves the bits of a point's integer cell coordinates into one 64-bit word:
// axis 0 is the lowest bit of every group of ndim bits, and the top group is the child of
// the root.  With `levels` bits per axis (at most 32 in 2D, 21 in 3D), the cell along an axis
// is floor((x - lower) * scale) clipped to [0, 2^levels - 1], where scale = 2^levels /
// (upper - lower): points on a cell boundary go to the upper cell, points outside the box to
// the nearest face, and lower > upper reverses the axis.  Given the host's scales, the device
// computes the host's keys bit for bit.
#pragma once

#include "cunumpy/config.cuh"

// The most levels a 64-bit Morton key holds in 2D and 3D.
#define CUNUMPY_MAX_MORTON_LEVELS_2D 32
#define CUNUMPY_MAX_MORTON_LEVELS_3D 21

// Spreads the low 32 bits of v to the even bits of the result.
CUNUMPY_HD_INLINE unsigned long long cunumpy_morton_spread2(unsigned long long v) {
  v &= 0xFFFFFFFFull;
  v = (v | (v << 16)) & 0x0000FFFF0000FFFFull;
  v = (v | (v << 8)) & 0x00FF00FF00FF00FFull;
  v = (v | (v << 4)) & 0x0F0F0F0F0F0F0F0Full;
  v = (v | (v << 2)) & 0x3333333333333333ull;
  v = (v | (v << 1)) & 0x5555555555555555ull;
  return v;
}

// The inverse of spread2: the even bits of v, packed.
CUNUMPY_HD_INLINE unsigned long long cunumpy_morton_compact2(unsigned long long v) {
  v &= 0x5555555555555555ull;
  v = (v | (v >> 1)) & 0x3333333333333333ull;
  v = (v | (v >> 2)) & 0x0F0F0F0F0F0F0F0Full;
  v = (v | (v >> 4)) & 0x00FF00FF00FF00FFull;
  v = (v | (v >> 8)) & 0x0000FFFF0000FFFFull;
  v = (v | (v >> 16)) & 0x00000000FFFFFFFFull;
  return v;
}

// Spreads the low 21 bits of v to every third bit of the result.
CUNUMPY_HD_INLINE unsigned long long cunumpy_morton_spread3(unsigned long long v) {
  v &= 0x1FFFFFull;
  v = (v | (v << 32)) & 0x001F00000000FFFFull;
  v = (v | (v << 16)) & 0x001F0000FF0000FFull;
  v = (v | (v << 8)) & 0x100F00F00F00F00Full;
  v = (v | (v << 4)) & 0x10C30C30C30C30C3ull;
  v = (v | (v << 2)) & 0x1249249249249249ull;
  return v;
}

CUNUMPY_HD_INLINE unsigned long long cunumpy_morton_compact3(unsigned long long v) {
  v &= 0x1249249249249249ull;
  v = (v | (v >> 2)) & 0x10C30C30C30C30C3ull;
  v = (v | (v >> 4)) & 0x100F00F00F00F00Full;
  v = (v | (v >> 8)) & 0x001F0000FF0000FFull;
  v = (v | (v >> 16)) & 0x001F00000000FFFFull;
  v = (v | (v >> 32)) & 0x00000000001FFFFFull;
  return v;
}

CUNUMPY_HD_INLINE unsigned long long cunumpy_morton_encode2(unsigned long long ix,
                                                            unsigned long long iy) {
  return cunumpy_morton_spread2(ix) | (cunumpy_morton_spread2(iy) << 1);
}

CUNUMPY_HD_INLINE unsigned long long cunumpy_morton_encode3(unsigned long long ix,
                                                            unsigned long long iy,
                                                            unsigned long long iz) {
  return cunumpy_morton_spread3(ix) | (cunumpy_morton_spread3(iy) << 1) |
         (cunumpy_morton_spread3(iz) << 2);
}

// The cell of a particle on a periodic axis of n cells, from s, its position in cell units (x /
// dx, or a stored cell plus its offset): s truncated toward zero (0 for NaN and |s| >= 4e18),
// then wrapped into [0, n).  cunumpy::periodic_cell_keys encodes these.
CUNUMPY_HD_INLINE unsigned long long cunumpy_periodic_cell(double s, long long n) {
  long long j = (s > -4.0e18 && s < 4.0e18) ? static_cast<long long>(s) : 0;
  if (j < 0 && j >= -n)
    j += n;  // one box below
  else if (j >= n && j < 2 * n)
    j -= n;  // one box above
  else if (j < 0 || j >= n)
    j = (j % n + n) % n;
  return static_cast<unsigned long long>(j);
}

// The cell of x along one axis: floor((x - lower) * scale) clipped to [0, 2^levels - 1].
CUNUMPY_HD_INLINE unsigned long long cunumpy_morton_cell(double x, double lower, double scale,
                                                         int levels) {
  const double top = static_cast<double>((1ull << levels) - 1ull);
  double c = (x - lower) * scale;
  c = c > 0.0 ? c : 0.0;  // below the box (and NaN) go to cell 0
  c = c < top ? c : top;  // above it, to the last cell
  // c is now in [0, top]: truncation is floor, and the conversion needs no floor() call, so
  // host compilers vectorise the loop.  Up to 31 levels the cell fits an int.
  return levels <= 31 ? static_cast<unsigned long long>(static_cast<int>(c))
                      : static_cast<unsigned long long>(c);
}

CUNUMPY_HD_INLINE unsigned long long cunumpy_morton_key2(double x, double y, double lower_x,
                                                         double lower_y, double scale_x,
                                                         double scale_y, int levels) {
  return cunumpy_morton_encode2(cunumpy_morton_cell(x, lower_x, scale_x, levels),
                                cunumpy_morton_cell(y, lower_y, scale_y, levels));
}

CUNUMPY_HD_INLINE unsigned long long cunumpy_morton_key3(double x, double y, double z,
                                                         double lower_x, double lower_y,
                                                         double lower_z, double scale_x,
                                                         double scale_y, double scale_z,
                                                         int levels) {
  return cunumpy_morton_encode3(cunumpy_morton_cell(x, lower_x, scale_x, levels),
                                cunumpy_morton_cell(y, lower_y, scale_y, levels),
                                cunumpy_morton_cell(z, lower_z, scale_z, levels));
}
