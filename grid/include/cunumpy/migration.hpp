// cunumpy/migration.hpp: particles that left a rank's part of a decomposed box move to the
// rank that owns their new cell.
//
//   cunumpy::CartesianDecomposition d(world, {nx, ny});
//   cunumpy::ParticleMigration migration(world, d, {0.0, 0.0}, {lx, ly});
//   cunumpy::ParticleColumns particles;                     // once: references to the arrays
//   particles.position(x).position(y).column(vx).column(vy).column(id);
//   ...
//   push(x, y, vx, vy, n);
//   n = migration.migrate(particles, n);                    // rows [0, n) are the particles
//
// Particles are rows of SoA arrays: one position array per axis (double or float, or int32 global
// cell indices; one type for all axes, the first `ndim` columns given with position()), and any
// number of other arrays of any element type whose first axis is the particle (any width:
// (capacity,), (capacity, 3), ...).  Row i of every array is particle i; rows past the count are
// spare capacity.
//
// One migrate() call touches the leavers and the arrivals only.  One streaming pass computes
// each particle's owner from its position (periodic axes wrap the position into the box
// first) on the arrays' side and counts those that leave; when none leaves anywhere near, the
// call costs that pass and one small alltoall.  Otherwise the leavers' rows are listed
// (cunumpy::flatnonzero), grouped by destination (a stable sort_by_key of the leavers' keys
// only), packed into one record per particle, and sent straight to the owning rank, neighbour
// or not (a far jump costs nothing more).  Arrivals fill the rows the leavers left, in
// increasing order, then rows past the old count; when fewer arrive than left, the last rows
// move into the remaining holes.  Particles that stay keep their rows (but for those moved
// down from the tail), so their order is not kept: sort them (sort_by_key) when locality
// matters.  The arrays are changed in place and replaced only when they grow (by `growth`
// when they must; capacity kept from call to call, so a steady state does not reallocate): a
// grown array is a new one, the references given to ParticleColumns are updated, other copies
// of the old handles are not.  Device records go to MPI as they are when it is CUDA-aware (no
// transfer), else through pinned staging (one counted copy each way).  The destination counts
// are read back like a reduction's result.
//
// A ParticleMigration works on a communicator of its own (a duplicate made at construction,
// which is collective): its messages never meet the application's or another exchange's.
//
// A particle outside the box along a bounded axis (or at a NaN position) is an error on every
// rank (ValueError with the counts per rank; nothing is dropped); so are ranks whose rows do
// not match (another number of columns or widths), and a bad argument on one rank.
#pragma once

#include <array>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <cunumpy/array.hpp>
#include <cunumpy/comm.hpp>
#include <cunumpy/decomposition.hpp>

namespace cunumpy {

namespace detail {
// A particle array without its element type.
class ParticleColumn {
 public:
  virtual ~ParticleColumn() = default;
  virtual void* data() const = 0;
  virtual Backend backend() const = 0;
  virtual long long capacity() const = 0;  // rows
  virtual long long row_bytes() const = 0;
  virtual DType dtype() const = 0;
  virtual std::string describe() const = 0;
  // A larger array (same row shape, on the same side) of at least `rows` rows, allocated now
  // and kept until commit_growth().
  virtual void prepare_growth(long long rows) = 0;
  // The first `keep` rows are copied into the larger array, which becomes the column's array
  // (the user's handle is updated); the old one is released.
  virtual void commit_growth(long long keep) = 0;
};

template <Element T>
class ParticleColumnOf final : public ParticleColumn {
 public:
  explicit ParticleColumnOf(Array<T>& a) : array_(a) {}
  void* data() const override { return array_.data(); }
  Backend backend() const override { return array_.backend(); }
  long long capacity() const override { return array_.ndim() == 0 ? 0 : array_.shape(0); }
  long long row_bytes() const override {
    const long long rows = capacity();
    return rows == 0 ? static_cast<long long>(sizeof(T)) * width(array_.shape())
                     : static_cast<long long>(array_.nbytes()) / rows;
  }
  DType dtype() const override { return dtype_of<T>(); }
  std::string describe() const override {
    return describe_array("particle array", array_.shape(), dtype_name<T>());
  }
  void prepare_growth(long long rows) override {
    if (grown_.data() == nullptr || grown_.shape(0) < rows)
      grown_ = Array<T>(with_rows(array_.shape(), rows), backend());
  }
  void commit_growth(long long keep) override {
    if (keep > 0)
      detail::copy_memory(grown_.data(), grown_.backend(), array_.data(), array_.backend(),
                          static_cast<std::size_t>(keep * row_bytes()));
    array_ = std::move(grown_);
    grown_ = Array<T>();
  }

 private:
  static long long width(const Shape& s) {
    long long w = 1;
    for (int a = 1; a < s.rank(); ++a) w *= s[a];
    return w;
  }
  static Shape with_rows(const Shape& s, long long rows) {
    std::array<long long, Shape::max_rank> dims{};
    for (int a = 0; a < s.rank(); ++a) dims[a] = a == 0 ? rows : s[a];
    return Shape(std::span<const long long>(dims.data(), static_cast<std::size_t>(s.rank())));
  }
  Array<T>& array_;
  Array<T> grown_;
};

class MigrationImpl;
}  // namespace detail

// References to the arrays of a particle set (kept: the arrays themselves may be replaced by
// grown ones, and the references are updated).  Build it once, where the arrays live.
class ParticleColumns {
 public:
  // A position axis: double or float, every axis the same type (single-precision particles:
  // the migration wraps and decides on the stored float, never on a wider value); or int32,
  // the particle's global cell index along the axis (particles stored as a cell and an offset
  // within it: the offsets are ordinary columns).  Cell indices are decided on exactly: the
  // box is [0, cells) along each axis whatever box the migration was given, a periodic axis
  // wraps the index modulo the cells, and an index outside a bounded axis is an error.
  template <Element T>
  requires(std::is_same_v<T, double> || std::is_same_v<T, float> ||
           std::is_same_v<T, std::int32_t>) ParticleColumns& position(Array<T>& axis) {
    if (!columns_.empty() && positions_ != static_cast<int>(columns_.size()))
      throw ValueError("ParticleColumns: give the positions first, then the other columns");
    if (positions_ > 0 && columns_[0]->dtype() != dtype_of<T>())
      throw ValueError(
          "ParticleColumns: every position array must have one element type; the "
          "first is " +
          std::string(to_string(columns_[0]->dtype())) + ", this one " +
          std::string(dtype_name<T>()) +
          "; store every axis as one type (double, float, or int32 cell indices)");
    columns_.push_back(std::make_unique<detail::ParticleColumnOf<T>>(axis));
    ++positions_;
    return *this;
  }
  template <Element T>
  ParticleColumns& column(Array<T>& values) {
    columns_.push_back(std::make_unique<detail::ParticleColumnOf<T>>(values));
    return *this;
  }
  int positions() const noexcept { return positions_; }
  std::size_t size() const noexcept { return columns_.size(); }
  detail::ParticleColumn& operator[](std::size_t i) const { return *columns_[i]; }

 private:
  std::vector<std::unique_ptr<detail::ParticleColumn>> columns_;
  int positions_ = 0;
};

// How a ParticleMigration grows arrays.
struct MigrationOptions {
  double growth = 1.5;  // a full array grows to max(needed, growth * capacity) rows
};

// The part of a rank's block where a particle certainly stays (ParticleMigration::stay_region).
struct StayRegion {
  std::array<double, 3> lower{0.0, 0.0, 0.0}, upper{0.0, 0.0, 0.0};  // the first ndim axes
};

// What a ParticleMigration has moved.
struct MigrationStats {
  long long migrations = 0, sent = 0, received = 0, messages = 0, bytes_sent = 0, staged_copies = 0,
            reallocations = 0;
};

// Moves particles to the ranks that own their cells (see the top of this header).
class ParticleMigration {
 public:
  // The box is [lower, upper) along each axis of `decomposition` (the first ndim entries).
  ParticleMigration(const Comm& comm, const CartesianDecomposition& decomposition,
                    std::array<double, 3> lower, std::array<double, 3> upper,
                    MigrationOptions options = {});
  ~ParticleMigration();
  ParticleMigration(ParticleMigration&&) noexcept;
  ParticleMigration& operator=(ParticleMigration&&) noexcept;

  // Moves the particles in rows [0, count) that this rank does not own to their owners and
  // takes in those it owns from the others; returns the new count.  Collective.
  long long migrate(ParticleColumns& particles, long long count,
                    std::source_location where = std::source_location::current());

  // As above, with the rows that may have left given by the caller: only `candidates` (rows
  // below `count`, increasing) are examined, the others are taken to lie in stay_region() (in
  // the rank's own cells, for int32 cell indices as positions).  A
  // step that moves the particles finds them at no cost while their positions are in
  // registers; the migration then does no work per particle.  Host particle arrays only.
  // With CUNUMPY_MPI_CHECK=1 (mpi_checks()) every row is examined too, and a leaver missing
  // from the candidates is an error on every rank.  Collective.
  long long migrate(ParticleColumns& particles, long long count,
                    std::span<const std::int64_t> candidates,
                    std::source_location where = std::source_location::current());

  // This rank's block as positions, shrunk by a millionth of a cell on each side: a particle
  // inside it along every axis stays on this rank (the rest may or may not).  In the box's
  // coordinates: with int32 cell indices as positions, a particle stays when its cell along
  // every axis is one of the rank's (decomposition.owned(a)).
  StayRegion stay_region() const;

  // The rank owning a position in the box's coordinates (periodic axes wrapped); ValueError
  // outside a bounded axis.  For a cell index: CartesianDecomposition::owner_of.
  int owner_of(std::array<double, 3> position) const;

  const MigrationStats& stats() const noexcept;
  void reset_stats() noexcept;

 private:
  std::unique_ptr<detail::MigrationImpl> impl_;
};

}  // namespace cunumpy
