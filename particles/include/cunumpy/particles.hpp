// cunumpy/particles.hpp: a species' particles as one container of SoA arrays, on one backend.
//
//   cunumpy::ParticleSet<float> p({.dim = 2}, capacity, cunumpy::Backend::host);
//   p.n = count;                                      // rows [0, n) are the particles
//   push(p.x.data(), p.y.data(), p.vx.data(), p.vy.data(), p.n);
//   auto& w = p.add_column<double>("weight");         // a column of the application's, by name
//   p.permute(order);                                 // every column, rows [0, n) reordered
//   cunumpy::migrate(migration, p);                   // every column travels; p.n updated
//
// Row i of every column is particle i; rows [n, capacity) are spare.  The columns: positions
// x, y, z and velocities vx, vy, vz in Real (double or float; the axes past `dim` are empty
// arrays), with `cells` (mixed precision) the int32 cells cx, cy, cz along which x, y, z are
// offsets in cell units ([0, 1): a float then keeps 24 bits within the cell however far from the
// origin), the int64 ids, and any number of named columns of the application's (double, float,
// int32 or int64, one value a row).  Adding a quantity to the particles is one add_column call:
// the re-sort, the migration and the checkpoint (for_each_column) carry it.
//
// Like Array, the container is a set of handles: a copy shares the arrays.  Cabana's AoSoA and
// distributeData are the models; here each column is a plain Array the kernels take as it is.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <cunumpy/array.hpp>
#include <cunumpy/migration.hpp>

namespace cunumpy {

// What a particle holds besides the application's columns.
struct ParticleLayout {
  int dim = 3;         // 1, 2 or 3 axes of position and velocity
  bool cells = false;  // positions as int32 cells and offsets in cell units (mixed precision)
  bool ids = true;     // an int64 id a particle
};

// What a species' output says of it beyond its columns (write_particles, particle_io.hpp).
struct ParticleSpecies {
  double charge = -1.0, mass = 1.0;  // per macro-particle: openPMD's constant records
  double weight = 1.0;               // every particle's weighting, when `weighting` is empty
  std::string weighting;             // a double column written as openPMD's weighting record
  // With `cells`: the cell's length per axis (positionOffset's unitSI).  Required then.
  std::vector<double> cell_size;
  // openPMD's particlePatches: this rank's region per axis (empty: no patches).
  std::vector<double> patch_offset, patch_extent;
};

// The element types of a named column.
template <typename T>
concept ParticleElement = std::is_same_v<T, double> || std::is_same_v<T, float> ||
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>;

// One column of any element type (for_each_column).
using AnyParticleColumn =
    std::variant<Array<double>*, Array<float>*, Array<std::int32_t>*, Array<std::int64_t>*>;

namespace detail {
[[noreturn]] void throw_particle_column(const std::string& what, const std::string& name,
                                        const std::string& columns);
}  // namespace detail

// A species' particles: rows [0, n) of SoA arrays of `capacity` rows (see above).
template <typename Real>
class ParticleSet {
  static_assert(std::is_same_v<Real, double> || std::is_same_v<Real, float>,
                "ParticleSet<Real>: Real is double or float");

 public:
  using real_type = Real;

  ParticleSet() = default;
  // Empty columns of `capacity` rows on `backend` (values unset), n = 0.  ValueError for a dim
  // outside 1..3 or a negative capacity.
  ParticleSet(ParticleLayout layout, long long capacity, Backend backend);

  Array<Real> x, y, z;             // positions (offsets in the cells with `cells`)
  Array<Real> vx, vy, vz;          // velocities
  Array<std::int32_t> cx, cy, cz;  // with `cells`: each axis's cell
  Array<std::int64_t> id;          // with `ids`
  int dim = 1;
  bool cells = false;
  long long n = 0;  // rows [0, n) are the particles

  long long capacity() const noexcept { return x.ndim() == 0 ? 0 : x.shape(0); }
  Backend backend() const { return x.backend(); }
  ParticleLayout layout() const noexcept { return {dim, cells, id.ndim() != 0}; }

  // A new column of the application's (capacity rows, zeros).  ValueError if the name is taken
  // (by another column or a built-in one: x, vx, cx, id, ...).
  template <ParticleElement T>
  Array<T>& add_column(const std::string& name) {
    if (name.empty() || named_.count(name) != 0 || built_in_name(name))
      detail::throw_particle_column("add_column: taken", name, names());
    const long long rows = capacity();
    const Backend b = rows == 0 ? Backend::host : backend();
    return std::get<Array<T>>(named_.emplace(name, zeros<T>({rows}, b)).first->second);
  }
  // A new column of the application's holding `values` (an array of capacity rows on the set's
  // backend, adopted: no copy).  ValueError as above, or for another shape or backend.
  template <ParticleElement T>
  Array<T>& add_column(const std::string& name, Array<T> values) {
    if (values.ndim() != 1 || values.shape(0) != capacity() ||
        (capacity() != 0 && values.backend() != backend()))
      detail::throw_particle_column("add_column: the values must be one row a particle slot (" +
                                        std::to_string(capacity()) + " rows) on the set's backend",
                                    name, names());
    Array<T>& column = add_column<T>(name);
    column = std::move(values);
    return column;
  }
  // The named column; ValueError naming the columns there are when it is missing or holds
  // another element type.
  template <ParticleElement T>
  Array<T>& column(const std::string& name) {
    const auto at = named_.find(name);
    if (at == named_.end()) detail::throw_particle_column("column: no such column", name, names());
    if (!std::holds_alternative<Array<T>>(at->second))
      detail::throw_particle_column("column: not of element type " + std::string(dtype_name<T>()),
                                    name, names());
    return std::get<Array<T>>(at->second);
  }
  template <ParticleElement T>
  const Array<T>& column(const std::string& name) const {
    return const_cast<ParticleSet*>(this)->column<T>(name);
  }
  bool has_column(const std::string& name) const { return named_.count(name) != 0; }
  // Removes a named column (ValueError when missing).
  void remove_column(const std::string& name);

  // f(name, AnyParticleColumn) for every column in use, in a fixed order: x, y, z (to `dim`),
  // cx, cy, cz (with cells), vx, vy, vz, id, then the named columns by name.
  template <typename F>
  void for_each_column(F&& f) {
    for (auto& [name, column] : built_in()) f(name, column);
    for_each_named_column(f);
  }
  // f(name, AnyParticleColumn) for the named columns alone, by name.
  template <typename F>
  void for_each_named_column(F&& f) {
    for (auto& entry : named_)  // (no structured binding: lambdas capture the name)
      std::visit([&](auto& a) { f(entry.first, AnyParticleColumn(&a)); }, entry.second);
  }

  // Every column grown to at least `rows` rows, rows [0, n) kept (no-op when large enough).
  void reserve(long long rows);
  // Rows [0, n) of every column reordered: row i takes row order[i] (order: n int64 on the
  // particles' backend, a permutation, e.g. sort_by_key's).  Columns are gathered a few at a time
  // into new arrays of the same capacity, which replace them (spare rows hold nothing): the peak
  // is two 8-byte or one 4-byte column's worth above the particles.  ValueError for an order of
  // another length or backend.
  void permute(const Array<std::int64_t>& order);

  // The columns for a ParticleMigration: positions first (the cells with `cells`, else x, y, z),
  // then every other column.  The references are to this set's arrays.
  ParticleColumns migration_columns();

  // Bytes a particle takes in the built-in columns.
  static long long bytes_per_particle(ParticleLayout layout) {
    return 2 * layout.dim * static_cast<long long>(sizeof(Real)) + (layout.ids ? 8 : 0) +
           (layout.cells ? 4 * layout.dim : 0);
  }

 private:
  using Named = std::variant<Array<double>, Array<float>, Array<std::int32_t>, Array<std::int64_t>>;
  std::vector<std::pair<std::string, AnyParticleColumn>> built_in();
  std::string names() const;
  bool built_in_name(const std::string& name) const;
  std::map<std::string, Named> named_;
};

// Moves the particles this rank does not own to their owners and takes in those it owns
// (ParticleMigration::migrate over every column of the set); p.n becomes the new count.
// Collective.
template <typename Real>
long long migrate(ParticleMigration& migration, ParticleSet<Real>& p,
                  std::source_location where = std::source_location::current());
// As above, only the rows in `candidates` examined (ParticleMigration's candidates form).
template <typename Real>
long long migrate(ParticleMigration& migration, ParticleSet<Real>& p,
                  std::span<const std::int64_t> candidates,
                  std::source_location where = std::source_location::current());

}  // namespace cunumpy
