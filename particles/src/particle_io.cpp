// A ParticleSet as openPMD particle records (cunumpy/particle_io.hpp).
#include <cunumpy/particle_io.hpp>

#include <cstdint>
#include <string>
#include <type_traits>
#include <variant>

#include <cunumpy/errors.hpp>
#include <cunumpy/transfer.hpp>

namespace cunumpy {

namespace {

const char* const kAxes[] = {"x", "y", "z"};

// The rows [0, n) of a column on the host: the column itself on the host, else a counted copy.
template <typename T>
Array<T> host_rows(const Array<T>& a, long long n) {
  return a.is_device() ? to_host(a.leading(n)) : a.leading(n);
}

}  // namespace

template <typename Real>
void write_particles(OpenPmdIteration& iteration, const std::string& species,
                     const ParticleSet<Real>& p, const ParticleSpecies& info) {
  const long long n = p.n;
  auto& set = const_cast<ParticleSet<Real>&>(p);  // for_each_column: handles, not changed here
  // Kept alive until the records are written.
  std::vector<Array<Real>> position, momentum;
  std::vector<Array<std::int32_t>> cells;
  Array<std::int64_t> id;
  Array<double> weighting;
  std::vector<std::variant<Array<double>, Array<float>, Array<std::int32_t>, Array<std::int64_t>>>
      named;
  ParticleRecords r;
  const Array<Real>* xs[] = {&p.x, &p.y, &p.z};
  const Array<Real>* vs[] = {&p.vx, &p.vy, &p.vz};
  const Array<std::int32_t>* cs[] = {&p.cx, &p.cy, &p.cz};
  for (int a = 0; a < p.dim; ++a) {
    r.axes.emplace_back(kAxes[a]);
    position.push_back(host_rows(*xs[a], n));
    momentum.push_back(host_rows(*vs[a], n));
    if (p.cells) cells.push_back(host_rows(*cs[a], n));
  }
  for (int a = 0; a < p.dim; ++a) {
    r.position.emplace_back(&position[static_cast<std::size_t>(a)]);
    r.momentum.emplace_back(&momentum[static_cast<std::size_t>(a)]);
    if (p.cells) r.position_offset.push_back(&cells[static_cast<std::size_t>(a)]);
  }
  if (p.cells) {
    if (static_cast<int>(info.cell_size.size()) != p.dim)
      throw ValueError("write_particles " + species + ": a set with cells needs the cell's " +
                       "length along each of its " + std::to_string(p.dim) +
                       " axes in ParticleSpecies::cell_size, got " +
                       std::to_string(info.cell_size.size()));
    r.cell_size = info.cell_size;
  }
  if (p.layout().ids) {
    id = host_rows(p.id, n);
    r.id = &id;
  }
  if (!info.weighting.empty()) {
    weighting = host_rows(set.template column<double>(info.weighting), n);
    r.weighting = &weighting;
    r.weighting_name = info.weighting;
  }
  std::vector<std::string> names;
  set.for_each_named_column([&](const std::string& name, AnyParticleColumn column) {
    if (name == info.weighting) return;
    std::visit([&](auto* a) { named.emplace_back(host_rows(*a, n)); }, column);
    names.push_back(name);
  });
  for (std::size_t k = 0; k < named.size(); ++k)
    std::visit([&](const auto& a) { r.records.emplace_back(names[k], &a); }, named[k]);
  r.count = n;
  r.weight = info.weight;
  r.charge = info.charge;
  r.mass = info.mass;
  r.patch_offset = info.patch_offset;
  r.patch_extent = info.patch_extent;
  iteration.particles(species, r);
}

template <typename Real>
ParticleSet<Real> read_particles(const OpenPmdParticleReader& reader, long long first, long long n,
                                 Backend backend, long long capacity) {
  if (first < 0 || n < 0 || first + n > reader.count())
    throw IoError("read_particles: rows [" + std::to_string(first) + ", " +
                  std::to_string(first + n) + ") of " + reader.path() + ", which holds " +
                  std::to_string(reader.count()) + " particles");
  if (capacity == 0) capacity = n;
  if (capacity < n)
    throw ValueError("read_particles: a capacity of " + std::to_string(capacity) + " rows for " +
                     std::to_string(n) + " particles; give at least n (or 0)");
  const int dim = static_cast<int>(reader.axes().size());
  ParticleSet<Real> p({.dim = dim, .cells = reader.in_cells(), .ids = reader.has("id")}, capacity,
                      backend);
  auto fill = [&]<typename T>(Array<T>& column, const std::string& record) {
    if (!column.is_device()) return reader.read<T>(record, first, n, column.data());
    Array<T> h = empty<T>({n}, Backend::host);
    reader.read<T>(record, first, n, h.data());
    copy(column.leading(n), h);
  };
  Array<Real>* xs[] = {&p.x, &p.y, &p.z};
  Array<Real>* vs[] = {&p.vx, &p.vy, &p.vz};
  Array<std::int32_t>* cs[] = {&p.cx, &p.cy, &p.cz};
  for (int a = 0; a < dim; ++a) {
    const std::string axis = reader.axes()[static_cast<std::size_t>(a)];
    fill(*xs[a], "position/" + axis);
    fill(*vs[a], "momentum/" + axis);
    if (p.cells) fill(*cs[a], "positionOffset/" + axis);
  }
  if (reader.has("id")) fill(p.id, "id");
  for (const std::string& record : reader.records()) {
    if (record.find('/') != std::string::npos || record == "id") continue;
    std::string name = record;
    if (record == "weighting") {
      name = reader.attribute(record, "cunumpyColumn");
      if (name.empty()) name = "weighting";
    }
    switch (reader.dtype(record)) {
      case DType::float64:
        fill(p.template add_column<double>(name), record);
        break;
      case DType::float32:
        fill(p.template add_column<float>(name), record);
        break;
      case DType::int8:
      case DType::uint8:
      case DType::int16:
      case DType::uint16:
      case DType::int32:
        fill(p.template add_column<std::int32_t>(name), record);
        break;
      case DType::uint32:
      case DType::int64:
      case DType::uint64:
        fill(p.template add_column<std::int64_t>(name), record);
        break;
      default:
        throw IoError("read_particles: " + reader.path() + ": the record " + record +
                      " holds values no particle column takes");
    }
  }
  p.n = n;
  return p;
}

template void write_particles<double>(OpenPmdIteration&, const std::string&,
                                      const ParticleSet<double>&, const ParticleSpecies&);
template void write_particles<float>(OpenPmdIteration&, const std::string&,
                                     const ParticleSet<float>&, const ParticleSpecies&);
template ParticleSet<double> read_particles<double>(const OpenPmdParticleReader&, long long,
                                                    long long, Backend, long long);
template ParticleSet<float> read_particles<float>(const OpenPmdParticleReader&, long long,
                                                  long long, Backend, long long);

}  // namespace cunumpy
