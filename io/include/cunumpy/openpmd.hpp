// cunumpy/openpmd.hpp: openPMD 1.1 output (file-based HDF5 series), written by all ranks into
// one file per iteration, readable by openPMD-api, openPMD-viewer, yt, VisIt and h5py.
//
//   cunumpy::OpenPmdSeries series("out/fields", world);         // refuses earlier output
//   auto it = series.iteration(step, time, dt);                  // out/fields/data_<step>.h5
//   it.mesh("rho", {}, layout, {&rho_block});                    // scalar mesh
//   it.mesh("E", {"x", "y"}, layout, {&ex_block, &ey_block});    // vector mesh
//   it.particles("electrons", particles);                        // this rank's particles
//   it.close();                                                  // complete: renamed into place
//
// Layout (openPMD's "fileBased" encoding): `<folder>/<name>_<step>.h5`, each holding
// /data/<step>/meshes/... and /data/<step>/particles/...  Every rank writes its block of each
// mesh (`MeshLayout`: the global shape, this rank's offset and count, C order) and its
// particles (offsets from a scan of the counts) into the one file, collectively with parallel
// HDF5.  Nothing is lost: an iteration is written to a hidden temporary file of the folder,
// flushed to the disk and renamed to its final name only when complete, so a process killed
// during a write leaves every earlier file as it was and no partial file under a final name.
// A folder that holds a series of the same name is refused unless `overwrite`.  Units are the
// simulation's (unitSI 1, unitDimension as given: the mini-app is normalised).
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <cunumpy/array.hpp>
#include <cunumpy/comm.hpp>
#include <cunumpy/hdf5.hpp>

namespace cunumpy {

// A series' file names, whether it may replace an earlier one, and its metadata.
struct OpenPmdOptions {
  std::string name = "data";  // file names: <name>_<step>.h5
  bool overwrite = false;     // replace files of an earlier series of that name
  std::string software = "cunumpy";
  std::string author;  // openPMD's recommended author attribute (empty: $USER)
};

// openPMD's unitDimension: powers of (length, mass, time, current, temperature, amount,
// luminous intensity).
using UnitDimension = std::array<double, 7>;

// A mesh's global shape, this rank's block of it, and its geometry.
struct MeshLayout {
  std::vector<long long> global;  // the whole mesh, C order (slowest axis first)
  std::vector<long long> offset;  // this rank's block
  std::vector<long long> count;
  std::vector<double> spacing;           // gridSpacing
  std::vector<double> grid_offset;       // gridGlobalOffset
  std::vector<std::string> axis_labels;  // e.g. {"x", "y"} (C order)
  std::vector<double> position;          // where in the cell the values sit (0: the nodes)
};

// A per-particle record component in double or float, written in its own precision (the
// dataset's type is the array's: single-precision particles give float32 records).
class RealColumn {
 public:
  RealColumn(const Array<double>* a) : double_(a) {}  // NOLINT: implicit, like a pointer
  RealColumn(const Array<float>* a) : float_(a) {}    // NOLINT
  const Array<double>* as_double() const noexcept { return double_; }
  const Array<float>* as_float() const noexcept { return float_; }
  bool empty() const noexcept { return double_ == nullptr && float_ == nullptr; }
  int ndim() const { return double_ ? double_->ndim() : float_ ? float_->ndim() : 0; }
  long long size() const { return double_ ? double_->size() : float_ ? float_->size() : 0; }

 private:
  const Array<double>* double_ = nullptr;
  const Array<float>* float_ = nullptr;
};

// A per-particle scalar record of the application's (ParticleRecords::records): one array of any
// of these element types, written in its own type.
using RecordColumn = std::variant<const Array<double>*, const Array<float>*,
                                  const Array<std::int32_t>*, const Array<std::int64_t>*>;

// One species' particles on this rank: positions and momenta per axis, weights, ids, and the
// constant charge and mass of a macro-particle.  Positions take one of openPMD's two
// position/positionOffset splits.  Whole coordinates (position_offset empty): position holds
// each coordinate and positionOffset is a constant 0.  A cell index and an offset within the
// cell (mixed-precision particles, exact far from the origin): position_offset holds one int32
// column of cell indices per axis and cell_size the cell's length per axis; positionOffset is
// written as those integers and position as the offsets in cell units, both with unitSI = the
// cell size, so a reader's position + positionOffset is (offset + cell) * cell_size.  Cell 0
// starts at the coordinate origin (for a box whose lower corner is not 0, add lower / cell_size
// to the indices).  Every rank gives the same kind of positions and the same cell_size (agreed:
// ValueError otherwise); patch_offset and patch_extent stay whole coordinates.
struct ParticleRecords {
  std::vector<std::string> axes;                            // {"x"} or {"x", "y"}
  std::vector<RealColumn> position;                         // one per axis (double or float)
  std::vector<const Array<std::int32_t>*> position_offset;  // empty, or one per axis
  std::vector<double> cell_size;                            // with position_offset: per axis
  std::vector<RealColumn> momentum;                         // one per axis
  const Array<double>* weighting = nullptr;  // per particle (nullptr: `weight` for all)
  std::string weighting_name;  // with `weighting`: its name in the application (an attribute)
  const Array<std::int64_t>* id = nullptr;         // per particle
  long long count = 0;                             // rows [0, count) of the arrays
  double weight = 1.0, charge = -1.0, mass = 1.0;  // per macro-particle
  // openPMD's particlePatches, one patch per rank: the region this rank's particles lie in
  // (per axis; the whole box when particles are not sorted by rank).  Empty: no patches.
  std::vector<double> patch_offset, patch_extent;
  // More per-particle records (a species' own quantities: a tag, a second weight, ...), each a
  // scalar record of that name (dimensionless, unitSI 1) beside openPMD's; a name taken by
  // openPMD's records (position, momentum, id, ...) is a ValueError.
  std::vector<std::pair<std::string, RecordColumn>> records;
};

namespace detail {
class OpenPmdFile;
}

// One iteration's file of a series, written by every rank, renamed into place by close().
class OpenPmdIteration {
 public:
  ~OpenPmdIteration();
  OpenPmdIteration(OpenPmdIteration&&) noexcept;
  OpenPmdIteration& operator=(OpenPmdIteration&&) noexcept;

  // A mesh record: one dataset per component (a scalar record when `components` is empty);
  // `data[c]` holds this rank's block of component c (layout.count's elements, C order; host
  // arrays, or device arrays copied to the host, counted).  Collective.
  void mesh(const std::string& record, const std::vector<std::string>& components,
            const MeshLayout& layout, const std::vector<const Array<double>*>& data,
            UnitDimension unit = {});
  void particles(const std::string& species, const ParticleRecords& records);
  // Application data beside the openPMD tree (a checkpoint's configuration and histories):
  // `write` gets the file and the group "/<name>" (created).  Collective.
  void extension(const std::string& name,
                 const std::function<void(const h5::File&, const h5::Group&)>& write);
  // Flushes, closes and renames the file into place.  Collective.  An iteration dropped
  // without close() (an exception on the way) leaves only its temporary file, removed.
  void close();
  const std::string& path() const noexcept;

 private:
  friend class OpenPmdSeries;
  explicit OpenPmdIteration(std::unique_ptr<detail::OpenPmdFile> file);
  std::unique_ptr<detail::OpenPmdFile> file_;
};

// An openPMD series of files in a folder (see the top of this header).
class OpenPmdSeries {
 public:
  // Creates `folder` when missing and checks that it takes files, before any output (rank 0
  // checks, every rank gets the same answer).  IoError naming the folder otherwise.
  OpenPmdSeries(std::string folder, const Comm& comm, OpenPmdOptions options = {});
  OpenPmdIteration iteration(long long step, double time, double dt);
  const std::string& folder() const noexcept { return folder_; }
  // "<folder>/<name>_<step>.h5"
  std::string file_of(long long step) const;

 private:
  std::string folder_;
  Comm comm_;
  OpenPmdOptions options_;
};

// One species of one iteration file read back (a file written by OpenPmdIteration, or any
// openPMD 1.x HDF5 file of one iteration): its records' shapes and types, and any block of rows
// of a record, converted to the element type asked for.  Opened by every rank of `comm`
// (collective); the reads are collective too.
//
//   cunumpy::OpenPmdParticleReader r("out/data_100.h5", "electrons", world);
//   r.count();                              // the particles in the file
//   r.read<float>("position/x", first, n, out);
//   r.records();                            // {"id", "momentum/x", "position/x", "weight", ...}
class OpenPmdParticleReader {
 public:
  // IoError naming the file when it cannot be opened or is not openPMD, or naming the species
  // and the species the file has when it has no such species.
  OpenPmdParticleReader(const std::string& path, const std::string& species, const Comm& comm);
  const std::string& path() const noexcept { return path_; }
  long long step() const noexcept { return step_; }
  // The particles of the species (every rank's).
  long long count() const noexcept { return count_; }
  // The position record's axes ("x", "y", "z", as written).
  const std::vector<std::string>& axes() const noexcept { return axes_; }
  // Whether positions are cell indices (positionOffset as integers) and offsets in cells.
  bool in_cells() const noexcept { return in_cells_; }
  // positionOffset's unitSI per axis with in_cells(): the cell's length.
  const std::vector<double>& cell_size() const noexcept { return cell_size_; }
  // The per-particle records held as data, "record" or "record/component" (constant ones
  // excluded), in name order.
  const std::vector<std::string>& records() const noexcept { return records_; }
  bool has(const std::string& record) const;
  // A record's element type as stored (IoError naming the record when it is not held as data).
  DType dtype(const std::string& record) const;
  // A constant record's value (charge, mass, a constant weighting): std::nullopt when the record
  // is held as data or missing.
  std::optional<double> constant(const std::string& record) const;
  // A string attribute of a record ("" when missing).
  std::string attribute(const std::string& record, const std::string& name) const;
  // Rows [first, first + n) of a record into `out`, converted to T (HDF5's conversion).
  // Collective.  IoError naming the record when it is missing or shorter than first + n.
  template <typename T>
  void read(const std::string& record, long long first, long long n, T* out) const {
    read_raw(record, first, n, h5::native_type<T>(), out);
  }
  // The file, for an application's groups beside the openPMD tree (OpenPmdIteration::extension).
  const h5::File& file() const noexcept { return file_; }

 private:
  void read_raw(const std::string& record, long long first, long long n, hid_t type,
                void* out) const;
  std::string path_;
  h5::File file_;
  long long step_ = 0, count_ = 0;  // (before species_: its initialiser sets step_)
  h5::Group species_;
  bool in_cells_ = false;
  std::vector<std::string> axes_, records_;
  std::vector<double> cell_size_;
};

}  // namespace cunumpy
