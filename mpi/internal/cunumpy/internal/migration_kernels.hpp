// The particle migration's loops, on the arrays' own backend (migration.hpp).  Internal.
#pragma once

#include <cstdint>

#include <cunumpy/backend.hpp>

namespace cunumpy::detail {

struct MigrationGeometry {
  int ndim = 1, ranks = 1, me = 0;
  long long cells[3] = {1, 1, 1};
  int dims[3] = {1, 1, 1};
  bool periodic[3] = {true, true, true};
  double lower[3] = {0, 0, 0}, upper[3] = {1, 1, 1}, length[3] = {1, 1, 1};
  double scale[3] = {1, 1, 1};  // cells / length: a position's cell is floor((x - lower) * scale)
  long long own_begin[3] = {0, 0, 0}, own_end[3] = {1, 1, 1};  // this rank's cells
};

// keys[i]: 0 when particle i stays, 1 + r when it goes to rank r, ranks + 1 when it is outside
// the box along a bounded axis (or at a NaN position).  Periodic axes wrap the positions into
// the box first.  Returns how many keys are not 0.
long long assign_destinations(Backend backend, const MigrationGeometry& g, double* const* positions,
                              long long n, std::uint32_t* keys);

// starts[k] (k < nkeys): the first index in [first, n) of key k in the sorted keys, or -1.
void key_starts(Backend backend, const std::uint32_t* sorted, long long first, long long n,
                int nkeys, long long* starts);

// The rows of several arrays as one record per particle: column c's row at `offset` bytes.
inline constexpr int max_particle_columns = 16;
struct RecordLayout {
  struct Column {
    char* data;
    long long row_bytes, offset;
  } columns[max_particle_columns];
  int count = 0;
  long long record_bytes = 0;
  int word = 1;  // the copies' word size: 8, 4 or 1 bytes
};

// out[j] = the record of row order[first + j], j < count.
void gather_records(Backend backend, const RecordLayout& layout, const std::int64_t* order,
                    long long first, long long count, char* out);
// Row first_row + j of each column <- record j of `in`, j < count.
void scatter_records(Backend backend, const RecordLayout& layout, long long first_row,
                     long long count, const char* in);
// dst row j <- src row order[j], j < count.
void gather_rows(Backend backend, const char* src, char* dst, long long row_bytes,
                 const std::int64_t* order, long long count, int word);

}  // namespace cunumpy::detail
