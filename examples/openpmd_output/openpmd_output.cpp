// Each rank writes its block of a 2D mesh and its particles into one openPMD file (parallel
// HDF5: out/openpmd_example/data_<step>.h5, readable by openPMD-api, openPMD-viewer and h5py),
// then reads the whole mesh back and checks it.  Run under MPI at any rank count.
#include <cstdio>
#include <string>

#include <cunumpy/cunumpy.hpp>
#include <cunumpy/hdf5.hpp>
#include <cunumpy/openpmd.hpp>

namespace cn = cunumpy;

int main(int argc, char** argv) {
  cn::Runtime runtime(argc, argv);
  const cn::Comm world = cn::Comm::world();
  const std::string folder = argc > 1 ? argv[1] : "out/openpmd_example";
  const long long nx = 32, ny = 16;
  const cn::CartesianDecomposition d(world, {nx, ny});
  const cn::IndexRange ox = d.owned(0), oy = d.owned(1);
  const long long lnx = ox.end - ox.begin, lny = oy.end - oy.begin;

  // This rank's block of rho(i, j) = 100 i + j, and one particle per owned cell.
  auto rho = cn::empty<double>({lnx, lny}, cn::Backend::host);
  auto px = cn::empty<double>({lnx * lny}, cn::Backend::host);
  auto py = cn::empty<double>({lnx * lny}, cn::Backend::host);
  auto ux = cn::zeros<double>({lnx * lny}, cn::Backend::host);
  auto uy = cn::zeros<double>({lnx * lny}, cn::Backend::host);
  for (long long i = 0; i < lnx; ++i)
    for (long long j = 0; j < lny; ++j) {
      rho(i, j) = 100.0 * static_cast<double>(ox.begin + i) + static_cast<double>(oy.begin + j);
      px(i * lny + j) = static_cast<double>(ox.begin + i) + 0.5;
      py(i * lny + j) = static_cast<double>(oy.begin + j) + 0.5;
    }

  cn::OpenPmdSeries series(folder, world, {.overwrite = true});
  auto it = series.iteration(10, 1.0, 0.1);
  const cn::MeshLayout layout{.global = {nx, ny},
                              .offset = {ox.begin, oy.begin},
                              .count = {lnx, lny},
                              .spacing = {1.0, 1.0},
                              .grid_offset = {0.0, 0.0},
                              .axis_labels = {"x", "y"},
                              .position = {0.5, 0.5}};
  it.mesh("rho", {}, layout, {&rho});
  cn::ParticleRecords electrons{
      .axes = {"x", "y"}, .position = {&px, &py}, .momentum = {&ux, &uy}, .count = lnx * lny};
  it.particles("electrons", electrons);
  it.close();  // complete: renamed into place

  // Read back: every rank reads the whole mesh.
  auto file = cn::h5::File::open(series.file_of(10), world);
  const auto dataset = file.open_dataset("data/10/meshes/rho");
  const auto shape = cn::h5::dataset_shape(dataset);
  std::vector<double> all(static_cast<std::size_t>(nx * ny));
  const long long offset[] = {0, 0}, count[] = {nx, ny};
  cn::h5::read_dataset(file, dataset, offset, count, all.data());
  long long wrong = 0;
  for (long long i = 0; i < nx; ++i)
    for (long long j = 0; j < ny; ++j)
      if (all[static_cast<std::size_t>(i * ny + j)] != 100.0 * i + j) ++wrong;
  const bool ok = shape.size() == 2 && shape[0] == nx && shape[1] == ny && wrong == 0;
  if (world.rank() == 0)
    std::printf("%s: rho %lld x %lld written by %d rank(s) and read back, %lld wrong\n%s\n",
                series.file_of(10).c_str(), nx, ny, world.size(), wrong,
                ok ? "openpmd_output: ok" : "openpmd_output: WRONG");
  return ok ? 0 : 1;
}
