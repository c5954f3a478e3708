// ParticleSet (cunumpy/particles.hpp): construction, growth, the gathered permutation (a loop on
// the particles' backend: compiled by nvcc in CUDA builds) and the migration's columns.
#include <cunumpy/particles.hpp>

#include <algorithm>
#include <array>
#include <string>

#include <cunumpy/errors.hpp>
#include <cunumpy/parallel.hpp>
#include <cunumpy/transfer.hpp>

namespace cunumpy {

namespace detail {
void throw_particle_column(const std::string& what, const std::string& name,
                           const std::string& columns) {
  throw ValueError("ParticleSet::" + what + ": '" + name + "'; the set's columns are " + columns);
}
}  // namespace detail

namespace {

// Rows [0, n) of K columns of one type gathered in the order `order` gives (row i takes row
// order[i]) in one pass, into new arrays of the same shape that then replace them.
template <typename T>
struct Gathered {  // (at namespace scope: captured by the device loop)
  T* out[4];
  const T* in[4];
};
template <std::size_t K, typename T>
void gather(Array<T>* const* columns, const Array<std::int64_t>& order, long long n) {
  Gathered<T> m{};
  std::array<Array<T>, K> moved;
  for (std::size_t k = 0; k < K; ++k) {
    moved[k] = empty<T>(columns[k]->shape(), columns[k]->backend());
    m.out[k] = moved[k].data();
    m.in[k] = columns[k]->data();
  }
  const std::int64_t* o = order.data();
  CUNUMPY_FOR_ON(on(order), "ParticleSet::permute", n, i, const std::int64_t from = o[i];
                 for (std::size_t k = 0; k < K; ++k) m.out[k][i] = m.in[k][from];);
  for (std::size_t k = 0; k < K; ++k) *columns[k] = std::move(moved[k]);
}

// The columns of one type gathered in groups: two 8-byte columns a pass (the new blocks can be
// those a sort's keys freed, so the peak stays the sort's), 4-byte columns one a pass, each
// into the block the previous one freed.
template <typename T>
void gather_all(const std::vector<Array<T>*>& columns, const Array<std::int64_t>& order,
                long long n) {
  constexpr std::size_t kGroup = sizeof(T) >= 8 ? 16 / sizeof(T) : 1;
  for (std::size_t at = 0; at < columns.size(); at += kGroup) {
    Array<T>* const* group = columns.data() + at;
    switch (std::min(kGroup, columns.size() - at)) {
      case 1:
        gather<1>(group, order, n);
        break;
      case 2:
        gather<2>(group, order, n);
        break;
      case 3:
        gather<3>(group, order, n);
        break;
      default:
        gather<4>(group, order, n);
        break;
    }
  }
}

// A column of `rows` rows holding a's rows [0, n).
template <typename T>
void grow(Array<T>& a, long long rows, long long n) {
  if (a.ndim() == 0 || a.shape(0) >= rows) return;
  Array<T> bigger = empty<T>({rows}, a.backend());
  if (n > 0) copy(bigger.leading(n), a.leading(n));
  a = std::move(bigger);
}

}  // namespace

template <typename Real>
ParticleSet<Real>::ParticleSet(ParticleLayout layout, long long capacity, Backend backend)
    : dim(layout.dim), cells(layout.cells) {
  if (layout.dim < 1 || layout.dim > 3)
    throw ValueError("ParticleSet: dim must be 1, 2 or 3, got " + std::to_string(layout.dim));
  if (capacity < 0)
    throw ValueError("ParticleSet: capacity must be at least 0, got " + std::to_string(capacity));
  const auto axes = [&](auto& a, auto& b, auto& c) {
    using T = typename std::decay_t<decltype(a)>::value_type;
    a = empty<T>({capacity}, backend);
    if (dim >= 2) b = empty<T>({capacity}, backend);
    if (dim == 3) c = empty<T>({capacity}, backend);
  };
  axes(x, y, z);
  axes(vx, vy, vz);
  if (cells) axes(cx, cy, cz);
  if (layout.ids) id = empty<std::int64_t>({capacity}, backend);
}

template <typename Real>
std::vector<std::pair<std::string, AnyParticleColumn>> ParticleSet<Real>::built_in() {
  std::vector<std::pair<std::string, AnyParticleColumn>> out;
  const auto axes = [&](const char* const(&name)[3], auto& a, auto& b, auto& c) {
    out.emplace_back(name[0], &a);
    if (dim >= 2) out.emplace_back(name[1], &b);
    if (dim == 3) out.emplace_back(name[2], &c);
  };
  axes({"x", "y", "z"}, x, y, z);
  if (cells) axes({"cx", "cy", "cz"}, cx, cy, cz);
  axes({"vx", "vy", "vz"}, vx, vy, vz);
  if (id.ndim() != 0) out.emplace_back("id", &id);
  return out;
}

template <typename Real>
std::string ParticleSet<Real>::names() const {
  std::string out;
  for (auto& [name, column] : const_cast<ParticleSet*>(this)->built_in())
    out += (out.empty() ? "" : ", ") + name;
  for (const auto& [name, column] : named_) out += ", " + name;
  return out;
}

template <typename Real>
bool ParticleSet<Real>::built_in_name(const std::string& name) const {
  for (const char* b : {"x", "y", "z", "vx", "vy", "vz", "cx", "cy", "cz", "id"})
    if (name == b) return true;
  return false;
}

template <typename Real>
void ParticleSet<Real>::remove_column(const std::string& name) {
  if (named_.erase(name) == 0)
    detail::throw_particle_column("remove_column: no such column", name, names());
}

template <typename Real>
void ParticleSet<Real>::reserve(long long rows) {
  if (rows <= capacity()) return;
  for_each_column([&](const std::string&, AnyParticleColumn column) {
    std::visit([&](auto* a) { grow(*a, rows, n); }, column);
  });
}

template <typename Real>
void ParticleSet<Real>::permute(const Array<std::int64_t>& order) {
  if (order.ndim() != 1 || order.shape(0) != n)
    throw ValueError("ParticleSet::permute: the order must have one entry a particle (" +
                     std::to_string(n) + "), got shape " + order.shape().str());
  if (n > 0 && order.backend() != backend())
    throw ValueError(std::string("ParticleSet::permute: the order is on the ") +
                     std::string(to_string(order.backend())) + " backend, the particles on the " +
                     std::string(to_string(backend())) + "; move it with to_host / to_device");
  std::vector<Array<double>*> f64;
  std::vector<Array<float>*> f32;
  std::vector<Array<std::int32_t>*> i32;
  std::vector<Array<std::int64_t>*> i64;
  for_each_column([&](const std::string&, AnyParticleColumn column) {
    std::visit(
        [&](auto* a) {
          using T = typename std::decay_t<decltype(*a)>::value_type;
          if (a->size() == 0) return;
          if constexpr (std::is_same_v<T, double>) f64.push_back(a);
          if constexpr (std::is_same_v<T, float>) f32.push_back(a);
          if constexpr (std::is_same_v<T, std::int32_t>) i32.push_back(a);
          if constexpr (std::is_same_v<T, std::int64_t>) i64.push_back(a);
        },
        column);
  });
  gather_all(f64, order, n);
  gather_all(f32, order, n);
  gather_all(i32, order, n);
  gather_all(i64, order, n);
}

template <typename Real>
ParticleColumns ParticleSet<Real>::migration_columns() {
  ParticleColumns columns;
  const auto positions = [&](auto& a, auto& b, auto& c) {
    columns.position(a);
    if (dim >= 2) columns.position(b);
    if (dim == 3) columns.position(c);
  };
  if (cells)
    positions(cx, cy, cz);
  else
    positions(x, y, z);
  for_each_column([&](const std::string& name, AnyParticleColumn column) {
    const bool position = cells ? (name == "cx" || name == "cy" || name == "cz")
                                : (name == "x" || name == "y" || name == "z");
    if (!position) std::visit([&](auto* a) { columns.column(*a); }, column);
  });
  return columns;
}

template <typename Real>
long long migrate(ParticleMigration& migration, ParticleSet<Real>& p, std::source_location where) {
  ParticleColumns columns = p.migration_columns();
  p.n = migration.migrate(columns, p.n, where);
  return p.n;
}

template <typename Real>
long long migrate(ParticleMigration& migration, ParticleSet<Real>& p,
                  std::span<const std::int64_t> candidates, std::source_location where) {
  ParticleColumns columns = p.migration_columns();
  p.n = migration.migrate(columns, p.n, candidates, where);
  return p.n;
}

template class ParticleSet<double>;
template class ParticleSet<float>;
template long long migrate(ParticleMigration&, ParticleSet<double>&, std::source_location);
template long long migrate(ParticleMigration&, ParticleSet<float>&, std::source_location);
template long long migrate(ParticleMigration&, ParticleSet<double>&, std::span<const std::int64_t>,
                           std::source_location);
template long long migrate(ParticleMigration&, ParticleSet<float>&, std::span<const std::int64_t>,
                           std::source_location);

}  // namespace cunumpy
