// The particle migration's cost against the fraction of particles that leave a rank per step.
//
//   mpiexec -n 2 build/apps/bench_migration [--particles-per-rank N] [--steps S]
//                                           [--fractions "0 0.001 0.01 0.1"]
//
// Each rank holds N particles (x, y, vx, vy, id: the mini-app's columns) spread over its block of
// the unit square, decomposed over the ranks in 2D.  Each step (untimed) moves a fraction f of
// them one block width along x (periodic): at 2 ranks and more they now belong to the next rank
// along x, at 1 rank they stay.  Then migrate() is timed, in its two forms: "search" (the
// migration finds the leavers: one vectorised pass over every particle, then work per leaver)
// and "candidates" (the rows that left the rank's stay region are given, as the mini-app's
// fused step lists them while it moves the particles: work per leaver only).  Printed per
// fraction and form: the slowest rank's milliseconds per call, nanoseconds per particle and per
// leaver, the leavers per rank and step and the bytes each rank sends.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

namespace cn = cunumpy;

namespace {

struct Options {
  long long per_rank = 4'000'000;
  int steps = 20;
  std::vector<double> fractions{0.0, 0.001, 0.01, 0.1};
};

[[noreturn]] void usage(const std::string& problem) {
  std::fprintf(stderr,
               "bench_migration: %s\nusage: bench_migration [--particles-per-rank N] [--steps S] "
               "[--fractions \"0 0.001 0.01 0.1\"]\n",
               problem.c_str());
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage("option " + a + " needs a value");
    const std::string v = argv[++i];
    try {
      if (a == "--particles-per-rank") {
        o.per_rank = std::stoll(v);
      } else if (a == "--steps") {
        o.steps = std::stoi(v);
      } else if (a == "--fractions") {
        o.fractions.clear();
        std::istringstream in(v);
        for (double f; in >> f;) o.fractions.push_back(f);
      } else {
        usage("unknown option " + a);
      }
    } catch (const std::logic_error&) {
      usage("option " + a + " takes a number, got '" + v + "'");
    }
  }
  if (o.per_rank < 1 || o.steps < 1 || o.fractions.empty())
    usage("--particles-per-rank and --steps must be at least 1, --fractions not empty");
  for (double f : o.fractions)
    if (!(f >= 0.0 && f <= 0.5)) usage("each fraction must lie in [0, 0.5]");
  return o;
}

// A uniform double in [0, 1) from a 64-bit counter (splitmix64).
double uniform(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * 0x1.0p-53;
}

struct Result {
  double ms = 0, ns_particle = 0, ns_leaver = 0, leavers = 0, bytes = 0;
};

Result measure(const cn::Comm& world, const Options& o, double fraction, bool candidates_form) {
  const long long cells = 512;
  const cn::CartesianDecomposition d(world, {cells, cells},
                                     cn::DecompositionOptions{.periodic = {true, true, true}});
  cn::ParticleMigration migration(world, d, {0.0, 0.0, 0.0}, {1.0, 1.0, 1.0});
  const double x0 = static_cast<double>(d.owned(0).begin) / cells;
  const double wx = static_cast<double>(d.local_cells(0)) / cells;
  const double y0 = static_cast<double>(d.owned(1).begin) / cells;
  const double wy = static_cast<double>(d.local_cells(1)) / cells;
  const long long capacity = o.per_rank + o.per_rank / 16 + 1024;
  auto x = cn::zeros<double>({capacity}, cn::Backend::host);
  auto y = cn::zeros<double>({capacity}, cn::Backend::host);
  auto vx = cn::zeros<double>({capacity}, cn::Backend::host);
  auto vy = cn::zeros<double>({capacity}, cn::Backend::host);
  auto id = cn::zeros<std::int64_t>({capacity}, cn::Backend::host);
  const std::uint64_t base = static_cast<std::uint64_t>(world.rank()) * 4 * 1'000'000'007ull;
  for (long long i = 0; i < o.per_rank; ++i) {
    const auto k = base + 4 * static_cast<std::uint64_t>(i);
    x.host_span()[i] = x0 + wx * uniform(k);
    y.host_span()[i] = y0 + wy * uniform(k + 1);
    vx.host_span()[i] = uniform(k + 2) - 0.5;
    vy.host_span()[i] = uniform(k + 3) - 0.5;
    id.host_span()[i] = static_cast<std::int64_t>(base / 4) + i;
  }
  cn::ParticleColumns columns;
  columns.position(x).position(y).column(vx).column(vy).column(id);
  long long n = o.per_rank;
  const cn::StayRegion stay = migration.stay_region();
  const long long stride =
      fraction > 0.0 ? std::max<long long>(1, std::llround(1.0 / fraction)) : 0;
  std::vector<std::int64_t> leavers;
  double seconds = 0, moved = 0;
  migration.reset_stats();
  for (int step = 0; step < o.steps; ++step) {
    // Untimed: a fraction of the rows moves one block width along x, wrapped into the box.
    leavers.clear();
    double* px = x.data();
    if (stride > 0)
      for (long long i = step % stride; i < n; i += stride) {
        const double nx = px[i] + wx;
        px[i] = nx >= 1.0 ? nx - 1.0 : nx;
        if (px[i] < stay.lower[0] || px[i] >= stay.upper[0]) leavers.push_back(i);
      }
    moved += static_cast<double>(leavers.size());
    world.barrier();
    const auto start = std::chrono::steady_clock::now();
    n = candidates_form ? migration.migrate(columns, n, leavers) : migration.migrate(columns, n);
    seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  // Nothing lost: the ranks hold every particle, and every listed leaver was sent.
  const long long held = world.allreduce(n, cn::Op::sum);
  const long long sent = world.allreduce(migration.stats().sent, cn::Op::sum);
  const double listed = world.allreduce(moved, cn::Op::sum);
  if (held != o.per_rank * world.size() || static_cast<double>(sent) != listed) {
    if (world.rank() == 0)
      std::fprintf(stderr,
                   "bench_migration: the migration lost or duplicated particles: %lld held of "
                   "%lld, %lld sent of %.0f listed\n",
                   held, o.per_rank * world.size(), sent, listed);
    std::exit(1);
  }
  // The slowest rank's time; the leavers and bytes of the average rank.
  const double slowest = world.allreduce(seconds, cn::Op::max);
  const double leavers_mean = world.allreduce(moved, cn::Op::sum) / world.size() / o.steps;
  const double bytes_mean =
      world.allreduce(static_cast<double>(migration.stats().bytes_sent), cn::Op::sum) /
      world.size() / o.steps;
  Result r;
  r.ms = 1e3 * slowest / o.steps;
  r.ns_particle = 1e9 * slowest / o.steps / static_cast<double>(o.per_rank);
  r.ns_leaver = leavers_mean > 0 ? 1e9 * slowest / o.steps / leavers_mean : 0.0;
  r.leavers = leavers_mean;
  r.bytes = bytes_mean;
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  cn::Runtime runtime(argc, argv);
  const cn::Comm world = cn::Comm::world();
  if (world.rank() == 0)
    std::printf(
        "particle migration, %d rank(s), %lld particles per rank, %d steps per figure\n\n"
        "  %-9s %-10s %10s %12s %12s %12s %14s\n",
        world.size(), o.per_rank, o.steps, "leaving", "form", "ms/call", "ns/particle", "ns/leaver",
        "leavers/rank", "bytes/rank");
  for (double f : o.fractions)
    for (bool candidates : {false, true}) {
      const Result r = measure(world, o, f, candidates);
      if (world.rank() == 0) {
        std::printf("  %7.2f%% %-10s %10.3f %12.3f %12s %12.0f %14.0f\n", 100.0 * f,
                    candidates ? "candidates" : "search", r.ms, r.ns_particle,
                    r.leavers > 0 ? std::to_string(r.ns_leaver).substr(0, 8).c_str() : "-",
                    r.leavers, r.bytes);
        std::fflush(stdout);
      }
    }
  return 0;
}
