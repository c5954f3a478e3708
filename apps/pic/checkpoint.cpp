// Checkpoints and openPMD output of the mini-app (checkpoint.hpp).
#include "checkpoint.hpp"

#include <bit>
#include <cstring>
#include <filesystem>

#include <cunumpy/hdf5.hpp>
#include <cunumpy/openpmd.hpp>

#include "config_table.hpp"

namespace pic {

namespace cn = cunumpy;
namespace h5 = cunumpy::h5;

namespace {

constexpr const char* kFormat = "cunumpy-pic-checkpoint-2";  // -2: every option, as text

// The openPMD axis labels of a dimension: x, y, z (C order).
std::vector<std::string> axis_names(int dim) {
  std::vector<std::string> axes{"x", "y", "z"};
  axes.resize(static_cast<std::size_t>(dim));
  return axes;
}

// An order-independent checksum of the particles (a wrapping sum over the ranks): any change
// of a position, a velocity or an id changes it.
std::uint64_t checksum(const Checkpoint& c, const cn::Comm& comm) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < c.id.size(); ++i) {
    std::uint64_t h = static_cast<std::uint64_t>(c.id[i]) * 0x9E3779B97F4A7C15ull;
    h ^= std::bit_cast<std::uint64_t>(c.x[i]) + 0x632BE59BD9B4E019ull * (h >> 7);
    h ^= std::bit_cast<std::uint64_t>(c.vx[i]) * 0xD6E8FEB86659FD93ull;
    if (!c.y.empty()) h += std::bit_cast<std::uint64_t>(c.y[i]) * 0xA0761D6478BD642Full;
    if (!c.vy.empty()) h += std::bit_cast<std::uint64_t>(c.vy[i]) * 0xE7037ED1A0B428DBull;
    if (!c.z.empty()) h += std::bit_cast<std::uint64_t>(c.z[i]) * 0x8EBC6AF09C88C6E3ull;
    if (!c.vz.empty()) h += std::bit_cast<std::uint64_t>(c.vz[i]) * 0x589965CC75374CC3ull;
    const std::vector<std::int32_t>* cells[] = {&c.cx, &c.cy, &c.cz};
    for (int a = 0; a < 3; ++a)
      if (!cells[a]->empty())
        h += (static_cast<std::uint64_t>(static_cast<std::uint32_t>((*cells[a])[i])) + 1 + a) *
             0x9FB21C651E98DF25ull;
    sum += h;
  }
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

std::string write_checkpoint(const std::string& folder, const cn::Comm& comm, const Checkpoint& c) {
  const std::string dir = (std::filesystem::path(folder) / "checkpoints").string();
  cn::OpenPmdSeries series(dir, comm, {.name = "checkpoint", .overwrite = true});
  auto it = series.iteration(c.step, c.step * c.config.dt, c.config.dt);
  const long long n = static_cast<long long>(c.id.size());
  const std::size_t dim = static_cast<std::size_t>(c.config.dim);
  auto host = [&](const std::vector<double>& v) {
    return cn::from_host<double>(std::span<const double>(v), {static_cast<long long>(v.size())},
                                 cn::Backend::host);
  };
  // Single and mixed-precision particles are written as float32 records (their values
  // exactly), mixed precision's positions as float32 offsets and int32 cells (positionOffset).
  auto host32 = [&](const std::vector<double>& v) {
    const std::vector<float> f(v.begin(), v.end());
    return cn::from_host<float>(std::span<const float>(f), {static_cast<long long>(f.size())},
                                cn::Backend::host);
  };
  const bool single = c.config.precision != "double";
  const bool in_cells = c.config.precision == "mixed";
  const std::vector<std::int32_t>* cells[] = {&c.cx, &c.cy, &c.cz};
  std::vector<cn::Array<std::int32_t>> cell_arrays;
  for (std::size_t a = 0; in_cells && a < dim; ++a)
    cell_arrays.push_back(cn::from_host<std::int32_t>(std::span<const std::int32_t>(*cells[a]), {n},
                                                      cn::Backend::host));
  const std::vector<double>* positions[] = {&c.x, &c.y, &c.z};
  const std::vector<double>* velocities[] = {&c.vx, &c.vy, &c.vz};
  std::vector<cn::Array<double>> pos, vel;
  std::vector<cn::Array<float>> pos32, vel32;
  for (std::size_t a = 0; a < dim; ++a) {
    if (single) {
      pos32.push_back(host32(*positions[a]));
      vel32.push_back(host32(*velocities[a]));
    } else {
      pos.push_back(host(*positions[a]));
      vel.push_back(host(*velocities[a]));
    }
  }
  const cn::Array<std::int64_t> id =
      cn::from_host<std::int64_t>(std::span<const std::int64_t>(c.id), {n}, cn::Backend::host);
  cn::ParticleRecords p;
  p.axes = axis_names(c.config.dim);
  // Velocities as they are (the momentum record's unit is mass times velocity; the mass per
  // macro-particle is the mass record).
  for (std::size_t a = 0; a < dim; ++a) {
    if (single) {
      p.position.push_back(&pos32[a]);
      p.momentum.push_back(&vel32[a]);
    } else {
      p.position.push_back(&pos[a]);
      p.momentum.push_back(&vel[a]);
    }
  }
  const BoxLengths box = box_of(c.config);
  if (in_cells) {
    const double sizes[] = {box.lx / c.config.cells_x, box.ly / c.config.cells_y,
                            box.lz / c.config.cells_z};
    for (std::size_t a = 0; a < dim; ++a) {
      p.position_offset.push_back(&cell_arrays[a]);
      p.cell_size.push_back(sizes[a]);
    }
  }
  p.id = &id;
  p.count = n;
  p.weight = particle_weight(c.config);
  // One patch per rank, each the whole box (a checkpoint does not record the rank's region).
  p.patch_offset = std::vector<double>(p.axes.size(), 0.0);
  p.patch_extent = {box.lx, box.ly, box.lz};
  p.patch_extent.resize(dim);
  it.particles("electrons", p);
  const std::uint64_t sum = checksum(c, comm);
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

Checkpoint read_checkpoint(const std::string& path, const cn::Comm& comm) {
  const h5::File f = h5::File::open(path, comm);
  if (!f.exists("cunumpy"))
    throw cn::IoError("checkpoint " + path +
                      " is not a checkpoint of this program (no /cunumpy group)");
  const h5::Group g = f.open_group("cunumpy");
  if (g.read_string("format") != kFormat)
    throw cn::IoError(path + " is a checkpoint of another format (" + g.read_string("format") +
                      ", expected " + kFormat + ")");
  Checkpoint c;
  c.config = read_config(g.open_group("config"), path);
  c.step = static_cast<int>(g.read_int64("step"));
  c.total = g.read_int64("total_particles");
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
  const std::string species = "data/" + std::to_string(c.step) + "/particles/electrons/";
  auto column = [&]<typename T>(const std::string& record, std::vector<T>& out) {
    const h5::Object d = f.open_dataset(species + record);
    if (h5::dataset_shape(d) != std::vector<long long>{c.total})
      throw cn::IoError("checkpoint " + path + ": " + record + " holds " +
                        std::to_string(h5::dataset_shape(d).empty() ? 0 : h5::dataset_shape(d)[0]) +
                        " particles, the checkpoint says " + std::to_string(c.total) +
                        " (truncated or corrupted)");
    out.resize(static_cast<std::size_t>(n));
    h5::read_dataset(f, d, std::vector<long long>{first}, std::vector<long long>{n}, out.data());
  };
  std::vector<double>* positions[] = {&c.x, &c.y, &c.z};
  std::vector<double>* velocities[] = {&c.vx, &c.vy, &c.vz};
  const std::vector<std::string> axes = axis_names(c.config.dim);
  std::vector<std::int32_t>* cells[] = {&c.cx, &c.cy, &c.cz};
  for (std::size_t a = 0; a < axes.size(); ++a) {
    column("position/" + axes[a], *positions[a]);
    column("momentum/" + axes[a], *velocities[a]);
    if (c.config.precision == "mixed") column("positionOffset/" + axes[a], *cells[a]);
  }
  std::vector<std::uint64_t> ids;
  column("id", ids);
  c.id.assign(ids.begin(), ids.end());
  const h5::Group h = g.open_group("history");
  for (const History& k : kHistories) {
    const h5::Object d = h.open_dataset(k.name);
    const std::vector<long long> shape = h5::dataset_shape(d);
    std::vector<double>& v = c.history.*k.member;
    v.resize(static_cast<std::size_t>(shape.empty() ? 0 : shape[0]));
    h5::read_dataset<double>(f, d, std::vector<long long>{0}, shape, v.data());
  }
  c.history.steps_done = c.step;
  if (checksum(c, comm) != g.read_uint64("checksum"))
    throw cn::IoError("checkpoint " + path +
                      ": the particles do not match the checkpoint's checksum (corrupted); use an "
                      "earlier checkpoint");
  return c;
}

SnapshotWriter::SnapshotWriter(const std::string& folder, const cn::Comm& comm, bool overwrite)
    : series_(std::make_shared<cn::OpenPmdSeries>(
          (std::filesystem::path(folder) / "openpmd").string(), comm,
          cn::OpenPmdOptions{.name = "data", .overwrite = overwrite})) {}
SnapshotWriter::~SnapshotWriter() = default;

std::string SnapshotWriter::write(int step, double time, double dt, const MeshBlock& m,
                                  const ParticleBlock& p) {
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
  cn::ParticleRecords r;
  r.axes = axes;
  // Mass 1: momentum = velocity.  The records keep the particles' precision.
  for (const auto& a : p.position) r.position.push_back(&a);
  for (const auto& a : p.velocity) r.momentum.push_back(&a);
  for (const auto& a : p.position32) r.position.push_back(&a);
  for (const auto& a : p.velocity32) r.momentum.push_back(&a);
  for (const auto& a : p.cells) r.position_offset.push_back(&a);
  r.cell_size = p.cell_size;
  r.id = &p.id;
  r.count = p.count;
  r.weight = p.weight;
  r.patch_offset = p.patch_offset;
  r.patch_extent = p.patch_extent;
  it.particles("electrons", r);
  it.close();
  return it.path();
}

}  // namespace pic
