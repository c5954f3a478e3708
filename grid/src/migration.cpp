// The particle migration (migration.hpp).
#include <cunumpy/migration.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <type_traits>

#include <cunumpy/agree.hpp>
#include <cunumpy/algorithms.hpp>
#include <cunumpy/errors.hpp>
#include <cunumpy/internal/migration_kernels.hpp>
#include <cunumpy/ledger.hpp>
#include <cunumpy/memory.hpp>
#include <cunumpy/memory_block.hpp>
#include <cunumpy/mpi_buffer.hpp>
#include <cunumpy/transfer.hpp>

namespace cunumpy {

namespace detail {

namespace {
long long round8(long long n) {
  return (n + 7) / 8 * 8;
}
}  // namespace

// A position with all its digits (the edge and a position one ulp below it differ there).
std::string exact(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

class MigrationImpl {
 public:
  MigrationImpl(const Comm& comm, const CartesianDecomposition& d, std::array<double, 3> lower,
                std::array<double, 3> upper, MigrationOptions o)
      : comm_(comm.dup()), d_(d), o_(o) {  // its own communicator: no tags to budget
    d.check_communicator(comm, "ParticleMigration");
    if (!(o.growth >= 1.0))
      throw ValueError("ParticleMigration: growth must be at least 1, got " +
                       std::to_string(o.growth));
    g_.ndim = d.ndim();
    g_.ranks = d.ranks();
    g_.me = d.rank();
    for (int a = 0; a < d.ndim(); ++a) {
      if (!(std::isfinite(lower[a]) && std::isfinite(upper[a]) && upper[a] > lower[a]))
        throw ValueError("ParticleMigration: the box along axis " + std::to_string(a) +
                         " must be finite with lower < upper, got [" + exact(lower[a]) + ", " +
                         exact(upper[a]) + ")");
      g_.cells[a] = d.cells()[a];
      g_.dims[a] = d.dims()[a];
      g_.periodic[a] = d.periodic(a);
      g_.lower[a] = lower[a];
      g_.upper[a] = upper[a];
      g_.length[a] = upper[a] - lower[a];
      g_.scale[a] = static_cast<double>(g_.cells[a]) / g_.length[a];
      g_.own_begin[a] = d.owned(a).begin;
      g_.own_end[a] = d.owned(a).end;
    }
    cells_g_ = in_cells(g_);
  }

  int owner_of(std::array<double, 3> p) const {
    std::array<long long, 3> cell{0, 0, 0};
    for (int a = 0; a < g_.ndim; ++a) {
      // As the migration decides (migration_kernels.hpp): wrapped, inside by position, then
      // the cell clamped.
      const double x =
          g_.periodic[a] ? wrap_position(p[a], g_.lower[a], g_.upper[a], g_.length[a]) : p[a];
      if (!(x >= g_.lower[a] && x < g_.upper[a]))
        throw ValueError("ParticleMigration::owner_of: position " + exact(p[a]) + " along " +
                         (g_.periodic[a] ? "periodic" : "bounded") + " axis " + std::to_string(a) +
                         " is outside the box [" + exact(g_.lower[a]) + ", " + exact(g_.upper[a]) +
                         ")" + (g_.periodic[a] ? " (not a finite number)" : ""));
      cell[a] = cell_of(x, g_.lower[a], g_.scale[a], g_.cells[a]);
    }
    return d_.owner_of(cell);
  }

  StayRegion stay_region() const {
    StayRegion r;
    stay_box(g_, r.lower.data(), r.upper.data());
    return r;
  }

  long long migrate(ParticleColumns& cols, long long count,
                    const std::span<const std::int64_t>* candidates,
                    const std::source_location& where) {
    // A local argument error (one rank's arrays) is agreed first: every rank raises it, none
    // waits alone in the exchange below.
    Layout lay;
    all_ranks<ValueError>(comm_, [&] {
      lay = layout_of(cols, count);
      if (candidates != nullptr) check_candidates(*candidates, lay.backend, count);
    });
    const Backend b = lay.backend;
    const int P = comm_.size();
    ++stats_.migrations;

    // 1. The leavers' rows (increasing: the holes they will leave) and destinations.  Host
    // memory: one pass that writes nothing for the particles that stay.  Device: each
    // particle's key, then the rows of the nonzero keys (flatnonzero).
    Array<std::int64_t> holes;
    Array<std::uint32_t> leaver_keys;
    long long leaving = 0;
    // The positions in their stored type (double, float, or int32 global cell indices, decided
    // on in the geometry of cells), and the geometry they are decided in.
    const DType stored = cols[0].dtype();
    const auto with_positions = [&](auto&& body) {
      const auto as = [&](auto* none, const MigrationGeometry& g) {
        using R = std::remove_pointer_t<decltype(none)>;
        R* pos[3] = {nullptr, nullptr, nullptr};
        for (int a = 0; a < g_.ndim; ++a) pos[a] = static_cast<R*>(cols[a].data());
        return body(g, static_cast<R* const*>(pos));
      };
      if (stored == DType::int32) return as(static_cast<std::int32_t*>(nullptr), cells_g_);
      if (stored == DType::float32) return as(static_cast<float*>(nullptr), g_);
      return as(static_cast<double*>(nullptr), g_);
    };
    if (candidates != nullptr) {
      with_positions([&](const MigrationGeometry& g, auto pos) {
        leavers_among(g, pos, *candidates, host_rows_, host_keys_);
        if (mpi_checks()) verify_candidates(g, pos, count);
      });
    }
    if (candidates != nullptr || with_positions([&](const MigrationGeometry& g, auto pos) {
          return find_leavers_on_host(b, g, pos, count, host_rows_, host_keys_);
        })) {
      leaving = static_cast<long long>(host_rows_.size());
      if (leaving > 0) {
        holes = Array<std::int64_t>(Shape{leaving}, b);
        leaver_keys = Array<std::uint32_t>(Shape{leaving}, b);
        copy_memory(holes.data(), b, host_rows_.data(), Backend::host, holes.nbytes());
        copy_memory(leaver_keys.data(), b, host_keys_.data(), Backend::host, leaver_keys.nbytes());
      }
    } else if (count > 0) {
      ensure(keys_, count, b);
      leaving = with_positions([&](const MigrationGeometry& g, auto pos) {
        return assign_destinations(b, g, pos, count, keys_.data());
      });
      if (leaving > 0) {
        holes = flatnonzero(keys_.leading(count));
        leaver_keys = Array<std::uint32_t>(Shape{leaving}, b);
        keys_of_rows(b, keys_.data(), holes.data(), leaving, leaver_keys.data());
      }
    }

    // 2. The leavers grouped by destination (a stable sort of their keys only).
    std::vector<long long> send(static_cast<std::size_t>(P), 0);
    long long bad = 0;
    Array<std::int64_t> send_rows;
    if (leaving > 0) {
      auto [sorted, order] = sort_by_key(leaver_keys);
      send_rows = Array<std::int64_t>(Shape{leaving}, b);
      rows_by_order(b, holes.data(), order.data(), leaving, send_rows.data());
      Array<long long> starts(Shape{P + 2}, b);
      key_starts(b, sorted.data(), leaving, P + 2, starts.data());
      std::vector<long long> s(static_cast<std::size_t>(P + 2));
      read_small(s.data(), starts.data(), b, (P + 2) * sizeof(long long), where);
      // Segment k runs from its start to the next present start (or the end).
      long long next = leaving;
      for (int k = P + 1; k >= 1; --k) {
        if (s[k] < 0) continue;
        const long long n_k = next - s[k];
        next = s[k];
        if (k == P + 1)
          bad = n_k;
        else
          send[k - 1] = n_k;
      }
    }

    // 3. Counts, bad particles, row layouts and leavers of every rank, in one alltoall.
    std::vector<long long> out(kFields * static_cast<std::size_t>(P)), in(out.size());
    for (int r = 0; r < P; ++r) {
      out[kFields * r] = send[r];
      out[kFields * r + 1] = bad;
      out[kFields * r + 2] = lay.signature;
      out[kFields * r + 3] = leaving;
    }
    comm_.alltoall<long long>(out, std::span<long long>(in));
    check_everyone(in, lay);
    long long incoming = 0;
    std::vector<long long> recv(static_cast<std::size_t>(P));
    for (int r = 0; r < P; ++r) {
      recv[r] = in[kFields * r];
      incoming += recv[r];
    }
    long long anywhere = 0;  // leavers on every rank: all ranks skip the rest alike
    for (int r = 0; r < P; ++r) anywhere += in[kFields * r + 3];
    if (anywhere == 0) return count;
    const long long rb = lay.records.record_bytes;

    // 4. The leavers' records, and the exchange.  Every allocation this call needs (the
    // buffers and, when arrivals exceed the capacity, the larger arrays) is made first, and
    // the ranks agree on it: memory running out on one rank is an error on every rank, not a
    // rank missing from the exchange.
    const long long total = count - leaving + incoming;
    const long long capacity = lay.capacity;
    const bool grow = total > capacity;
    const long long new_capacity =
        grow ? std::max(total, static_cast<long long>(std::ceil(o_.growth * capacity))) : capacity;
    all_ranks(comm_, [&] {
      ensure(send_, leaving * rb, b);
      ensure(recv_, incoming * rb, b);
      if (grow)
        for (std::size_t c = 0; c < cols.size(); ++c) cols[c].prepare_growth(new_capacity);
    });
    gather_records(b, lay.records, send_rows.data(), leaving,
                   reinterpret_cast<char*>(send_.data()));
    exchange(send, recv, rb, b, where);

    // 5. Arrivals into the holes, then past the old count; or the last rows into the holes
    // that remain below the new count.
    RecordLayout records = lay.records;
    if (grow) {
      ++stats_.reallocations;
      for (std::size_t c = 0; c < cols.size(); ++c) {
        cols[c].commit_growth(count);
        records.columns[c].data = static_cast<char*>(cols[c].data());
      }
    }
    const char* arrivals = reinterpret_cast<const char*>(recv_.data());
    // Holes below the new count (all of them when at least as many arrive as left).
    const long long below =
        incoming >= leaving ? leaving : rows_below(b, holes.data(), leaving, total);
    scatter_records(b, records, holes.data(), 0, std::min(incoming, below), arrivals);
    if (incoming > leaving) {
      scatter_records(b, records, nullptr, count, incoming - leaving, arrivals + leaving * rb);
    } else if (below > incoming) {
      // The rows of [total, count) that did not leave fill the holes below `total` that no
      // arrival took (as many of one as of the other).
      const long long tail = count - total;
      Array<std::uint8_t> flags(Shape{tail}, b);
      rows_not_listed(b, holes.data(), leaving, total, tail, flags.data());
      const Array<std::int64_t> movers = flatnonzero(flags);
      move_rows(b, records, movers.data(), total, holes.data() + incoming, below - incoming);
    }
    stats_.sent += leaving;
    stats_.received += incoming;
    return total;
  }

  MigrationStats stats_;

 private:
  static constexpr std::size_t kFields = 4;  // per rank in the alltoall of counts
  static constexpr int kDataTag = 1;         // the records (on the migration's own communicator)

  struct Layout {
    RecordLayout records;
    Backend backend = Backend::host;
    long long capacity = 0;
    long long signature = 0;  // the columns' row sizes, hashed: ranks must agree
  };

  static void check_candidates(std::span<const std::int64_t> rows, Backend b, long long count) {
    if (b != Backend::host)
      throw ValueError(
          "ParticleMigration::migrate: candidate rows are taken with host particle arrays, got "
          "arrays on " +
          std::string(to_string(b)) + "; call migrate(particles, count) for device arrays");
    for (std::size_t k = 0; k < rows.size(); ++k)
      if (rows[k] < 0 || rows[k] >= count || (k > 0 && rows[k] <= rows[k - 1]))
        throw ValueError(
            "ParticleMigration::migrate: candidate rows must be increasing and in [0, " +
            std::to_string(count) + "), got " + std::to_string(rows[k]) + " at position " +
            std::to_string(k) + (k > 0 ? " after " + std::to_string(rows[k - 1]) : std::string()));
  }

  // The checked mode: every row examined; a leaver that is not a candidate is an error on
  // every rank (the caller's step tested against another region than stay_region()).
  template <typename R>
  void verify_candidates(const MigrationGeometry& g, R* const* pos, long long count) {
    std::vector<std::int64_t> all_rows;
    std::vector<std::uint32_t> all_keys;
    find_leavers_on_host(Backend::host, g, pos, count, all_rows, all_keys);
    long long missing = 0, first = -1;
    for (const std::int64_t r : all_rows)
      if (!std::binary_search(host_rows_.begin(), host_rows_.end(), r)) {
        if (first < 0) first = r;
        ++missing;
      }
    all_ranks<ValueError>(comm_, [&] {
      if (missing > 0)
        throw ValueError("ParticleMigration::migrate: " + std::to_string(missing) +
                         " particle(s) left this rank's stay_region() but were not among the "
                         "candidate rows (the first: row " +
                         std::to_string(first) +
                         "); give every row whose position lies outside stay_region()");
    });
  }

  Layout layout_of(ParticleColumns& cols, long long count) const {
    if (cols.positions() != g_.ndim)
      throw ValueError("ParticleMigration::migrate: " + std::to_string(g_.ndim) +
                       " position array(s) expected (one per axis of the decomposition), got " +
                       std::to_string(cols.positions()));
    if (cols.size() > 0 && cols[0].dtype() == DType::int32)
      for (int a = 0; a < g_.ndim; ++a)
        if (g_.cells[a] > std::numeric_limits<std::int32_t>::max())
          throw ValueError(
              "ParticleMigration::migrate: int32 cell indices as positions need at "
              "most 2^31 - 1 cells along each axis; axis " +
              std::to_string(a) + " has " + std::to_string(g_.cells[a]) +
              "; store the positions as double or float");
    if (cols.size() > static_cast<std::size_t>(max_particle_columns))
      throw ValueError("ParticleMigration::migrate: at most " +
                       std::to_string(max_particle_columns) + " particle arrays, got " +
                       std::to_string(cols.size()));
    Layout lay;
    lay.backend = cols[0].backend();
    lay.capacity = cols[0].capacity();
    long long offset = 0;
    std::uint64_t signature = 14695981039346656037ULL;  // FNV-1a, in unsigned arithmetic
    bool w8 = true, w4 = true;
    for (std::size_t c = 0; c < cols.size(); ++c) {
      const ParticleColumn& col = cols[c];
      if (col.backend() != lay.backend)
        throw ValueError(
            "ParticleMigration::migrate: the particle arrays live on different "
            "backends (" +
            std::string(to_string(lay.backend)) + " and " + std::string(to_string(col.backend())) +
            " for " + col.describe() + "); keep them on one side");
      if (col.capacity() != lay.capacity || count > col.capacity() || count < 0)
        throw ValueError(
            "ParticleMigration::migrate: every particle array needs the same number "
            "of rows, at least the count " +
            std::to_string(count) + "; the first has " + std::to_string(lay.capacity) + ", " +
            col.describe() + " has " + std::to_string(col.capacity()));
      const long long rb = col.row_bytes();
      w8 = w8 && rb % 8 == 0;
      w4 = w4 && rb % 4 == 0;
      lay.records.columns[c] = {static_cast<char*>(col.data()), rb, offset};
      offset += round8(rb);
      signature = (signature ^ (static_cast<std::uint64_t>(rb) * 131u +
                                static_cast<std::uint64_t>(col.dtype()))) *
                  1099511628211ULL;
    }
    lay.records.count = static_cast<int>(cols.size());
    lay.records.record_bytes = offset;
    lay.records.word = w8 ? 8 : w4 ? 4 : 1;
    lay.signature = std::bit_cast<long long>(signature);  // sent in the alltoall of counts
    return lay;
  }

  // Every rank sees every rank's bad count and layout signature: all raise the same error.
  void check_everyone(const std::vector<long long>& in, const Layout& lay) const {
    const int P = comm_.size();
    bool any_bad = false, mismatch = false;
    for (int r = 0; r < P; ++r) {
      any_bad = any_bad || in[kFields * r + 1] > 0;
      mismatch = mismatch || in[kFields * r + 2] != lay.signature;
    }
    if (!any_bad && !mismatch) return;
    std::ostringstream m;
    if (any_bad) {
      m << "ParticleMigration: particles outside the box along a bounded axis (or at NaN "
           "positions), per rank:";
      for (int r = 0; r < P; ++r)
        m << (r > 0 ? "," : "") << " rank " << r << ": " << in[kFields * r + 1];
      m << "; nothing was moved or dropped: apply the boundary condition (reflect, absorb) "
           "before migrating";
    } else {
      m << "ParticleMigration: the ranks passed particle arrays with different rows (another "
           "number of arrays, element types or widths); this rank: "
        << lay.records.count << " array(s) of " << lay.records.record_bytes
        << " bytes per particle; every rank must migrate the same kind of particles";
    }
    throw ValueError(m.str());
  }

  // A buffer of at least `elements`, kept from call to call (grown by half again when too
  // small); one far larger than the call needs (after the initial far jump of every particle,
  // say) is given back rather than held for the run.
  template <typename T>
  static void ensure(Array<T>& a, long long elements, Backend b) {
    const long long n = std::max<long long>(elements, 1);
    const bool oversized = a.data() != nullptr && a.size() > 8 * n && a.nbytes() > (16u << 20);
    if (a.data() == nullptr || a.size() < n || a.backend() != b || oversized)
      a = Array<T>(Shape{std::max<long long>(n, a.data() && !oversized ? a.size() * 3 / 2 : n)}, b);
  }

  // A few values from the arrays' side, read like a reduction's result.
  static void read_small(void* dst, const void* src, Backend b, std::size_t bytes,
                         const std::source_location& where) {
    copy_memory(dst, Backend::host, src, b, bytes);
    if (location_of(b) == Location::device)
      record_sync(
          SyncKind::reduction, [] { return std::string("particle migration counts"); }, where);
  }

  void exchange(const std::vector<long long>& send, const std::vector<long long>& recv,
                long long rb, Backend b, const std::source_location& where) {
    const int P = comm_.size();
    const bool device = location_of(b) == Location::device;
    std::uint8_t* send_mpi = send_.data();
    std::uint8_t* recv_mpi = recv_.data();
    const bool any_remote_out =
        std::any_of(send.begin(), send.end(), [](long long v) { return v > 0; });
    if (device) synchronize_backend(b, SyncKind::mpi, "particle migration", where);
    const bool staged = device && !device_pointer_ok(b);
    if (staged) {
      if (send_host_.size() != send_.size()) send_host_ = pinned_empty<std::uint8_t>(send_.shape());
      if (recv_host_.size() != recv_.size()) recv_host_ = pinned_empty<std::uint8_t>(recv_.shape());
      if (any_remote_out) {
        mpi_staging_copy(send_host_, send_, where);
        ++stats_.staged_copies;
      }
      send_mpi = send_host_.data();
      recv_mpi = recv_host_.data();
    }
    std::vector<Request> requests;
    long long offset = 0;
    for (int r = 0; r < P; ++r) {
      if (recv[r] > 0)
        requests.push_back(comm_.irecv(
            std::span<std::uint8_t>(recv_mpi + offset, static_cast<std::size_t>(recv[r] * rb)), r,
            kDataTag));
      offset += recv[r] * rb;
    }
    offset = 0;
    for (int r = 0; r < P; ++r) {
      if (send[r] > 0) {
        requests.push_back(
            comm_.isend(std::span<const std::uint8_t>(send_mpi + offset,
                                                      static_cast<std::size_t>(send[r] * rb)),
                        r, kDataTag));
        ++stats_.messages;
        stats_.bytes_sent += send[r] * rb;
      }
      offset += send[r] * rb;
    }
    Request::wait_all(requests);
    if (staged && std::any_of(recv.begin(), recv.end(), [](long long v) { return v > 0; })) {
      mpi_staging_copy(recv_, recv_host_, where);
      ++stats_.staged_copies;
    }
  }

  Comm comm_;
  CartesianDecomposition d_;
  MigrationOptions o_;
  MigrationGeometry g_;
  MigrationGeometry cells_g_;  // g_ for int32 cell indices as positions (in_cells)
  Array<std::uint8_t> send_, recv_, send_host_, recv_host_;
  Array<std::uint32_t> keys_;  // device: each particle's destination (kept from call to call)
  std::vector<std::int64_t> host_rows_;  // host: the leavers' rows and keys
  std::vector<std::uint32_t> host_keys_;
};

}  // namespace detail

ParticleMigration::ParticleMigration(const Comm& comm, const CartesianDecomposition& decomposition,
                                     std::array<double, 3> lower, std::array<double, 3> upper,
                                     MigrationOptions options)
    : impl_(std::make_unique<detail::MigrationImpl>(comm, decomposition, lower, upper, options)) {}
ParticleMigration::~ParticleMigration() = default;
ParticleMigration::ParticleMigration(ParticleMigration&&) noexcept = default;
ParticleMigration& ParticleMigration::operator=(ParticleMigration&&) noexcept = default;

long long ParticleMigration::migrate(ParticleColumns& particles, long long count,
                                     std::source_location where) {
  return impl_->migrate(particles, count, nullptr, where);
}
long long ParticleMigration::migrate(ParticleColumns& particles, long long count,
                                     std::span<const std::int64_t> candidates,
                                     std::source_location where) {
  return impl_->migrate(particles, count, &candidates, where);
}
StayRegion ParticleMigration::stay_region() const {
  return impl_->stay_region();
}
int ParticleMigration::owner_of(std::array<double, 3> position) const {
  return impl_->owner_of(position);
}
const MigrationStats& ParticleMigration::stats() const noexcept {
  return impl_->stats_;
}
void ParticleMigration::reset_stats() noexcept {
  impl_->stats_ = {};
}

}  // namespace cunumpy
