// cunumpy/halo.hpp: the guard cells of decomposed field arrays, exchanged with the neighbours.
//
//   cunumpy::CartesianDecomposition d(world, {nx, ny});
//   cunumpy::HaloExchange halo(world, d, {.guard = 2});
//   auto rho = cunumpy::zeros<double>(halo.field_shape());   // (nx_local + 4, ny_local + 4)
//   deposit(rho);                                             // writes into the guards too
//   halo.sum(rho);       // guards added into the owners' cells (the deposit)
//   solve(rho, e);
//   halo.begin_fill(e);  // owners' cells copied into the neighbours' guards (before a gather)
//   interior_work();     // overlaps the exchange
//   halo.end();
//   halo.fill({ex, ey});  // several fields of one shape and type in one round of messages
//
// A field array holds a rank's owned cells with `guard` cells on both sides of every axis:
// shape (n0 + 2g[, n1 + 2g[, n2 + 2g]]), owned cell (i, j) at (i + g, j + g).  Several
// components go in one more axis, last (default) or first (`component_axis`).  Any element
// type; `sum` needs an arithmetic one.
//
// Every neighbour of the 3^ndim - 1 around the rank (diagonals included, so the corners are
// right) gets one message per exchange (holding every field passed together), all posted at once:
// begin_* packs and posts them, end() waits and unpacks, in a fixed order (so the sums come out the
// same on every run). Packing and unpacking are parallel loops on the array's own side (the device
// for device arrays).  Device buffers go to MPI as they are when MPI is CUDA-aware; else through
// persistent pinned staging buffers, one copy each way per exchange, counted as transfers.
// Messages to this rank itself (a periodic axis with one rank) are copied, without MPI.  Each
// HaloExchange works on a communicator of its own (a duplicate of the one it is given, made at
// construction, which is collective), so its messages never meet another exchange's or the
// application's: there are no message tags to choose, and several exchanges may be in flight
// at once.
// Past a non-periodic boundary nothing is exchanged: the guards there keep their values
// (the application's boundary condition).  After `sum`, the guards keep their own
// contributions; a `fill` makes them consistent again.
//
// The first exchange checks with one small collective that every rank passes the same kind of
// field (shape fitting its part, element type, component count, fill or sum); every later one
// compares with the neighbours in one round of 16-byte messages before the data.  A mismatch
// or a field of the wrong shape is a ValueError (on every rank at the first exchange; later,
// on the rank and its neighbours), never a rank left waiting for messages.  Those checks wait
// for the neighbours inside begin_*(): with several exchanges in flight, every rank begins them
// in the same order (a rank beginning A then B while its neighbour begins B then A waits
// forever); end() may come in any order.
#pragma once

#include <array>
#include <initializer_list>
#include <memory>
#include <source_location>
#include <span>
#include <string>
#include <vector>

#include <cunumpy/array.hpp>
#include <cunumpy/comm.hpp>
#include <cunumpy/decomposition.hpp>

namespace cunumpy {

// The guard width and component layout of a HaloExchange's fields.
struct HaloOptions {
  int guard = 1;            // guard cells on each side of every axis (at most the owned cells)
  int component_axis = -1;  // where a component axis is: -1 last, 0 first
};

// What an exchange does with the guards: fill them from the owners, or sum them into the owners.
enum class HaloMode { fill, sum };

// What an exchange moved: messages and bytes sent to other ranks (self copies excluded),
// and the staged host <-> device copies.  How well communication hides behind work: the
// seconds between begin_*() returning and end() being called (work done while the messages
// travel), and the seconds end() then waited for them; exchanges with other ranks only.
// overlapped / (overlapped + waited) is the share of the messages' flight that work covered.
struct HaloStats {
  long long exchanges = 0, messages = 0, bytes_sent = 0, staged_copies = 0;
  double overlapped_seconds = 0, waited_seconds = 0;
};

namespace detail {
// A field array without its element type.
struct HaloField {
  void* data;
  Backend backend;
  DType dtype;
  int element_size;
  Shape shape;
};
class HaloImpl;
}  // namespace detail

// The guard cells of decomposed fields, exchanged with the neighbours (see the top of this
// header).
class HaloExchange {
 public:
  HaloExchange(const Comm& comm, const CartesianDecomposition& decomposition,
               HaloOptions options = {});
  ~HaloExchange();
  HaloExchange(HaloExchange&&) noexcept;
  HaloExchange& operator=(HaloExchange&&) noexcept;

  const CartesianDecomposition& decomposition() const noexcept;
  int guard() const noexcept;
  // The shape of this rank's field array: owned cells plus the guards, and a component axis
  // when components > 1 (where options.component_axis says).
  Shape field_shape(long long components = 1) const;
  // The owned cells of a field array along `axis`: [guard, guard + local cells).
  IndexRange interior(int axis) const;

  // Blocking forms: begin + end.
  template <Element T>
  void fill(const Array<T>& field, std::source_location where = std::source_location::current()) {
    begin_fill(field, where);
    end();
  }
  template <Element T>
  void sum(const Array<T>& field, std::source_location where = std::source_location::current()) {
    begin_sum(field, where);
    end();
  }
  // Non-blocking: packs and posts; the field must not be written until end() returns (the
  // owned cells may be read).  One exchange at a time per HaloExchange.
  template <Element T>
  void begin_fill(const Array<T>& field,
                  std::source_location where = std::source_location::current()) {
    const detail::HaloField f = erase(field);
    begin(HaloMode::fill, std::span<const detail::HaloField>(&f, 1), where);
  }
  template <Element T>
  void begin_sum(const Array<T>& field,
                 std::source_location where = std::source_location::current()) {
    const detail::HaloField f = erase(field);
    begin(HaloMode::sum, std::span<const detail::HaloField>(&f, 1), where);
  }

  // Several fields (E_x and E_y, a vector field's components as arrays of their own) in one
  // round of messages: one message per neighbour carries every field's part.  The fields have
  // one shape and element type (a ValueError otherwise; a sum also refuses a field passed
  // twice); every rank passes as many, in the same order.
  template <Element T>
  void fill(std::span<const Array<T>> fields,
            std::source_location where = std::source_location::current()) {
    begin_fill(fields, where);
    end();
  }
  template <Element T>
  void sum(std::span<const Array<T>> fields,
           std::source_location where = std::source_location::current()) {
    begin_sum(fields, where);
    end();
  }
  template <Element T>
  void fill(std::initializer_list<Array<T>> fields,
            std::source_location where = std::source_location::current()) {
    fill(std::span<const Array<T>>(fields.begin(), fields.size()), where);
  }
  template <Element T>
  void sum(std::initializer_list<Array<T>> fields,
           std::source_location where = std::source_location::current()) {
    sum(std::span<const Array<T>>(fields.begin(), fields.size()), where);
  }
  template <Element T>
  void begin_fill(std::span<const Array<T>> fields,
                  std::source_location where = std::source_location::current()) {
    const std::vector<detail::HaloField> f = erase(fields);
    begin(HaloMode::fill, f, where);
  }
  template <Element T>
  void begin_sum(std::span<const Array<T>> fields,
                 std::source_location where = std::source_location::current()) {
    const std::vector<detail::HaloField> f = erase(fields);
    begin(HaloMode::sum, f, where);
  }
  template <Element T>
  void begin_fill(std::initializer_list<Array<T>> fields,
                  std::source_location where = std::source_location::current()) {
    begin_fill(std::span<const Array<T>>(fields.begin(), fields.size()), where);
  }
  template <Element T>
  void begin_sum(std::initializer_list<Array<T>> fields,
                 std::source_location where = std::source_location::current()) {
    begin_sum(std::span<const Array<T>>(fields.begin(), fields.size()), where);
  }
  // Waits for the messages and unpacks them (the guards filled, or the sums added).
  void end();
  bool pending() const noexcept;

  const HaloStats& stats() const noexcept;
  void reset_stats() noexcept;

 private:
  template <Element T>
  static detail::HaloField erase(const Array<T>& a) {
    return {a.data(), a.backend(), dtype_of<T>(), static_cast<int>(sizeof(T)), a.shape()};
  }
  template <Element T>
  static std::vector<detail::HaloField> erase(std::span<const Array<T>> fields) {
    std::vector<detail::HaloField> out;
    out.reserve(fields.size());
    for (const Array<T>& a : fields) out.push_back(erase(a));
    return out;
  }
  void begin(HaloMode mode, std::span<const detail::HaloField> fields, std::source_location where);
  std::unique_ptr<detail::HaloImpl> impl_;
};

}  // namespace cunumpy
