// The halo exchange (halo.hpp).
#include <cunumpy/halo.hpp>

#include <algorithm>
#include <chrono>
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

// The bytes of message m when it carries `fields` fields: each field's part but the last padded
// to the alignment.
long long message_bytes(const Message& m, long long fields) {
  return (fields - 1) * round_up(m.bytes) + m.bytes;
}

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

  void begin(HaloMode mode, std::span<const HaloField> fields, const std::source_location& where) {
    if (pending_)
      throw ValueError(
          "HaloExchange: an exchange is still pending; call end() before the next begin_*() "
          "(or pass the fields exchanged at the same time together, fill({a, b}))");
    if (fields.empty())
      throw ValueError("HaloExchange: no field was passed; pass at least one field array");
    const HaloField& f = fields[0];
    const Plan& plan =
        plan_for(f, mode, static_cast<long long>(fields.size()), fields_problem(fields, mode));
    if (mode == HaloMode::sum) check_summable(f);
    fields_.assign(fields.begin(), fields.end());
    mode_ = mode;
    where_ = where;
    const long long k = static_cast<long long>(fields.size());
    ensure_buffers(plan, f.backend, k);
    std::uint8_t* send = send_.data();
    // Message m carries field i's part at k * offset + i * (its part's size, rounded up).
    for (const Message& m : plan.messages)
      for (long long i = 0; i < k; ++i)
        pack_box(f.backend, fields_[static_cast<std::size_t>(i)].data,
                 mode == HaloMode::fill ? m.send_box : m.recv_box,
                 send + k * m.send_offset + i * round_up(m.bytes));
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
            std::span<std::uint8_t>(reinterpret_cast<std::uint8_t*>(recv_mpi + k * m.recv_offset),
                                    static_cast<std::size_t>(message_bytes(m, k))),
            m.peer, m.recv_tag_dir));
      }
      for (const Message& m : plan.messages) {
        if (m.peer == comm_.rank()) continue;
        requests_.push_back(
            comm_.isend(std::span<const std::uint8_t>(
                            reinterpret_cast<const std::uint8_t*>(send_mpi + k * m.send_offset),
                            static_cast<std::size_t>(message_bytes(m, k))),
                        m.peer, m.direction));
        ++stats_.messages;
        stats_.bytes_sent += message_bytes(m, k);
      }
    }
    plan_ = &plan;
    pending_ = true;
    posted_ = std::chrono::steady_clock::now();
  }

  void end() {
    if (!pending_) return;
    pending_ = false;
    const Plan& plan = *plan_;
    if (plan.remote) {
      const auto called = std::chrono::steady_clock::now();
      Request::wait_all(requests_);
      requests_.clear();
      const auto arrived = std::chrono::steady_clock::now();
      stats_.overlapped_seconds += std::chrono::duration<double>(called - posted_).count();
      stats_.waited_seconds += std::chrono::duration<double>(arrived - called).count();
      if (staged_) {
        mpi_staging_copy(recv_, recv_host_, where_);
        ++stats_.staged_copies;
      }
    }
    // Self copies: what this rank sent in direction o arrives from its neighbour at -o.
    const HaloField& f = fields_[0];
    const long long k = static_cast<long long>(fields_.size());
    std::uint8_t* send = send_.data();
    std::uint8_t* recv = recv_.data();
    for (const Message& m : plan.messages) {
      if (m.peer != comm_.rank()) continue;
      const Message& from =
          *std::find_if(plan.messages.begin(), plan.messages.end(),
                        [&](const Message& s) { return s.direction == m.recv_tag_dir; });
      copy_memory(recv + k * m.recv_offset, f.backend, send + k * from.send_offset, f.backend,
                  static_cast<std::size_t>(message_bytes(m, k)));
    }
    for (const Message& m : plan.messages)
      for (long long i = 0; i < k; ++i) {
        const HaloField& fi = fields_[static_cast<std::size_t>(i)];
        const std::uint8_t* part = recv + k * m.recv_offset + i * round_up(m.bytes);
        if (mode_ == HaloMode::fill)
          unpack_box(fi.backend, fi.data, m.recv_box, part);
        else
          unpack_add_box(fi.backend, fi.dtype, fi.data, m.send_box, part);
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
  const Plan& plan_for(const HaloField& f, HaloMode mode, long long count, std::string problem) {
    Layout layout{f.shape, f.dtype, f.element_size};
    auto key = layout.key();
    if (problem.empty()) problem = shape_problem(f.shape);
    if (checked_ == 0 || mpi_checks())
      check_across_ranks(f, problem, mode, count);
    else
      check_with_neighbours(f, problem, mode, count);
    ++checked_;
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    return plans_.emplace(key, make_plan(f)).first->second;
  }

  // What a rank's fields are, as one number the neighbours compare: the element type and size,
  // the component count, the mode and how many fields go together.
  long long signature(const HaloField& f, HaloMode mode, long long count) const {
    return (((static_cast<long long>(f.dtype) * 64 + f.element_size) * (1LL << 20) +
             components_of(f.shape)) *
                2 +
            static_cast<long long>(mode)) *
               (1LL << 16) +
           std::min<long long>(count, (1LL << 16) - 1);
  }

  // "" when the fields passed together agree with the first (shape, element type, backend) and
  // a sum names none twice, else what is wrong.
  static std::string fields_problem(std::span<const HaloField> fields, HaloMode mode) {
    const HaloField& f = fields[0];
    for (std::size_t i = 1; i < fields.size(); ++i) {
      const HaloField& g = fields[i];
      if (!(g.shape == f.shape) || g.dtype != f.dtype || g.element_size != f.element_size ||
          g.backend != f.backend)
        return "the fields passed together differ: field " + std::to_string(i) + " is " +
               std::string(to_string(g.dtype)) + " " + g.shape.str() + " on " +
               std::string(to_string(g.backend)) + ", field 0 " + std::string(to_string(f.dtype)) +
               " " + f.shape.str() + " on " + std::string(to_string(f.backend)) +
               "; fields exchanged together need one shape, element type and backend";
      if (mode == HaloMode::sum)
        for (std::size_t j = 0; j < i; ++j)
          if (fields[j].data == g.data)
            return "field " + std::to_string(i) + " is field " + std::to_string(j) +
                   " again: a sum would add its guards twice; pass each field once";
    }
    return "";
  }

  void check_with_neighbours(const HaloField& f, const std::string& problem, HaloMode mode,
                             long long count) {
    if (neighbours_.empty()) {  // one rank: nothing to compare with
      if (!problem.empty()) throw ValueError("HaloExchange: " + problem);
      return;
    }
    const long long mine[2] = {problem.empty() ? 1 : 0, signature(f, mode, count)};
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
            << " passed another kind of field (element type, components, fill/sum or the number "
               "of fields passed together)";
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
  void check_across_ranks(const HaloField& f, const std::string& problem, HaloMode mode,
                          long long count) {
    constexpr int kW = 6;
    const long long mine[kW] = {
        problem.empty() ? 1 : 0, static_cast<long long>(f.dtype), f.element_size,
        components_of(f.shape),  static_cast<long long>(mode),    count};
    std::vector<long long> all(kW * static_cast<std::size_t>(comm_.size()));
    comm_.allgather<long long>(std::span<const long long>(mine, kW), std::span<long long>(all));
    bool same = true, fits = true;
    for (int r = 0; r < comm_.size(); ++r) {
      fits = fits && all[kW * r] == 1;
      for (int k = 1; k < kW; ++k) same = same && all[kW * r + k] == mine[k];
    }
    if (same && fits) return;
    std::ostringstream msg;
    msg << "HaloExchange: the ranks passed fields that do not match";
    if (!problem.empty()) msg << "; on this rank (" << comm_.rank() << "): " << problem;
    msg << "\n";
    for (int r = 0; r < comm_.size(); ++r)
      msg << "  rank " << r << ": " << (all[kW * r] == 1 ? "" : "wrong shape, ") << all[kW * r + 5]
          << " field(s) of " << to_string(static_cast<DType>(all[kW * r + 1])) << " ("
          << all[kW * r + 2] << " bytes), " << all[kW * r + 3] << " component(s), "
          << (all[kW * r + 4] == 0 ? "fill" : "sum") << "\n";
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
  void ensure_buffers(const Plan& plan, Backend backend, long long fields) {
    const long long bytes =
        std::max<long long>(fields * std::max(plan.send_bytes, plan.recv_bytes), 1);
    const bool device = location_of(backend) == Location::device;
    staged_ = device && plan.remote && !device_pointer_ok(backend);
    if (send_.size() < bytes || send_.backend() != backend) {
      send_ = Array<std::uint8_t>(Shape{bytes}, backend);
      recv_ = Array<std::uint8_t>(Shape{bytes}, backend);
    }
    if (staged_ && send_host_.size() != send_.size()) {  // staged whole: sizes agree
      send_host_ = pinned_empty<std::uint8_t>(Shape{send_.size()});
      recv_host_ = pinned_empty<std::uint8_t>(Shape{send_.size()});
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
  std::vector<HaloField> fields_;  // the exchange in flight's
  HaloMode mode_ = HaloMode::fill;
  std::source_location where_;
  const Plan* plan_ = nullptr;
  bool pending_ = false, staged_ = false;
  std::chrono::steady_clock::time_point posted_;  // when begin_*() returned
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
void HaloExchange::begin(HaloMode mode, std::span<const detail::HaloField> fields,
                         std::source_location where) {
  impl_->begin(mode, fields, where);
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
