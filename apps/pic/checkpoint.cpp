// Checkpoints and openPMD output of the mini-app (checkpoint.hpp).
#include "checkpoint.hpp"

#include <cstring>
#include <filesystem>
#include <variant>

#include <cunumpy/hdf5.hpp>
#include <cunumpy/openpmd.hpp>
#include <cunumpy/particle_io.hpp>

#include "config_table.hpp"

namespace pic {

namespace cn = cunumpy;
namespace h5 = cunumpy::h5;

namespace {

constexpr const char* kFormat = "cunumpy-pic-checkpoint-3";  // -3: every column of the set

// The openPMD axis labels of a dimension: x, y, z (C order).
std::vector<std::string> axis_names(int dim) {
  std::vector<std::string> axes{"x", "y", "z"};
  axes.resize(static_cast<std::size_t>(dim));
  return axes;
}

// An order-independent checksum of the particles (a wrapping sum over the rows and the ranks of
// a mix of each value's bits, its column and its row's id): any change of a value in any column
// changes it.
std::uint64_t mix(std::uint64_t h) {
  h ^= h >> 31;
  h *= 0x7FB5D329728EA185ull;
  h ^= h >> 27;
  h *= 0x81DADEF4BC2DD44Dull;
  return h ^ (h >> 33);
}
template <typename Real>
std::uint64_t checksum(const cn::ParticleSet<Real>& p, const cn::Comm& comm) {
  auto& set = const_cast<cn::ParticleSet<Real>&>(p);  // for_each_column: handles, read here
  const cn::Array<std::int64_t> ids = cn::to_host(p.id.leading(p.n));
  std::uint64_t sum = 0, column = 0;
  set.for_each_column([&](const std::string&, cn::AnyParticleColumn any) {
    ++column;
    std::visit(
        [&]<typename T>(cn::Array<T>* a) {
          const cn::Array<T> h = cn::to_host(a->leading(p.n));
          for (long long i = 0; i < p.n; ++i) {
            std::uint64_t bits = 0;
            std::memcpy(&bits, h.data() + i, sizeof(T));
            sum += mix(bits ^ mix(column * 0x9E3779B97F4A7C15ull +
                                  static_cast<std::uint64_t>(ids.data()[i])));
          }
        },
        any);
  });
  return comm.allreduce(sum, cn::Op::sum);
}

// Every option of config_table.hpp, by name, as text.
void write_config(const h5::Group& g, const Config& c) {
  for (const auto& [name, text] : option_values(c)) g.attribute(name, text);
}

Config read_config(const h5::Group& g, const std::string& path) {
  Config c;
  std::vector<std::pair<std::string, std::string>> values;
  for (const Option& o : options()) {
    if (!g.has_attribute(o.name))
      throw cn::IoError("checkpoint " + path + " does not record the option --" + o.name +
                        " (written by another version of the program)");
    values.emplace_back(o.name, g.read_string(o.name));
  }
  set_option_values(c, values);
  return c;
}

struct History {
  const char* name;
  std::vector<double> Results::*member;
};
const History kHistories[] = {{"time", &Results::time},
                              {"field_energy", &Results::field_energy},
                              {"mode_energy", &Results::mode_energy},
                              {"kinetic_energy", &Results::kinetic_energy},
                              {"momentum", &Results::momentum},
                              {"total_charge", &Results::total_charge}};

}  // namespace

Config read_checkpoint_config(const std::string& path, const cn::Comm& comm) {
  const h5::File f = h5::File::open(path, comm);
  if (!f.exists("cunumpy"))
    throw cn::IoError("checkpoint " + path +
                      " is not a checkpoint of this program (no /cunumpy group)");
  return read_config(f.open_group("cunumpy").open_group("config"), path);
}

template <typename Real>
std::string write_checkpoint(const std::string& folder, const cn::Comm& comm,
                             const Checkpoint<Real>& c) {
  const std::string dir = (std::filesystem::path(folder) / "checkpoints").string();
  cn::OpenPmdSeries series(dir, comm, {.name = "checkpoint", .overwrite = true});
  auto it = series.iteration(c.step, c.step * c.config.dt, c.config.dt);
  const cn::ParticleSet<Real>& p = c.particles;
  const long long n = p.n;
  const BoxLengths box = box_of(c.config);
  // Every column of the set in its precision (cells as positionOffset, in cell units); one
  // patch per rank, each the whole box (a checkpoint does not record the rank's region).
  cn::ParticleSpecies species{.weight = particle_weight(c.config)};
  const double lengths[] = {box.lx, box.ly, box.lz};
  const long long cells[] = {c.config.cells_x, c.config.cells_y, c.config.cells_z};
  for (int a = 0; a < p.dim; ++a) {
    if (p.cells) species.cell_size.push_back(lengths[a] / static_cast<double>(cells[a]));
    species.patch_offset.push_back(0.0);
    species.patch_extent.push_back(lengths[a]);
  }
  cn::write_particles(it, "electrons", p, species);
  const std::uint64_t sum = checksum(p, comm);
  const std::vector<long long> counts = comm.allgather(n);
  it.extension("cunumpy", [&](const h5::File& f, const h5::Group& g) {
    g.attribute("format", kFormat);
    g.attribute("step", static_cast<std::int64_t>(c.step));
    g.attribute("ranks", static_cast<std::int64_t>(comm.size()));
    g.attribute("total_particles", static_cast<std::int64_t>(c.total));
    g.attribute("checksum", sum);
    write_config(g.group("config"), c.config);
    const long long P = comm.size();
    const long long zero = 0, mine = comm.rank() == 0 ? P : 0;
    h5::write_dataset<std::int64_t>(f, g, "rank_counts", std::vector<long long>{P},
                                    std::vector<long long>{zero}, std::vector<long long>{mine},
                                    reinterpret_cast<const std::int64_t*>(counts.data()));
    const h5::Group h = g.group("history");
    for (const History& k : kHistories) {
      const std::vector<double>& v = c.history.*k.member;
      const long long len = static_cast<long long>(v.size());
      h5::write_dataset<double>(f, h, k.name, std::vector<long long>{len},
                                std::vector<long long>{0},
                                std::vector<long long>{comm.rank() == 0 ? len : 0}, v.data());
    }
  });
  it.close();
  return it.path();
}

template <typename Real>
Checkpoint<Real> read_checkpoint(const std::string& path, const cn::Comm& comm,
                                 cn::Backend backend) {
  const cn::OpenPmdParticleReader reader(path, "electrons", comm);
  const h5::File& f = reader.file();
  if (!f.exists("cunumpy"))
    throw cn::IoError("checkpoint " + path +
                      " is not a checkpoint of this program (no /cunumpy group)");
  const h5::Group g = f.open_group("cunumpy");
  if (g.read_string("format") != kFormat)
    throw cn::IoError(path + " is a checkpoint of another format (" + g.read_string("format") +
                      ", expected " + kFormat + ")");
  Checkpoint<Real> c;
  c.config = read_config(g.open_group("config"), path);
  c.step = static_cast<int>(g.read_int64("step"));
  c.total = g.read_int64("total_particles");
  if (reader.count() != c.total)
    throw cn::IoError("checkpoint " + path + " holds " + std::to_string(reader.count()) +
                      " particles, the checkpoint says " + std::to_string(c.total) +
                      " (truncated or corrupted)");
  const long long written_ranks = g.read_int64("ranks");
  // This rank's rows: the same block as when written at the same rank count, else an even
  // split.
  long long first = 0, n = 0;
  if (written_ranks == comm.size()) {
    std::vector<std::int64_t> counts(static_cast<std::size_t>(written_ranks));
    const h5::Object rc = g.open_dataset("rank_counts");
    h5::read_dataset<std::int64_t>(f, rc, std::vector<long long>{0},
                                   std::vector<long long>{written_ranks}, counts.data());
    for (int r = 0; r < comm.rank(); ++r) first += counts[r];
    n = counts[comm.rank()];
  } else {
    first = c.total * comm.rank() / comm.size();
    n = c.total * (comm.rank() + 1) / comm.size() - first;
  }
  c.particles = cn::read_particles<Real>(reader, first, n, backend);
  const h5::Group h = g.open_group("history");
  for (const History& k : kHistories) {
    const h5::Object d = h.open_dataset(k.name);
    const std::vector<long long> shape = h5::dataset_shape(d);
    std::vector<double>& v = c.history.*k.member;
    v.resize(static_cast<std::size_t>(shape.empty() ? 0 : shape[0]));
    h5::read_dataset<double>(f, d, std::vector<long long>{0}, shape, v.data());
  }
  c.history.steps_done = c.step;
  if (checksum(c.particles, comm) != g.read_uint64("checksum"))
    throw cn::IoError("checkpoint " + path +
                      ": the particles do not match the checkpoint's checksum (corrupted); use an "
                      "earlier checkpoint");
  return c;
}

template std::string write_checkpoint<double>(const std::string&, const cn::Comm&,
                                              const Checkpoint<double>&);
template std::string write_checkpoint<float>(const std::string&, const cn::Comm&,
                                             const Checkpoint<float>&);
template Checkpoint<double> read_checkpoint<double>(const std::string&, const cn::Comm&,
                                                    cn::Backend);
template Checkpoint<float> read_checkpoint<float>(const std::string&, const cn::Comm&, cn::Backend);

SnapshotWriter::SnapshotWriter(const std::string& folder, const cn::Comm& comm, bool overwrite)
    : series_(std::make_shared<cn::OpenPmdSeries>(
          (std::filesystem::path(folder) / "openpmd").string(), comm,
          cn::OpenPmdOptions{.name = "data", .overwrite = overwrite})) {}
SnapshotWriter::~SnapshotWriter() = default;

template <typename Real>
std::string SnapshotWriter::write(int step, double time, double dt, const MeshBlock& m,
                                  const cn::ParticleSet<Real>& particles,
                                  const cn::ParticleSpecies& species) {
  const std::size_t nd = m.global.size();
  const std::vector<std::string> axes = axis_names(static_cast<int>(nd));
  cn::MeshLayout layout{.global = m.global,
                        .offset = m.offset,
                        .count = m.count,
                        .spacing = m.spacing,
                        .grid_offset = std::vector<double>(nd, 0.0),
                        .axis_labels = axes};
  auto it = series_->iteration(step, time, dt);
  it.mesh("rho", {}, layout, {&m.rho}, {-3, 0, 1, 1, 0, 0, 0});
  std::vector<const cn::Array<double>*> e;
  for (const auto& a : m.e) e.push_back(&a);
  it.mesh("E", axes, layout, e, {1, 1, -3, -1, 0, 0, 0});
  cn::write_particles(it, "electrons", particles, species);  // in the particles' precision
  it.close();
  return it.path();
}
template std::string SnapshotWriter::write<double>(int, double, double, const MeshBlock&,
                                                   const cn::ParticleSet<double>&,
                                                   const cn::ParticleSpecies&);
template std::string SnapshotWriter::write<float>(int, double, double, const MeshBlock&,
                                                  const cn::ParticleSet<float>&,
                                                  const cn::ParticleSpecies&);

}  // namespace pic
