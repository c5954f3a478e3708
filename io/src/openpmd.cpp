// openPMD output (openpmd.hpp).
#include <cunumpy/openpmd.hpp>

#include <cunumpy/agree.hpp>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fcntl.h>
#include <unistd.h>

#include <cunumpy/backend.hpp>
#include <cunumpy/hdf5.hpp>
#include <cunumpy/transfer.hpp>

namespace cunumpy {

namespace fs = std::filesystem;

namespace {

// Rank 0's text to every rank (empty: no error).
std::string shared_text(const Comm& comm, std::string text) {
  long long n = comm.bcast(static_cast<long long>(text.size()), 0);
  text.resize(static_cast<std::size_t>(n));
  std::vector<char> buffer(text.begin(), text.end());
  comm.bcast(std::span<char>(buffer), 0);
  return std::string(buffer.begin(), buffer.end());
}

void fsync_path(const fs::path& p, bool directory) {
  const int fd = ::open(p.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

std::string now_openpmd() {  // "YYYY-MM-DD HH:MM:SS +ZZZZ"
  const std::time_t t = std::time(nullptr);
  std::tm local{};
  localtime_r(&t, &local);
  char text[64];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S %z", &local);
  return text;
}

const UnitDimension kLength{1, 0, 0, 0, 0, 0, 0};
const UnitDimension kMomentum{1, 1, -1, 0, 0, 0, 0};
const UnitDimension kCharge{0, 0, 1, 1, 0, 0, 0};
const UnitDimension kMass{0, 1, 0, 0, 0, 0, 0};
const UnitDimension kNone{0, 0, 0, 0, 0, 0, 0};

void record_attributes(const h5::Object& o, const UnitDimension& unit) {
  o.attribute("unitDimension", std::span<const double>(unit.data(), unit.size()));
  o.attribute("timeOffset", 0.0f);
}

// A constant record component: its value and shape as attributes, no dataset.
void constant_component(const h5::Group& g, double value, long long n) {
  g.attribute("value", value);
  const std::uint64_t shape[1] = {static_cast<std::uint64_t>(n)};
  g.attribute("shape", std::span<const std::uint64_t>(shape, 1));
  g.attribute("unitSI", 1.0);
}

// The records openPMD names (or a name that is not one plain HDF5 link).
bool reserved_record(const std::string& name) {
  static const char* const kTaken[] = {"position",  "momentum",       "positionOffset",
                                       "weighting", "charge",         "mass",
                                       "id",        "particlePatches"};
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..")
    return true;
  for (const char* t : kTaken)
    if (name == t) return true;
  return false;
}

}  // namespace

namespace detail {

class OpenPmdFile {
 public:
  OpenPmdFile(const std::string& final_path, const std::string& tmp_path, const Comm& comm,
              const OpenPmdOptions& options, long long step, double time, double dt,
              const std::string& date)
      : final_(final_path),
        tmp_(tmp_path),
        comm_(comm),
        file_(h5::File::create(tmp_path, comm)),
        iteration_(file_.group("data/" + std::to_string(step))) {
    file_.attribute("openPMD", "1.1.0");
    file_.attribute("openPMDextension", std::uint32_t{0});
    file_.attribute("basePath", "/data/%T/");
    file_.attribute("iterationEncoding", "fileBased");
    file_.attribute("iterationFormat", options.name + "_%T.h5");
    file_.attribute("software", options.software);
    file_.attribute("softwareVersion", std::string(version()));
    file_.attribute("date", date);
    const char* user = std::getenv("USER");
    file_.attribute("author", !options.author.empty() ? options.author
                              : user != nullptr       ? std::string(user)
                                                      : std::string("unknown"));
    iteration_.attribute("time", time);
    iteration_.attribute("dt", dt);
    iteration_.attribute("timeUnitSI", 1.0);
  }

  ~OpenPmdFile() {
    if (closed_) return;
    // Dropped without close(): a write failed (or the caller gave up).  The file is abandoned
    // rather than closed (closing flushes again, and HDF5 1.10 can crash doing so after a
    // failed write); its temporary name goes, so no partial file stays behind.
    iteration_.release();
    file_.abandon();
    if (comm_.rank() == 0) ::unlink(tmp_.c_str());
  }

  void mesh(const std::string& record, const std::vector<std::string>& components,
            const MeshLayout& l, const std::vector<const Array<double>*>& data,
            const UnitDimension& unit) {
    const std::size_t nd = l.global.size();
    // Checked on every rank and agreed before the collective writes (a rank's block of the
    // wrong size is an error on every rank).
    all_ranks<ValueError>(comm_, [&] {
      if (nd < 1 || nd > 3 || l.offset.size() != nd || l.count.size() != nd ||
          l.spacing.size() != nd || l.grid_offset.size() != nd || l.axis_labels.size() != nd)
        throw ValueError("openPMD mesh " + record +
                         ": global, offset, count, spacing, grid_offset and axis_labels need one "
                         "entry per axis (1 to 3)");
      const std::size_t n_components = components.empty() ? 1 : components.size();
      if (data.size() != n_components)
        throw ValueError("openPMD mesh " + record + ": " + std::to_string(n_components) +
                         " component array(s) expected, got " + std::to_string(data.size()));
      long long elements = 1;
      for (long long c : l.count) elements *= c;
      for (const Array<double>* a : data)
        if (a == nullptr || a->size() != elements)
          throw ValueError("openPMD mesh " + record + ": each component's block must hold " +
                           std::to_string(elements) + " values (the layout's count), got " +
                           (a == nullptr ? std::string("none") : std::to_string(a->size())));
    });
    const h5::Group meshes = iteration_.group("meshes");
    has_meshes_ = true;
    const std::vector<double> position =
        l.position.empty() ? std::vector<double>(nd, 0.0) : l.position;
    auto mesh_attributes = [&](const h5::Object& o) {
      o.attribute("geometry", "cartesian");
      o.attribute("dataOrder", "C");
      o.attribute("axisLabels", l.axis_labels);
      o.attribute("gridSpacing", std::span<const double>(l.spacing));
      o.attribute("gridGlobalOffset", std::span<const double>(l.grid_offset));
      o.attribute("gridUnitSI", 1.0);
      record_attributes(o, unit);
    };
    auto component = [&](const h5::Group& parent, const std::string& name, const Array<double>& a) {
      const Array<double> host = to_host(a);
      h5::Object d =
          h5::write_dataset<double>(file_, parent, name, l.global, l.offset, l.count, host.data());
      d.attribute("position", std::span<const double>(position));
      d.attribute("unitSI", 1.0);
      return d;
    };
    if (components.empty()) {
      mesh_attributes(component(meshes, record, *data[0]));
      return;
    }
    const h5::Group g = meshes.group(record);
    mesh_attributes(g);
    for (std::size_t c = 0; c < components.size(); ++c) component(g, components[c], *data[c]);
  }

  void particles(const std::string& species, const ParticleRecords& p) {
    const std::size_t nd = p.axes.size();
    const long long n = p.count;
    // Every array checked on every rank and agreed before the first collective call.
    all_ranks<ValueError>(comm_, [&] {
      if (nd < 1 || nd > 3 || p.position.size() != nd || p.momentum.size() != nd)
        throw ValueError("openPMD particles " + species +
                         ": one position and one momentum array per axis (1 to 3 axes)");
      auto check = [&](const auto* a, const char* what) {
        if (a == nullptr || a->ndim() != 1 || a->size() < n)
          throw ValueError("openPMD particles " + species + ": " + what +
                           " must be a 1D array of at least " + std::to_string(n) + " rows");
      };
      auto check_column = [&](const RealColumn& c, const char* what) {
        if (c.empty() || c.ndim() != 1 || c.size() < n)
          throw ValueError("openPMD particles " + species + ": " + what +
                           " must be a 1D array of at least " + std::to_string(n) + " rows");
      };
      for (std::size_t a = 0; a < nd; ++a) {
        check_column(p.position[a], "position");
        check_column(p.momentum[a], "momentum");
      }
      if (!p.position_offset.empty()) {
        if (p.position_offset.size() != nd || p.cell_size.size() != nd)
          throw ValueError("openPMD particles " + species +
                           ": position_offset and cell_size need one entry per axis (" +
                           std::to_string(nd) + "), got " +
                           std::to_string(p.position_offset.size()) + " and " +
                           std::to_string(p.cell_size.size()));
        for (std::size_t a = 0; a < nd; ++a) {
          check(p.position_offset[a], "position_offset");
          if (!(p.cell_size[a] > 0.0) || !std::isfinite(p.cell_size[a]))
            throw ValueError("openPMD particles " + species + ": cell_size along " + p.axes[a] +
                             " must be positive and finite, got " + std::to_string(p.cell_size[a]));
        }
      } else if (!p.cell_size.empty()) {
        throw ValueError("openPMD particles " + species +
                         ": cell_size is given without position_offset; give both (cell "
                         "indices and offsets) or neither (whole coordinates)");
      }
      if (p.weighting != nullptr) check(p.weighting, "weighting");
      for (const auto& [name, column] : p.records) {
        if (reserved_record(name))
          throw ValueError("openPMD particles " + species + ": the record name '" + name +
                           "' is taken by openPMD's records or is not a plain name; give "
                           "another one (no '/')");
        std::visit([&](const auto* a) { check(a, name.c_str()); }, column);
      }
      if (p.id != nullptr) check(p.id, "id");
      if (!p.patch_offset.empty() && (p.patch_offset.size() != nd || p.patch_extent.size() != nd))
        throw ValueError(
            "openPMD particles: patch_offset and patch_extent need one value per axis");
    });
    const bool in_cells = !p.position_offset.empty();
    // Every rank writes the same records: the same choice of whole coordinates or cells, the
    // same cell sizes (the unitSI attributes), agreed before the first collective write (one
    // allreduce: the minimum of each value and of its negation).
    {
      std::vector<double> v(2 * (1 + nd), 0.0);
      v[0] = in_cells ? 1.0 : 0.0;
      for (std::size_t a = 0; a < nd && in_cells; ++a) v[1 + a] = p.cell_size[a];
      for (std::size_t k = 0; k <= nd; ++k) v[1 + nd + k] = -v[k];
      comm_.allreduce(std::span<double>(v), Op::min);
      for (std::size_t k = 0; k <= nd; ++k)
        if (v[k] != -v[1 + nd + k])
          throw ValueError("openPMD particles " + species +
                           ": the ranks disagree on positions as cells (position_offset given on "
                           "some ranks only, or other cell sizes); every rank must give the same "
                           "kind of positions and the same cell_size, also a rank with no "
                           "particles");
    }
    const long long total = comm_.allreduce(n, Op::sum);
    const long long first = comm_.scan(n, Op::sum) - n;
    const std::vector<long long> global{total}, offset{first}, count{n};
    const h5::Group s = iteration_.group("particles").group(species);
    has_particles_ = true;
    auto rows = [&](const auto* a, const char* what) {
      if (a == nullptr || a->ndim() != 1 || a->size() < n)
        throw ValueError("openPMD particles " + species + ": " + what +
                         " must be a 1D array of at least " + std::to_string(n) + " rows");
      return to_host(*a);
    };
    // unitSI of axis a's position and positionOffset: the cell's length for cell indices and
    // offsets in cells, else 1 (the values are the coordinates).
    auto length_unit = [&](std::size_t a) { return in_cells ? p.cell_size[a] : 1.0; };
    auto vector_record = [&](const char* name, const std::vector<RealColumn>& arrays,
                             const UnitDimension& unit, bool lengths) {
      const h5::Group r = s.group(name);
      record_attributes(r, unit);
      for (std::size_t a = 0; a < nd; ++a) {
        const double unit_si = lengths ? length_unit(a) : 1.0;
        if (arrays[a].as_float() != nullptr) {
          const Array<float> h = rows(arrays[a].as_float(), name);
          h5::write_dataset<float>(file_, r, p.axes[a], global, offset, count, h.data())
              .attribute("unitSI", unit_si);
        } else {
          const Array<double> h = rows(arrays[a].as_double(), name);
          h5::write_dataset<double>(file_, r, p.axes[a], global, offset, count, h.data())
              .attribute("unitSI", unit_si);
        }
      }
    };
    vector_record("position", p.position, kLength, true);
    vector_record("momentum", p.momentum, kMomentum, false);
    {
      const h5::Group r = s.group("positionOffset");
      record_attributes(r, kLength);
      for (std::size_t a = 0; a < nd; ++a) {
        if (!in_cells) {
          constant_component(r.group(p.axes[a]), 0.0, total);
          continue;
        }
        const Array<std::int32_t> h = rows(p.position_offset[a], "position_offset");
        h5::write_dataset<std::int32_t>(file_, r, p.axes[a], global, offset, count, h.data())
            .attribute("unitSI", length_unit(a));
      }
    }
    if (p.weighting != nullptr) {
      const Array<double> h = rows(p.weighting, "weighting");
      h5::Object d =
          h5::write_dataset<double>(file_, s, "weighting", global, offset, count, h.data());
      record_attributes(d, kNone);
      d.attribute("unitSI", 1.0);
      if (!p.weighting_name.empty()) d.attribute("cunumpyColumn", p.weighting_name);
    } else {
      const h5::Group r = s.group("weighting");
      record_attributes(r, kNone);
      constant_component(r, p.weight, total);
    }
    for (auto [name, value, unit] :
         {std::tuple{"charge", p.charge, kCharge}, std::tuple{"mass", p.mass, kMass}}) {
      const h5::Group r = s.group(name);
      record_attributes(r, unit);
      constant_component(r, value, total);
    }
    for (const auto& [name, column] : p.records) {
      std::visit(
          [&]<typename T>(const Array<T>* a) {
            const Array<T> h = rows(a, name.c_str());
            h5::Object d = h5::write_dataset<T>(file_, s, name, global, offset, count, h.data());
            record_attributes(d, kNone);
            d.attribute("unitSI", 1.0);
          },
          column);
    }
    if (!p.patch_offset.empty()) patches(s, p, n, first);
    if (p.id != nullptr) {
      const Array<std::int64_t> h = rows(p.id, "id");
      std::vector<std::uint64_t> ids(static_cast<std::size_t>(n));
      for (long long i = 0; i < n; ++i) ids[i] = static_cast<std::uint64_t>(h.data()[i]);
      h5::Object d =
          h5::write_dataset<std::uint64_t>(file_, s, "id", global, offset, count, ids.data());
      record_attributes(d, kNone);
      d.attribute("unitSI", 1.0);
    }
  }

  // particlePatches: one patch per rank (row = rank), its count, offset and region.
  void patches(const h5::Group& species, const ParticleRecords& p, long long n, long long first) {
    const std::size_t nd = p.axes.size();
    const long long P = comm_.size(), r = comm_.rank();
    const std::vector<long long> global{P}, offset{r}, count{1};
    const h5::Group g = species.group("particlePatches");
    const std::uint64_t mine[2] = {static_cast<std::uint64_t>(n),
                                   static_cast<std::uint64_t>(first)};
    h5::write_dataset<std::uint64_t>(file_, g, "numParticles", global, offset, count, &mine[0])
        .attribute("unitSI", 1.0);
    h5::write_dataset<std::uint64_t>(file_, g, "numParticlesOffset", global, offset, count,
                                     &mine[1])
        .attribute("unitSI", 1.0);
    for (const char* name : {"offset", "extent"}) {
      const h5::Group rec = g.group(name);
      record_attributes(rec, kLength);
      const std::vector<double>& v =
          std::string(name) == "offset" ? p.patch_offset : p.patch_extent;
      for (std::size_t a = 0; a < nd; ++a)
        h5::write_dataset<double>(file_, rec, p.axes[a], global, offset, count, &v[a])
            .attribute("unitSI", 1.0);
    }
  }

  void extension(const std::string& name,
                 const std::function<void(const h5::File&, const h5::Group&)>& write) {
    // The application's own writes: a failure of them on one rank fails every rank.
    all_ranks<IoError>(comm_, [&] { write(file_, file_.group(name)); });
  }

  void close() {
    if (closed_) return;
    all_ranks<IoError>(comm_, [&] {
      // openPMD: meshesPath and particlesPath only when the file has meshes or particles.
      if (has_meshes_) file_.attribute("meshesPath", "meshes/");
      if (has_particles_) file_.attribute("particlesPath", "particles/");
      iteration_.release();
      file_.flush();
      file_.close();
    });
    closed_ = true;
    comm_.barrier();
    std::string error;
    if (comm_.rank() == 0) {
      fsync_path(tmp_, false);
      if (::rename(tmp_.c_str(), final_.c_str()) != 0)
        error = "openPMD: cannot put " + final_ + " in place: " + std::strerror(errno);
      else
        fsync_path(fs::path(final_).parent_path(), true);
    }
    error = shared_text(comm_, error);
    if (!error.empty()) throw IoError(error);
  }

  const std::string& path() const noexcept { return final_; }

 private:
  std::string final_, tmp_;
  Comm comm_;
  h5::File file_;
  h5::Group iteration_;
  bool closed_ = false, has_meshes_ = false, has_particles_ = false;
};

}  // namespace detail

OpenPmdIteration::OpenPmdIteration(std::unique_ptr<detail::OpenPmdFile> file)
    : file_(std::move(file)) {}
OpenPmdIteration::~OpenPmdIteration() = default;
OpenPmdIteration::OpenPmdIteration(OpenPmdIteration&&) noexcept = default;
OpenPmdIteration& OpenPmdIteration::operator=(OpenPmdIteration&&) noexcept = default;

void OpenPmdIteration::mesh(const std::string& record, const std::vector<std::string>& components,
                            const MeshLayout& layout, const std::vector<const Array<double>*>& data,
                            UnitDimension unit) {
  file_->mesh(record, components, layout, data, unit);
}
void OpenPmdIteration::particles(const std::string& species, const ParticleRecords& records) {
  file_->particles(species, records);
}
void OpenPmdIteration::extension(
    const std::string& name, const std::function<void(const h5::File&, const h5::Group&)>& write) {
  file_->extension(name, write);
}
void OpenPmdIteration::close() {
  file_->close();
}
const std::string& OpenPmdIteration::path() const noexcept {
  return file_->path();
}

OpenPmdSeries::OpenPmdSeries(std::string folder, const Comm& comm, OpenPmdOptions options)
    : folder_(std::move(folder)), comm_(comm), options_(std::move(options)) {
  std::string error;
  if (comm.rank() == 0) {
    std::error_code ec;
    const fs::path dir(folder_);
    if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) {
      error = "openPMD: " + folder_ + " is a file, not a folder; give a folder to write into";
    } else {
      fs::create_directories(dir, ec);
      if (ec) {
        error = "openPMD: cannot create the output folder " + folder_ + ": " + ec.message();
      } else {
        const fs::path probe = dir / (".openpmd-probe." + std::to_string(getpid()));
        const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0) {
          error = "openPMD: cannot write into " + folder_ + ": " + std::strerror(errno) +
                  "; check its permissions or choose another folder";
        } else {
          ::close(fd);
          ::unlink(probe.c_str());
        }
      }
      if (error.empty() && !options_.overwrite)
        for (const auto& entry : fs::directory_iterator(dir, ec)) {
          const std::string name = entry.path().filename().string();
          if (name.rfind(options_.name + "_", 0) == 0 && entry.path().extension() == ".h5") {
            error = "openPMD: " + folder_ + " holds the series '" + options_.name + "' of an " +
                    "earlier run (" + name + "); choose another folder or name, or overwrite";
            break;
          }
        }
    }
  }
  error = shared_text(comm, error);
  if (!error.empty()) throw IoError(error);
}

std::string OpenPmdSeries::file_of(long long step) const {
  return (fs::path(folder_) / (options_.name + "_" + std::to_string(step) + ".h5")).string();
}

OpenPmdIteration OpenPmdSeries::iteration(long long step, double time, double dt) {
  const std::string final_path = file_of(step);
  const std::string tmp =
      (fs::path(folder_) / ("." + options_.name + "_" + std::to_string(step) + ".h5.tmp")).string();
  const std::string date = shared_text(comm_, comm_.rank() == 0 ? now_openpmd() : std::string());
  return OpenPmdIteration(std::make_unique<detail::OpenPmdFile>(final_path, tmp, comm_, options_,
                                                                step, time, dt, date));
}

namespace {

h5::Group species_group(const h5::File& f, const std::string& path, const std::string& species,
                        long long& step) {
  if (!f.has_attribute("openPMD"))
    throw IoError("openPMD: " + path + " is not an openPMD file (no openPMD attribute at /)");
  const h5::Group data = f.open_group("data");
  const std::vector<std::string> steps = data.children();
  if (steps.size() != 1)
    throw IoError("openPMD: " + path + " holds " + std::to_string(steps.size()) +
                  " iterations; the reader takes a file of one iteration (a file-based series)");
  char* end = nullptr;
  step = std::strtoll(steps[0].c_str(), &end, 10);
  if (steps[0].empty() || *end != '\0')
    throw IoError("openPMD: " + path + ": the iteration /data/" + steps[0] + " is not a number");
  const h5::Group it = data.open_group(steps[0]);
  const std::vector<std::string> all =
      it.exists("particles") ? it.open_group("particles").children() : std::vector<std::string>{};
  if (std::find(all.begin(), all.end(), species) == all.end()) {
    std::string names;
    for (const std::string& a : all) names += (names.empty() ? "" : ", ") + a;
    throw IoError("openPMD: " + path + " has no particle species '" + species + "' (it has " +
                  (names.empty() ? std::string("none") : names) + ")");
  }
  return it.open_group("particles").open_group(species);
}

}  // namespace

OpenPmdParticleReader::OpenPmdParticleReader(const std::string& path, const std::string& species,
                                             const Comm& comm)
    : path_(path),
      file_(h5::File::open(path, comm)),
      species_(species_group(file_, path, species, step_)) {
  for (const std::string& name : species_.children()) {
    if (name == "particlePatches") continue;
    if (species_.is_dataset(name)) {
      records_.push_back(name);
      continue;
    }
    const h5::Group r = species_.open_group(name);
    if (r.has_attribute("value")) continue;  // a constant scalar record
    for (const std::string& c : r.children())
      if (r.is_dataset(c)) records_.push_back(name + "/" + c);
  }
  if (!species_.exists("position"))
    throw IoError("openPMD: " + path + ": species " + species + " has no position record");
  axes_ = species_.open_group("position").children();
  if (axes_.empty() || axes_.size() > 3)
    throw IoError("openPMD: " + path + ": species " + species + "'s position has " +
                  std::to_string(axes_.size()) + " components (1 to 3 expected)");
  in_cells_ = has("positionOffset/" + axes_[0]);
  for (const std::string& a : axes_) {
    const std::string offset = "positionOffset/" + a;
    if (in_cells_ != has(offset))
      throw IoError("openPMD: " + path + ": species " + species +
                    "'s positionOffset is data along some axes only");
    if (in_cells_) {
      const DType t = dtype(offset);
      if (t != DType::int32 && t != DType::int64 && t != DType::uint32 && t != DType::uint64)
        throw IoError("openPMD: " + path + ": " + species + "'s " + offset +
                      " holds non-integer values; the reader takes cell indices there");
      cell_size_.push_back(species_.open_dataset(offset).read_double("unitSI"));
    }
  }
  const std::string first = "position/" + axes_[0];
  if (!has(first))
    throw IoError("openPMD: " + path + ": species " + species + "'s " + first +
                  " is constant; the reader takes positions held as data");
  const std::vector<long long> shape = h5::dataset_shape(species_.open_dataset(first));
  if (shape.size() != 1)
    throw IoError("openPMD: " + path + ": " + species + "'s " + first + " is not 1D");
  count_ = shape[0];
}

bool OpenPmdParticleReader::has(const std::string& record) const {
  return std::find(records_.begin(), records_.end(), record) != records_.end();
}

DType OpenPmdParticleReader::dtype(const std::string& record) const {
  if (!has(record))
    throw IoError("openPMD: " + path_ + ": no per-particle record " + record + " held as data");
  return h5::dataset_dtype(species_.open_dataset(record));
}

std::optional<double> OpenPmdParticleReader::constant(const std::string& record) const {
  if (has(record) || !species_.exists(record) || species_.is_dataset(record)) return std::nullopt;
  const h5::Group r = species_.open_group(record);
  if (!r.has_attribute("value")) return std::nullopt;
  return r.read_double("value");
}

std::string OpenPmdParticleReader::attribute(const std::string& record,
                                             const std::string& name) const {
  if (!species_.exists(record)) return {};
  if (species_.is_dataset(record)) {
    const h5::Object d = species_.open_dataset(record);
    return d.has_attribute(name) ? d.read_string(name) : std::string();
  }
  const h5::Group g = species_.open_group(record);
  return g.has_attribute(name) ? g.read_string(name) : std::string();
}

void OpenPmdParticleReader::read_raw(const std::string& record, long long first, long long n,
                                     hid_t type, void* out) const {
  if (!has(record))
    throw IoError("openPMD: " + path_ + ": no per-particle record " + record + " held as data");
  const h5::Object d = species_.open_dataset(record);
  h5::read_dataset(file_, d, type, std::vector<long long>{first}, std::vector<long long>{n}, out);
}

}  // namespace cunumpy
