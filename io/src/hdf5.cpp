// HDF5 handles and errors (hdf5.hpp).
#include <cunumpy/hdf5.hpp>

#include <cunumpy/agree.hpp>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <system_error>

#include <unistd.h>

namespace cunumpy::h5 {

namespace {

// HDF5 prints its error stack to stderr by default; the library reports it in the exception.
// HDF5's own clean-up at exit is switched off: every file this library closes is closed by its
// owner, and closing again a file abandoned after a failed write (a full disk) can crash
// HDF5 1.10 at exit, after the error was reported.
void quiet_hdf5() {
  static std::once_flag once;
  std::call_once(once, [] {
    H5dont_atexit();
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  });
}

herr_t collect(unsigned n, const H5E_error2_t* e, void* out) {
  auto* text = static_cast<std::string*>(out);
  if (n < 4 && e->desc != nullptr) *text += std::string(text->empty() ? "" : "; ") + e->desc;
  return 0;
}

std::string stack() {
  std::string text;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, collect, &text);
  H5Eclear2(H5E_DEFAULT);
  return text.empty() ? "no HDF5 message" : text;
}

[[noreturn]] void fail(const char* what, const std::string& file, const std::string& object) {
  throw IoError(std::string("HDF5: ") + what + " failed for " + object + " in " + file + ": " +
                stack());
}

}  // namespace

void check(herr_t status, const char* what, const std::string& file, const std::string& object) {
  if (status < 0) fail(what, file, object);
}

hid_t check_id(hid_t id, const char* what, const std::string& file, const std::string& object) {
  if (id < 0) fail(what, file, object);
  return id;
}

template <>
hid_t native_type<double>() {
  return H5T_NATIVE_DOUBLE;
}
template <>
hid_t native_type<float>() {
  return H5T_NATIVE_FLOAT;
}
template <>
hid_t native_type<std::int64_t>() {
  return H5T_NATIVE_INT64;
}
template <>
hid_t native_type<std::uint64_t>() {
  return H5T_NATIVE_UINT64;
}
template <>
hid_t native_type<std::int32_t>() {
  return H5T_NATIVE_INT32;
}

bool parallel_hdf5() noexcept {
#if defined(H5_HAVE_PARALLEL)
  return true;
#else
  return false;
#endif
}

void Object::attribute_raw(const std::string& name, const void* data, std::size_t n, hid_t type,
                           bool scalar) const {
  quiet_hdf5();
  const hsize_t dims[1] = {n};
  Handle space(check_id(scalar ? H5Screate(H5S_SCALAR) : H5Screate_simple(1, dims, nullptr),
                        "H5Screate", file_, path_ + " attribute " + name),
               H5Sclose);
  if (H5Aexists(id(), name.c_str()) > 0) H5Adelete(id(), name.c_str());
  Handle a(check_id(H5Acreate2(id(), name.c_str(), type, space.id(), H5P_DEFAULT, H5P_DEFAULT),
                    "H5Acreate2", file_, path_ + " attribute " + name),
           H5Aclose);
  check(H5Awrite(a.id(), type, data), "H5Awrite", file_, path_ + " attribute " + name);
}

void Object::attribute(const std::string& name, const std::string& value) const {
  quiet_hdf5();
  // A fixed-length ASCII string, as openPMD's readers expect.
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.id(), std::max<std::size_t>(value.size(), 1));
  H5Tset_strpad(type.id(), H5T_STR_NULLPAD);
  Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  if (H5Aexists(id(), name.c_str()) > 0) H5Adelete(id(), name.c_str());
  Handle a(check_id(H5Acreate2(id(), name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT),
                    "H5Acreate2", file_, path_ + " attribute " + name),
           H5Aclose);
  const std::string padded = value.empty() ? std::string(1, '\0') : value;
  check(H5Awrite(a.id(), type.id(), padded.data()), "H5Awrite", file_,
        path_ + " attribute " + name);
}

void Object::attribute(const std::string& name, const std::vector<std::string>& values) const {
  quiet_hdf5();
  std::size_t width = 1;
  for (const std::string& v : values) width = std::max(width, v.size());
  std::string packed(width * values.size(), '\0');
  for (std::size_t i = 0; i < values.size(); ++i)
    packed.replace(i * width, values[i].size(), values[i]);
  Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.id(), width);
  H5Tset_strpad(type.id(), H5T_STR_NULLPAD);
  const hsize_t dims[1] = {values.size()};
  Handle space(H5Screate_simple(1, dims, nullptr), H5Sclose);
  if (H5Aexists(id(), name.c_str()) > 0) H5Adelete(id(), name.c_str());
  Handle a(check_id(H5Acreate2(id(), name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT),
                    "H5Acreate2", file_, path_ + " attribute " + name),
           H5Aclose);
  check(H5Awrite(a.id(), type.id(), packed.data()), "H5Awrite", file_,
        path_ + " attribute " + name);
}

bool Object::has_attribute(const std::string& name) const {
  return H5Aexists(id(), name.c_str()) > 0;
}

namespace {
Handle open_attribute(const Object& o, const std::string& name) {
  quiet_hdf5();
  if (H5Aexists(o.id(), name.c_str()) <= 0)
    throw IoError("HDF5: " + o.file() + ": " + o.path() + " has no attribute '" + name +
                  "' (not a file this program wrote, or an older format)");
  return Handle(check_id(H5Aopen(o.id(), name.c_str(), H5P_DEFAULT), "H5Aopen", o.file(),
                         o.path() + " attribute " + name),
                H5Aclose);
}
template <typename T>
std::vector<T> read_numbers(const Object& o, const std::string& name, hid_t type) {
  Handle a = open_attribute(o, name);
  Handle space(H5Aget_space(a.id()), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.id());
  std::vector<T> out(static_cast<std::size_t>(std::max<hssize_t>(n, 0)));
  if (!out.empty())
    check(H5Aread(a.id(), type, out.data()), "H5Aread", o.file(), o.path() + " attribute " + name);
  return out;
}
}  // namespace

double Object::read_double(const std::string& name) const {
  const auto v = read_numbers<double>(*this, name, H5T_NATIVE_DOUBLE);
  if (v.size() != 1)
    throw IoError("HDF5: " + file_ + ": " + path_ + " attribute " + name + " is not one number");
  return v[0];
}
std::int64_t Object::read_int64(const std::string& name) const {
  const auto v = read_numbers<std::int64_t>(*this, name, H5T_NATIVE_INT64);
  if (v.size() != 1)
    throw IoError("HDF5: " + file_ + ": " + path_ + " attribute " + name + " is not one number");
  return v[0];
}
std::uint64_t Object::read_uint64(const std::string& name) const {
  const auto v = read_numbers<std::uint64_t>(*this, name, H5T_NATIVE_UINT64);
  if (v.size() != 1)
    throw IoError("HDF5: " + file_ + ": " + path_ + " attribute " + name + " is not one number");
  return v[0];
}
std::vector<double> Object::read_doubles(const std::string& name) const {
  return read_numbers<double>(*this, name, H5T_NATIVE_DOUBLE);
}
std::string Object::read_string(const std::string& name) const {
  Handle a = open_attribute(*this, name);
  Handle type(H5Aget_type(a.id()), H5Tclose);
  if (H5Tget_class(type.id()) != H5T_STRING)
    throw IoError("HDF5: " + file_ + ": " + path_ + " attribute " + name + " is not a string");
  const std::size_t size = H5Tget_size(type.id());
  std::string out(size + 1, '\0');  // room for the terminator the memory type adds
  Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(mem.id(), size + 1);
  H5Tset_strpad(mem.id(), H5T_STR_NULLTERM);
  check(H5Aread(a.id(), mem.id(), out.data()), "H5Aread", file_, path_ + " attribute " + name);
  out.resize(std::strlen(out.c_str()));
  return out;
}

namespace {
std::string child_path(const std::string& parent, const std::string& relative) {
  return parent == "/" ? "/" + relative : parent + "/" + relative;
}
}  // namespace

bool Group::exists(const std::string& relative) const {
  quiet_hdf5();
  return H5Lexists(id(), relative.c_str(), H5P_DEFAULT) > 0;
}

bool Group::is_dataset(const std::string& relative) const {
  if (!exists(relative)) return false;
  const Handle object(H5Oopen(id(), relative.c_str(), H5P_DEFAULT), H5Oclose);
  return object && H5Iget_type(object.id()) == H5I_DATASET;
}

std::vector<std::string> Group::children() const {
  quiet_hdf5();
  std::vector<std::string> names;
  auto add = [](hid_t, const char* name, const H5L_info_t*, void* out) -> herr_t {
    static_cast<std::vector<std::string>*>(out)->emplace_back(name);
    return 0;
  };
  hsize_t at = 0;
  check(H5Literate(id(), H5_INDEX_NAME, H5_ITER_INC, &at, add, &names), "H5Literate", file_, path_);
  return names;
}

Group Group::open_group(const std::string& relative) const {
  const std::string full = child_path(path_, relative);
  if (!exists(relative)) throw IoError("HDF5: " + file_ + " has no group " + full);
  return Group(
      Handle(check_id(H5Gopen2(id(), relative.c_str(), H5P_DEFAULT), "H5Gopen2", file_, full),
             H5Gclose),
      file_, full);
}

Object Group::open_dataset(const std::string& relative) const {
  const std::string full = child_path(path_, relative);
  if (!exists(relative)) throw IoError("HDF5: " + file_ + " has no dataset " + full);
  return Object(
      Handle(check_id(H5Dopen2(id(), relative.c_str(), H5P_DEFAULT), "H5Dopen2", file_, full),
             H5Dclose),
      file_, full);
}

Group Group::group(const std::string& relative) const {
  quiet_hdf5();
  const std::string full = child_path(path_, relative);
  if (exists(relative)) return open_group(relative);
  Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.id(), 1);
  return Group(
      Handle(check_id(H5Gcreate2(id(), relative.c_str(), lcpl.id(), H5P_DEFAULT, H5P_DEFAULT),
                      "H5Gcreate2", file_, full),
             H5Gclose),
      file_, full);
}

namespace {
// The file access list: MPI-IO when there are several ranks and HDF5 is parallel.
Handle file_access(const std::string& path, const Comm& comm, bool& parallel) {
  Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  parallel = false;
#if defined(H5_HAVE_PARALLEL) && CUNUMPY_HAS_MPI()
  if (comm.size() > 1) {
    check(H5Pset_fapl_mpio(fapl.id(), comm.native(), MPI_INFO_NULL), "H5Pset_fapl_mpio", path, "/");
    parallel = true;
  }
#else
  (void)path;
  (void)comm;
#endif
  return fapl;
}

// Selects the block (offset, count) in the file's space and all of the memory space (nothing
// in either for an empty block), and the transfer list: collective with parallel HDF5.
Handle select_block(const File& file, const std::string& path, hid_t fspace, hid_t mspace,
                    const std::vector<hsize_t>& o, const std::vector<hsize_t>& c) {
  long long elements = 1;
  for (hsize_t v : c) elements *= static_cast<long long>(v);
  if (elements == 0) {
    H5Sselect_none(fspace);
    H5Sselect_none(mspace);
  } else {
    check(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, o.data(), nullptr, c.data(), nullptr),
          "H5Sselect_hyperslab", file.file(), path);
  }
  Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
#if defined(H5_HAVE_PARALLEL) && CUNUMPY_HAS_MPI()
  if (file.parallel()) H5Pset_dxpl_mpio(dxpl.id(), H5FD_MPIO_COLLECTIVE);
#endif
  return dxpl;
}
}  // namespace

File File::create(const std::string& path, const Comm& comm) {
  quiet_hdf5();
  // Checked on every rank, and agreed, before the collective create: a path that is a folder,
  // a missing or unwritable folder is one clear error on every rank (also when only one rank
  // sees it so), never a rank alone in H5Fcreate.
  all_ranks<IoError>(comm, [&] {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (fs::is_directory(path, ec))
      throw IoError("HDF5: " + path + " is a folder; give the path of the .h5 file to write");
    const fs::path parent = fs::path(path).has_parent_path() ? fs::path(path).parent_path() : ".";
    const fs::file_status st = fs::status(parent, ec);
    if (!fs::exists(st))
      throw IoError("HDF5: cannot create " + path + ": the folder " + parent.string() +
                    " does not exist; create it first");
    if (!fs::is_directory(st))
      throw IoError("HDF5: cannot create " + path + ": " + parent.string() + " is not a folder");
    if (::access(parent.c_str(), W_OK) != 0)
      throw IoError("HDF5: cannot create " + path + ": the folder " + parent.string() +
                    " is not writable (" + std::strerror(errno) + ")");
  });
  bool parallel = false;
  Handle fapl = file_access(path, comm, parallel);
  if (!parallel && comm.size() > 1)
    throw IoError("HDF5: " + path + ": " + std::to_string(comm.size()) +
                  " ranks need a parallel HDF5 (libhdf5-openmpi-dev) to write one file");
  Handle f(check_id(H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()), "H5Fcreate",
                    path, "the file"),
           H5Fclose);
  Handle root(check_id(H5Gopen2(f.id(), "/", H5P_DEFAULT), "H5Gopen2", path, "/"), H5Gclose);
  File out(std::move(root), path, comm, parallel);
  out.file_handle_ = std::move(f);
  return out;
}

File File::open(const std::string& path, const Comm& comm) {
  quiet_hdf5();
  // Checked on every rank, and agreed, before the collective open: a folder or a missing file
  // is one clear error on every rank (not pages of MPI-IO errors, or a rank left waiting).
  all_ranks<IoError>(comm, [&] {
    std::error_code ec;
    const std::filesystem::file_status st = std::filesystem::status(path, ec);
    if (!std::filesystem::exists(st))
      throw IoError("HDF5: " + path + " does not exist" +
                    (ec && ec != std::errc::no_such_file_or_directory ? " (" + ec.message() + ")"
                                                                      : std::string()));
    if (std::filesystem::is_directory(st))
      throw IoError("HDF5: " + path + " is a folder, not a file; give the path of an .h5 file");
    if (!std::filesystem::is_regular_file(st))
      throw IoError("HDF5: " + path + " is not a regular file");
    if (::access(path.c_str(), R_OK) != 0)
      throw IoError("HDF5: cannot read " + path + ": " + std::strerror(errno));
  });
  bool parallel = false;
  Handle fapl = file_access(path, comm, parallel);
  const hid_t id = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.id());
  if (id < 0)
    throw IoError("HDF5: cannot open " + path +
                  " (truncated, corrupted or not an HDF5 file): " + stack());
  Handle f(id, H5Fclose);
  Handle root(check_id(H5Gopen2(f.id(), "/", H5P_DEFAULT), "H5Gopen2", path, "/"), H5Gclose);
  File out(std::move(root), path, comm, parallel);
  out.file_handle_ = std::move(f);
  return out;
}

void File::flush() const {
  check(H5Fflush(file_handle_.id(), H5F_SCOPE_GLOBAL), "H5Fflush", file_, "the file");
}

void File::close() {
  h_.reset();  // the root group
  if (file_handle_) {
    const hid_t id = file_handle_.id();
    // Close everything still open in it first, so that H5Fclose really closes the file.
    const herr_t status = H5Fclose(id);
    file_handle_ = Handle();  // already closed (or failed): never close twice
    check(status, "H5Fclose", file_, "the file");
  }
}

namespace {
// The collective part of write_dataset: create, select, write.
Object write_block(const File& file, const Group& group, const std::string& name,
                   const std::string& full, hid_t type, std::span<const long long> global,
                   std::span<const long long> offset, std::span<const long long> count,
                   const void* data) {
  const int rank = static_cast<int>(global.size());
  std::vector<hsize_t> g(global.begin(), global.end()), o(offset.begin(), offset.end()),
      c(count.begin(), count.end());
  Handle fspace(
      check_id(H5Screate_simple(rank, g.data(), nullptr), "H5Screate_simple", file.file(), full),
      H5Sclose);
  Handle d(check_id(H5Dcreate2(group.id(), name.c_str(), type, fspace.id(), H5P_DEFAULT,
                               H5P_DEFAULT, H5P_DEFAULT),
                    "H5Dcreate2", file.file(), full),
           H5Dclose);
  Handle mspace(
      check_id(H5Screate_simple(rank, c.data(), nullptr), "H5Screate_simple", file.file(), full),
      H5Sclose);
  const Handle dxpl = select_block(file, full, fspace.id(), mspace.id(), o, c);
  check(H5Dwrite(d.id(), type, mspace.id(), fspace.id(), dxpl.id(), data), "H5Dwrite", file.file(),
        full);
  return Object(std::move(d), file.file(), full);
}
}  // namespace

Object write_dataset(const File& file, const Group& group, const std::string& name, hid_t type,
                     std::span<const long long> global, std::span<const long long> offset,
                     std::span<const long long> count, const void* data) {
  quiet_hdf5();
  const std::string full = group.path() + "/" + name;
  // Every rank's block is checked and the outcome agreed before the collective calls, and the
  // write's outcome after them: a failure on one rank is an IoError on every rank.
  all_ranks<IoError>(file.comm(), [&] {
    if (offset.size() != global.size() || count.size() != global.size())
      throw IoError("HDF5: " + file.file() + ": " + full +
                    ": the block's offset and count need one entry per axis of the dataset (" +
                    std::to_string(global.size()) + ")");
    for (std::size_t a = 0; a < global.size(); ++a)
      if (offset[a] < 0 || count[a] < 0 || offset[a] + count[a] > global[a])
        throw IoError("HDF5: " + file.file() + ": " + full + ": this rank's block (offset " +
                      std::to_string(offset[a]) + ", count " + std::to_string(count[a]) +
                      " along axis " + std::to_string(a) + ") lies outside the dataset (" +
                      std::to_string(global[a]) + ")");
  });
  std::optional<Object> written;
  all_ranks<IoError>(file.comm(), [&] {
    written = write_block(file, group, name, full, type, global, offset, count, data);
  });
  return std::move(*written);
}

std::vector<long long> dataset_shape(const Object& dataset) {
  Handle space(check_id(H5Dget_space(dataset.id()), "H5Dget_space", dataset.file(), dataset.path()),
               H5Sclose);
  const int rank = H5Sget_simple_extent_ndims(space.id());
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  if (rank > 0) H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr);
  return std::vector<long long>(dims.begin(), dims.end());
}

DType dataset_dtype(const Object& dataset) {
  Handle type(check_id(H5Dget_type(dataset.id()), "H5Dget_type", dataset.file(), dataset.path()),
              H5Tclose);
  const H5T_class_t kind = H5Tget_class(type.id());
  const std::size_t bytes = H5Tget_size(type.id());
  if (kind == H5T_FLOAT && bytes == 8) return DType::float64;
  if (kind == H5T_FLOAT && bytes == 4) return DType::float32;
  if (kind == H5T_INTEGER) {
    const bool is_signed = H5Tget_sign(type.id()) == H5T_SGN_2;
    switch (bytes) {
      case 1:
        return is_signed ? DType::int8 : DType::uint8;
      case 2:
        return is_signed ? DType::int16 : DType::uint16;
      case 4:
        return is_signed ? DType::int32 : DType::uint32;
      case 8:
        return is_signed ? DType::int64 : DType::uint64;
      default:
        break;
    }
  }
  throw IoError("HDF5: " + dataset.file() + ": " + dataset.path() +
                " holds elements of a type other than an integer or a 4- or 8-byte float");
}

void read_dataset(const File& file, const Object& dataset, hid_t type,
                  std::span<const long long> offset, std::span<const long long> count, void* data) {
  quiet_hdf5();
  const std::vector<long long> shape = dataset_shape(dataset);
  bool fits = shape.size() == count.size() && offset.size() == count.size();
  for (std::size_t a = 0; fits && a < shape.size(); ++a)
    fits = offset[a] >= 0 && count[a] >= 0 && offset[a] + count[a] <= shape[a];
  all_ranks_agree<IoError>(
      file.comm(), fits ? std::string()
                        : "HDF5: " + file.file() + ": " + dataset.path() +
                              " does not hold the block asked for (its shape does not match "
                              "what the file's header says: truncated or corrupted?)");
  all_ranks<IoError>(file.comm(), [&] {
    std::vector<hsize_t> o(offset.begin(), offset.end()), c(count.begin(), count.end());
    Handle fspace(H5Dget_space(dataset.id()), H5Sclose);
    Handle mspace(check_id(H5Screate_simple(static_cast<int>(c.size()), c.data(), nullptr),
                           "H5Screate_simple", file.file(), dataset.path()),
                  H5Sclose);
    const Handle dxpl = select_block(file, dataset.path(), fspace.id(), mspace.id(), o, c);
    check(H5Dread(dataset.id(), type, mspace.id(), fspace.id(), dxpl.id(), data), "H5Dread",
          file.file(), dataset.path());
  });
}

}  // namespace cunumpy::h5
