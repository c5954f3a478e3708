// The halo exchange (halo.hpp).
#include <cunumpy/halo.hpp>

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

#include <cunumpy/errors.hpp>
#include <cunumpy/internal/box_copy.hpp>
#include <cunumpy/memory.hpp>
#include <cunumpy/mpi_buffer.hpp>
#include <cunumpy/transfer.hpp>

namespace cunumpy {

namespace detail {

namespace {

constexpr long long kAlign = 16;  // each message's part of the buffers starts aligned
long long round_up(long long n) {
  return (n + kAlign - 1) / kAlign * kAlign;
}

// The 3^ndim offsets around a rank (-1, 0, +1 per axis), each numbered as index(o).
int offset_index(const std::array<int, 3>& o) {
  return (o[0] + 1) + 3 * (o[1] + 1) + 9 * (o[2] + 1);
}

// A field layout: everything the message plan depends on.
struct Layout {
  Shape shape;
  DType dtype;
  int element_size;
  auto key() const {
    std::vector<long long> dims(shape.data(), shape.data() + shape.rank());
    return std::make_tuple(dims, static_cast<int>(dtype), element_size);
  }
};

struct Message {
  int peer;          // the rank (this one for a self copy)
  int direction;     // offset_index of the direction the data travels in (send side)
  Box send_box;      // what this rank sends in `direction`
  Box recv_box;      // where what arrives from the neighbour at `direction` goes
  int recv_tag_dir;  // offset_index(-o): the direction the neighbour sent it in
  long long send_offset = 0, recv_offset = 0, bytes = 0;
};

struct Plan {
  std::vector<Message> messages;  // one per existing neighbour, in direction order
  long long send_bytes = 0, recv_bytes = 0;
  bool remote = false;  // some message goes to another rank
};

}  // namespace

class HaloImpl {
 public:
  HaloImpl(const Comm& comm, const CartesianDecomposition& d, HaloOptions o)
      : comm_(comm.dup()), d_(d), o_(o) {  // its own communicator: no tags to budget
    d.check_communicator(comm, "HaloExchange");
    if (o.guard < 0)
      throw ValueError("HaloExchange: the guard width must be 0 or more, got " +
                       std::to_string(o.guard));
    if (o.component_axis != -1 && o.component_axis != 0)
      throw ValueError("HaloExchange: component_axis must be -1 (last) or 0 (first), got " +
                       std::to_string(o.component_axis));
    // Every rank's part must be at least as wide as the guards (a guard filled from a
    // neighbour's neighbour is not supported): checked on the smallest part of each axis, so
    // every rank raises the same error.
    for (int a = 0; a < d.ndim(); ++a) {
      long long smallest = d.cells()[a];
      for (int c = 0; c < d.dims()[a]; ++c) {
        const IndexRange r = d.owned_by(a, c);
        smallest = std::min(smallest, r.end - r.begin);
      }
      if (smallest < o.guard)
        throw ValueError("HaloExchange: axis " + std::to_string(a) + " splits " +
                         std::to_string(d.cells()[a]) + " cells over " +
                         std::to_string(d.dims()[a]) + " ranks, so a rank owns as few as " +
                         std::to_string(smallest) + " cells, fewer than the guard width " +
                         std::to_string(o.guard) +
                         "; use fewer ranks along that axis, more cells, or narrower guards");
    }
  }

  Shape field_shape(long long components) const {
    if (components < 1)
      throw ValueError("HaloExchange::field_shape: components must be at least 1, got " +
                       std::to_string(components));
    std::vector<long long> dims;
    for (int a = 0; a < d_.ndim(); ++a) dims.push_back(d_.local_cells(a) + 2LL * o_.guard);
    if (components > 1) {
      if (o_.component_axis == 0)
        dims.insert(dims.begin(), components);
      else
        dims.push_back(components);
    }
    return Shape(std::span<const long long>(dims));
  }

  void begin(HaloMode mode, const HaloField& f, const std::source_location& where) {
    if (pending_)
      throw ValueError(
          "HaloExchange: an exchange is still pending; call end() before the next begin_*() "
          "(or use one HaloExchange per field exchanged at the same time)");
    const Plan& plan = plan_for(f, mode);
    if (mode == HaloMode::sum) check_summable(f);
    field_ = f;
    mode_ = mode;
    where_ = where;
    ensure_buffers(plan, f.backend);
    std::uint8_t* send = send_.data();
    for (const Message& m : plan.messages)
      pack_box(f.backend, f.data, mode == HaloMode::fill ? m.send_box : m.recv_box,
               send + m.send_offset);
    ++stats_.exchanges;
    if (plan.remote) {
      const bool device = location_of(f.backend) == Location::device;
      if (device) synchronize_backend(f.backend, SyncKind::mpi, "halo exchange", where);
      std::uint8_t* send_mpi = send;
      std::uint8_t* recv_mpi = recv_.data();
      if (staged_) {
        mpi_staging_copy(send_host_, send_, where);
        ++stats_.staged_copies;
        send_mpi = send_host_.data();
        recv_mpi = recv_host_.data();
      }
      requests_.clear();
      for (const Message& m : plan.messages) {
        if (m.peer == comm_.rank()) continue;
        requests_.push_back(comm_.irecv(
            std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(recv_mpi + m.recv_offset),
                                    static_cast<std::size_t>(m.bytes)),
            m.peer, m.recv_tag_dir));
      }
      for (const Message& m : plan.messages) {
        if (m.peer == comm_.rank()) continue;
        requests_.push_back(
            comm_.isend(std::span<const std::uint8_t>(
                            reinterpret_cast<const std::uint8_t*>(send_mpi + m.send_offset),
                            static_cast<std::size_t>(m.bytes)),
                        m.peer, m.direction));
        ++stats_.messages;
        stats_.bytes_sent += m.bytes;
      }
    }
    plan_ = &plan;
    pending_ = true;
  }

  void end() {
    if (!pending_) return;
    pending_ = false;
    const Plan& plan = *plan_;
    if (plan.remote) {
      Request::wait_all(requests_);
      requests_.clear();
      if (staged_) {
        mpi_staging_copy(recv_, recv_host_, where_);
        ++stats_.staged_copies;
      }
    }
    // Self copies: what this rank sent in direction o arrives from its neighbour at -o.
    std::uint8_t* send = send_.data();
    std::uint8_t* recv = recv_.data();
    for (const Message& m : plan.messages) {
      if (m.peer != comm_.rank()) continue;
      const Message& from =
          *std::find_if(plan.messages.begin(), plan.messages.end(),
                        [&](const Message& s) { return s.direction == m.recv_tag_dir; });
      copy_memory(recv + m.recv_offset, field_.backend, send + from.send_offset, field_.backend,
                  static_cast<std::size_t>(m.bytes));
    }
    for (const Message& m : plan.messages) {
      if (mode_ == HaloMode::fill)
        unpack_box(field_.backend, field_.data, m.recv_box, recv + m.recv_offset);
      else
        unpack_add_box(field_.backend, field_.dtype, field_.data, m.send_box, recv + m.recv_offset);
    }
  }

  bool pending() const noexcept { return pending_; }
  const CartesianDecomposition& decomposition() const noexcept { return d_; }
  int guard() const noexcept { return o_.guard; }
  HaloStats stats_;

 private:
  // The message plan of a field layout (made once per layout), after the checks: the first
  // exchange of this object (and every one in the checked mode, CUNUMPY_MPI_CHECK=1) compares
  // every rank's field with one allgather; every later one compares with the neighbours, in one
  // round of 16-byte messages before the data, so that a field of the wrong shape or kind on
  // one rank is an error there and on its neighbours instead of a rank waiting for messages
  // that never come.
  const Plan& plan_for(const HaloField& f, HaloMode mode) {
    Layout layout{f.shape, f.dtype, f.element_size};
    auto key = layout.key();
    const std::string problem = shape_problem(f.shape);
    if (checked_ == 0 || mpi_checks())
      check_across_ranks(f, problem, mode);
    else
      check_with_neighbours(f, problem, mode);
    ++checked_;
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    return plans_.emplace(key, make_plan(f)).first->second;
  }

  // What a rank's field is, as one number the neighbours compare: the element type and size,
  // the component count and the mode.
  long long signature(const HaloField& f, HaloMode mode) const {
    return ((static_cast<long long>(f.dtype) * 64 + f.element_size) * (1LL << 20) +
            components_of(f.shape)) *
               2 +
           static_cast<long long>(mode);
  }

  void check_with_neighbours(const HaloField& f, const std::string& problem, HaloMode mode) {
    if (neighbours_.empty()) {  // one rank: nothing to compare with
      if (!problem.empty()) throw ValueError("HaloExchange: " + problem);
      return;
    }
    const long long mine[2] = {problem.empty() ? 1 : 0, signature(f, mode)};
    std::vector<long long> theirs(2 * neighbours_.size());
    std::vector<Request> requests;
    requests.reserve(2 * neighbours_.size());
    for (std::size_t k = 0; k < neighbours_.size(); ++k)
      requests.push_back(comm_.irecv(std::span<long long>(&theirs[2 * k], 2), neighbours_[k].peer,
                                     27 + neighbours_[k].from_direction));
    for (const Neighbour& n : neighbours_)
      requests.push_back(
          comm_.isend(std::span<const long long>(mine, 2), n.peer, 27 + n.direction));
    Request::wait_all(requests);
    std::ostringstream msg;
    if (!problem.empty()) msg << "; on this rank (" << comm_.rank() << "): " << problem;
    for (std::size_t k = 0; k < neighbours_.size(); ++k) {
      if (theirs[2 * k] != 1)
        msg << "; neighbour rank " << neighbours_[k].peer << " passed a field that does not fit "
            << "its part (its own error says how)";
      else if (theirs[2 * k + 1] != mine[1])
        msg << "; neighbour rank " << neighbours_[k].peer
            << " passed another kind of field (element type, components or fill/sum)";
    }
    if (msg.tellp() > 0)
      throw ValueError("HaloExchange: the ranks passed fields that do not match" + msg.str() +
                       "; every rank must exchange the same kind of field at the same time");
  }

  // "" when `shape` fits this rank's part, else what is wrong.
  std::string shape_problem(const Shape& shape) const {
    const int nd = d_.ndim();
    const bool comps = shape.rank() == nd + 1;
    if (shape.rank() != nd && !comps)
      return "a field of " + std::to_string(nd) + " axes (plus one for components) was expected, " +
             "got shape " + shape.str();
    const int first = comps && o_.component_axis == 0 ? 1 : 0;
    for (int a = 0; a < nd; ++a)
      if (shape[first + a] != d_.local_cells(a) + 2LL * o_.guard)
        return "shape " + shape.str() + " does not fit this rank's part: expected " +
               field_shape(comps ? shape[o_.component_axis == 0 ? 0 : nd] : 1).str() +
               " (owned cells plus " + std::to_string(o_.guard) +
               " guard cells on each side; HaloExchange::field_shape() gives it)";
    return "";
  }

  long long components_of(const Shape& shape) const {
    if (shape.rank() != d_.ndim() + 1) return 1;
    return o_.component_axis == 0 ? shape[0] : shape[d_.ndim()];
  }

  // Every rank compares what it passes: the element type and size, the component count, the
  // mode and whether its shape fits.  One allgather; every rank raises the same error.
  void check_across_ranks(const HaloField& f, const std::string& problem, HaloMode mode) {
    const long long mine[5] = {problem.empty() ? 1 : 0, static_cast<long long>(f.dtype),
                               f.element_size, components_of(f.shape),
                               static_cast<long long>(mode)};
    std::vector<long long> all(5 * static_cast<std::size_t>(comm_.size()));
    comm_.allgather<long long>(std::span<const long long>(mine, 5), std::span<long long>(all));
    bool same = true, fits = true;
    for (int r = 0; r < comm_.size(); ++r) {
      fits = fits && all[5 * r] == 1;
      for (int k = 1; k < 5; ++k) same = same && all[5 * r + k] == mine[k];
    }
    if (same && fits) return;
    std::ostringstream msg;
    msg << "HaloExchange: the ranks passed fields that do not match";
    if (!problem.empty()) msg << "; on this rank (" << comm_.rank() << "): " << problem;
    msg << "\n";
    for (int r = 0; r < comm_.size(); ++r)
      msg << "  rank " << r << ": " << (all[5 * r] == 1 ? "" : "wrong shape, ")
          << to_string(static_cast<DType>(all[5 * r + 1])) << " (" << all[5 * r + 2] << " bytes), "
          << all[5 * r + 3] << " component(s), " << (all[5 * r + 4] == 0 ? "fill" : "sum") << "\n";
    msg << "every rank must exchange the same kind of field at the same time";
    throw ValueError(msg.str());
  }

  void check_summable(const HaloField& f) const {
    if (f.dtype == DType::boolean ||
        static_cast<std::size_t>(f.element_size) != dtype_size(f.dtype))
      throw TypeError("HaloExchange::sum: cannot add fields of " + std::string(to_string(f.dtype)) +
                      " (" + std::to_string(f.element_size) +
                      "-byte elements); sum takes integer, float32/64 and complex64/128 fields");
  }

  Plan make_plan(const HaloField& f) const {
    const int nd = d_.ndim();
    const long long comps = components_of(f.shape);
    const bool first = f.shape.rank() == nd + 1 && o_.component_axis == 0;
    const long long g = o_.guard;
    Plan plan;
    // The array as 4 axes of units: [components if first][spatial axes], padded with leading 1s.
    std::array<long long, 4> dims{1, 1, 1, 1};
    const int lead = 4 - nd - (first ? 1 : 0);
    if (first) dims[lead] = comps;
    for (int a = 0; a < nd; ++a) dims[4 - nd + a] = d_.local_cells(a) + 2 * g;
    const long long unit = f.element_size * (first ? 1 : comps);
    if (g == 0) return plan;
    std::array<int, 3> o{0, 0, 0};
    const int n_off = nd == 1 ? 3 : nd == 2 ? 9 : 27;
    for (int code = 0; code < n_off; ++code) {
      for (int a = 0; a < 3; ++a)
        o[a] = a < nd ? (code / (a == 0 ? 1 : a == 1 ? 3 : 9)) % 3 - 1 : 0;
      if (o == std::array<int, 3>{0, 0, 0}) continue;
      std::array<int, 3> at = d_.coords();
      for (int a = 0; a < nd; ++a) at[a] += o[a];
      const int peer = d_.rank_of(at);
      if (peer == proc_null) continue;
      Message m;
      m.peer = peer;
      m.direction = offset_index(o);
      m.recv_tag_dir = offset_index({-o[0], -o[1], -o[2]});
      m.send_box.dims = m.recv_box.dims = dims;
      m.send_box.unit = m.recv_box.unit = unit;
      if (first) m.send_box.extent[lead] = m.recv_box.extent[lead] = comps;
      for (int a = 0; a < nd; ++a) {
        const long long n = d_.local_cells(a);
        const int ax = 4 - nd + a;
        // Owned cells near side o (what a fill sends) and the guard cells of side o.
        long long sb = g, rb = g, e = n;
        if (o[a] < 0) sb = g, rb = 0, e = g;
        if (o[a] > 0) sb = n, rb = n + g, e = g;
        m.send_box.begin[ax] = sb;
        m.recv_box.begin[ax] = rb;
        m.send_box.extent[ax] = m.recv_box.extent[ax] = e;
      }
      m.bytes = m.send_box.bytes();
      m.send_offset = plan.send_bytes;
      m.recv_offset = plan.recv_bytes;
      plan.send_bytes += round_up(m.bytes);
      plan.recv_bytes += round_up(m.bytes);
      plan.remote = plan.remote || peer != d_.rank();
      plan.messages.push_back(m);
    }
    return plan;
  }

  // Persistent buffers on the field's side (and pinned host copies when MPI cannot take
  // device memory), reallocated only when a layout needs more.
  void ensure_buffers(const Plan& plan, Backend backend) {
    const long long bytes = std::max<long long>(std::max(plan.send_bytes, plan.recv_bytes), 1);
    const bool device = location_of(backend) == Location::device;
    staged_ = device && plan.remote && !device_pointer_ok(backend);
    if (send_.size() != bytes || send_.backend() != backend) {
      send_ = Array<std::uint8_t>(Shape{bytes}, backend);
      recv_ = Array<std::uint8_t>(Shape{bytes}, backend);
    }
    if (staged_ && send_host_.size() != bytes) {
      send_host_ = pinned_empty<std::uint8_t>(Shape{bytes});
      recv_host_ = pinned_empty<std::uint8_t>(Shape{bytes});
    }
  }

  // The other ranks around this one, one entry per direction (a rank may stand in several).
  struct Neighbour {
    int peer;
    int direction;       // offset_index of the direction towards it
    int from_direction;  // offset_index of the direction its messages to this rank travel in
  };
  static std::vector<Neighbour> neighbours_of(const CartesianDecomposition& d) {
    std::vector<Neighbour> out;
    const int nd = d.ndim();
    const int n_off = nd == 1 ? 3 : nd == 2 ? 9 : 27;
    for (int code = 0; code < n_off; ++code) {
      std::array<int, 3> o{0, 0, 0};
      for (int a = 0; a < 3; ++a)
        o[a] = a < nd ? (code / (a == 0 ? 1 : a == 1 ? 3 : 9)) % 3 - 1 : 0;
      if (o == std::array<int, 3>{0, 0, 0}) continue;
      std::array<int, 3> at = d.coords();
      for (int a = 0; a < nd; ++a) at[a] += o[a];
      const int peer = d.rank_of(at);
      if (peer == proc_null || peer == d.rank()) continue;
      out.push_back({peer, offset_index(o), offset_index({-o[0], -o[1], -o[2]})});
    }
    return out;
  }

  Comm comm_;
  CartesianDecomposition d_;
  HaloOptions o_;
  std::vector<Neighbour> neighbours_ = neighbours_of(d_);
  long long checked_ = 0;  // exchanges begun (the ranks' sequences agree; reset_stats keeps it)
  std::map<std::tuple<std::vector<long long>, int, int>, Plan> plans_;
  Array<std::uint8_t> send_, recv_, send_host_, recv_host_;
  std::vector<Request> requests_;
  HaloField field_{};
  HaloMode mode_ = HaloMode::fill;
  std::source_location where_;
  const Plan* plan_ = nullptr;
  bool pending_ = false, staged_ = false;
};

}  // namespace detail

HaloExchange::HaloExchange(const Comm& comm, const CartesianDecomposition& decomposition,
                           HaloOptions options)
    : impl_(std::make_unique<detail::HaloImpl>(comm, decomposition, options)) {}
HaloExchange::~HaloExchange() {
  if (impl_ && impl_->pending()) {
    try {
      impl_->end();
    } catch (...) {  // a destructor reports nothing; the requests are completed or cancelled
    }
  }
}
HaloExchange::HaloExchange(HaloExchange&&) noexcept = default;
HaloExchange& HaloExchange::operator=(HaloExchange&&) noexcept = default;

const CartesianDecomposition& HaloExchange::decomposition() const noexcept {
  return impl_->decomposition();
}
int HaloExchange::guard() const noexcept {
  return impl_->guard();
}
Shape HaloExchange::field_shape(long long components) const {
  return impl_->field_shape(components);
}
IndexRange HaloExchange::interior(int axis) const {
  const long long g = impl_->guard();
  return {g, g + impl_->decomposition().local_cells(axis)};
}
void HaloExchange::begin(HaloMode mode, const detail::HaloField& field,
                         std::source_location where) {
  impl_->begin(mode, field, where);
}
void HaloExchange::end() {
  impl_->end();
}
bool HaloExchange::pending() const noexcept {
  return impl_->pending();
}
const HaloStats& HaloExchange::stats() const noexcept {
  return impl_->stats_;
}
void HaloExchange::reset_stats() noexcept {
  impl_->stats_ = {};
}

}  // namespace cunumpy
