// cunumpy/hdf5.hpp: owners for HDF5 handles, and HDF5 errors as exceptions.
//
//   cunumpy::h5::File f = cunumpy::h5::File::create(path, comm);   // parallel when comm > 1 rank
//   cunumpy::h5::Group g = f.group("/data/0");                     // parents created
//   g.attribute("time", 0.5);
//   g.attribute("axisLabels", std::vector<std::string>{"x", "y"});
//
// Every handle (file, group, dataset, dataspace, datatype, property list, attribute) is an
// h5::Handle: move-only, closed with the right H5*close when it goes.  A failed HDF5 call
// throws cunumpy::IoError naming the call, the file and the object, with the messages of
// HDF5's error stack (which is not printed to stderr).  With parallel HDF5 (Debian's
// libhdf5-openmpi-dev) and a communicator of several ranks, files are opened with the MPI-IO
// driver and datasets written collectively; otherwise serially.
#pragma once

#include <cunumpy/build_config.hpp>

#if !CUNUMPY_HAS_HDF5()
#error \
    "cunumpy was built without HDF5: install libhdf5-openmpi-dev and configure with -DCUNUMPY_ENABLE_HDF5=ON"
#endif

#include <hdf5.h>

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <cunumpy/comm.hpp>
#include <cunumpy/dtype.hpp>
#include <cunumpy/errors.hpp>

namespace cunumpy {

// An input/output failure: the file and the object it concerns are in the message.
class IoError : public Error {
 public:
  using Error::Error;
};

namespace h5 {

// Throws IoError when `status` is negative: "<what> failed for <object> in <file>: <stack>".
void check(herr_t status, const char* what, const std::string& file, const std::string& object);
hid_t check_id(hid_t id, const char* what, const std::string& file, const std::string& object);

// An HDF5 identifier closed with its close function when the handle goes.
class Handle {
 public:
  Handle() = default;
  Handle(hid_t id, herr_t (*close)(hid_t)) noexcept : id_(id), close_(close) {}
  ~Handle() { reset(); }
  Handle(Handle&& o) noexcept : id_(std::exchange(o.id_, H5I_INVALID_HID)), close_(o.close_) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = std::exchange(o.id_, H5I_INVALID_HID);
      close_ = o.close_;
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  hid_t id() const noexcept { return id_; }
  explicit operator bool() const noexcept { return id_ >= 0; }
  void reset() noexcept {
    if (id_ >= 0 && close_ != nullptr) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  // Forgets the handle without closing it (HDF5 1.10 can crash closing a file whose writes
  // failed: such a file is abandoned, its temporary name removed).
  void forget() noexcept { id_ = H5I_INVALID_HID; }

 private:
  hid_t id_ = H5I_INVALID_HID;
  herr_t (*close_)(hid_t) = nullptr;
};

// The HDF5 type of a C++ element type.
template <typename T>
hid_t native_type();

// An object that takes attributes: a file's root group, a group or a dataset.
class Object {
 public:
  Object(Handle h, std::string file, std::string path)
      : h_(std::move(h)), file_(std::move(file)), path_(std::move(path)) {}
  hid_t id() const noexcept { return h_.id(); }
  const std::string& file() const noexcept { return file_; }
  const std::string& path() const noexcept { return path_; }
  // Closes the object's handle now (a file closes only when none of its objects is open).
  void release() noexcept { h_.reset(); }

  void attribute(const std::string& name, const std::string& value) const;
  void attribute(const std::string& name, const char* value) const {
    attribute(name, std::string(value));
  }
  void attribute(const std::string& name, const std::vector<std::string>& values) const;
  void attribute(const std::string& name, double value) const {
    attribute_raw(name, &value, 1, H5T_NATIVE_DOUBLE, true);
  }
  void attribute(const std::string& name, float value) const {
    attribute_raw(name, &value, 1, H5T_NATIVE_FLOAT, true);
  }
  void attribute(const std::string& name, std::uint32_t value) const {
    attribute_raw(name, &value, 1, H5T_NATIVE_UINT32, true);
  }
  void attribute(const std::string& name, std::uint64_t value) const {
    attribute_raw(name, &value, 1, H5T_NATIVE_UINT64, true);
  }
  void attribute(const std::string& name, std::int64_t value) const {
    attribute_raw(name, &value, 1, H5T_NATIVE_INT64, true);
  }
  // Reading: ValueError-free lookups that throw IoError naming the attribute when it is
  // missing or of another kind.
  bool has_attribute(const std::string& name) const;
  double read_double(const std::string& name) const;
  std::int64_t read_int64(const std::string& name) const;
  std::uint64_t read_uint64(const std::string& name) const;
  std::string read_string(const std::string& name) const;
  std::vector<double> read_doubles(const std::string& name) const;

  void attribute(const std::string& name, std::span<const double> values) const {
    attribute_raw(name, values.data(), values.size(), H5T_NATIVE_DOUBLE);
  }
  void attribute(const std::string& name, std::span<const std::uint64_t> values) const {
    attribute_raw(name, values.data(), values.size(), H5T_NATIVE_UINT64);
  }
  void attribute(const std::string& name, std::span<const float> values) const {
    attribute_raw(name, values.data(), values.size(), H5T_NATIVE_FLOAT);
  }

 protected:
  // n values; a scalar attribute when `scalar` (n == 1), else a 1D array.
  void attribute_raw(const std::string& name, const void* data, std::size_t n, hid_t type,
                     bool scalar = false) const;
  Handle h_;
  std::string file_, path_;
};

// An HDF5 group: children made or opened by relative path.
class Group : public Object {
 public:
  using Object::Object;
  // A child group (created with its parents when missing).
  Group group(const std::string& relative) const;
  // An existing child group or dataset; IoError naming it when missing.
  Group open_group(const std::string& relative) const;
  Object open_dataset(const std::string& relative) const;
  bool exists(const std::string& relative) const;
  // Whether the child at `relative` is a dataset (false when missing or a group).
  bool is_dataset(const std::string& relative) const;
  // The names of the group's direct children (groups and datasets), in name order.
  std::vector<std::string> children() const;
};

// An HDF5 file, serial or parallel (MPI-IO) by its communicator.
class File : public Group {
 public:
  // Creates (truncates) `path`; collective over `comm` with parallel HDF5 when it has several
  // ranks.
  static File create(const std::string& path, const Comm& comm);
  // Opens an existing file to read (collective, parallel with several ranks).  IoError naming
  // the file when it is missing, truncated or not HDF5.
  static File open(const std::string& path, const Comm& comm);
  bool parallel() const noexcept { return parallel_; }
  const Comm& comm() const noexcept { return comm_; }
  void flush() const;
  // Closes the file (every object of it must be gone); throws IoError when HDF5 cannot.
  void close();
  // After a failed write: drops the file without HDF5 flushing it again (see Handle::forget).
  void abandon() noexcept {
    h_.reset();
    file_handle_.forget();
  }

 private:
  File(Handle h, std::string path, Comm comm, bool parallel)
      : Group(std::move(h), path, "/"), comm_(std::move(comm)), parallel_(parallel) {}
  Handle file_handle_;
  Comm comm_ = Comm::serial();
  bool parallel_ = false;
};

// Writes a dataset `name` in `group` of global shape `global` (row-major), of which this rank
// holds the block at `offset` of shape `count` (`data`: count's elements, contiguous).  Every
// rank of the file's communicator calls it (collective with parallel HDF5; a rank may hold an
// empty block).  Returns the dataset, for its attributes.
Object write_dataset(const File& file, const Group& group, const std::string& name, hid_t type,
                     std::span<const long long> global, std::span<const long long> offset,
                     std::span<const long long> count, const void* data);

// The same, with the HDF5 type of T.
template <typename T>
Object write_dataset(const File& file, const Group& group, const std::string& name,
                     std::span<const long long> global, std::span<const long long> offset,
                     std::span<const long long> count, const T* data) {
  return write_dataset(file, group, name, native_type<T>(), global, offset, count, data);
}

// Reads this rank's block (offset, count) of a dataset into `data` (count's elements).
// IoError when the dataset's rank or extent does not hold the block.  Collective.
void read_dataset(const File& file, const Object& dataset, hid_t type,
                  std::span<const long long> offset, std::span<const long long> count, void* data);
// The dataset's global shape.
std::vector<long long> dataset_shape(const Object& dataset);
// The dataset's element type as a DType (float64, float32, int8..int64, uint8..uint64); IoError
// naming the dataset for any other HDF5 type (strings, compounds, ...).
DType dataset_dtype(const Object& dataset);

// The same, with the HDF5 type of T.
template <typename T>
void read_dataset(const File& file, const Object& dataset, std::span<const long long> offset,
                  std::span<const long long> count, T* data) {
  read_dataset(file, dataset, native_type<T>(), offset, count, data);
}

// Whether this HDF5 was built with MPI-IO (parallel writes into one file).
bool parallel_hdf5() noexcept;

}  // namespace h5
}  // namespace cunumpy
