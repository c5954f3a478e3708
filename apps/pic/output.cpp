// The run's outputs (output.hpp, and pic.hpp's prepare_output and write_outputs): the staged
// openPMD snapshots, energy.csv and summary.json (written atomically), and the run's health.
#include "output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <span>
#include <sstream>
#include <type_traits>

#include "config_table.hpp"
#include "pic.hpp"

namespace pic {

namespace cn = cunumpy;

StagedOutput::StagedOutput(const std::string& folder, const cn::Comm& comm, bool overwrite)
    : writer_(folder, comm, overwrite) {}

template <typename T>
cn::StagedCopy<T> StagedOutput::stage(std::unique_ptr<cn::HostStaging<T>>& staging,
                                      const cn::Array<T>& a) {
  if (!staging || !(staging->shape() == a.shape()))
    staging = std::make_unique<cn::HostStaging<T>>(a.shape(), 2);
  return staging->copy(a);
}

template <typename Real>
void StagedOutput::start(const Particles<Real>& p, const FieldLayout& layout, int step) {
  Pending out;
  out.step = step;
  out.n = p.n;
  out.single = std::is_same_v<Real, float>;
  out.layout = p.layout();
  // rho and E's components, then every column of the particles (in its type).
  std::vector<const cn::Array<double>*> fields{&layout.rho, &layout.ex, &layout.ey, &layout.ez};
  fields.resize(1 + static_cast<std::size_t>(p.dim));
  fields_.resize(std::max(fields_.size(), fields.size()));
  for (std::size_t k = 0; k < fields.size(); ++k)
    out.fields.push_back(stage(fields_[k], *fields[k]));
  auto& set = const_cast<Particles<Real>&>(p);  // for_each_column: handles, copied from here
  set.for_each_column([&](const std::string& name, cn::AnyParticleColumn column) {
    std::visit(
        [&]<typename T>(cn::Array<T>* a) {
          using Slot = std::unique_ptr<cn::HostStaging<T>>;
          Staging& staging = columns_[name];
          if (!std::holds_alternative<Slot>(staging)) staging = Slot();
          out.columns.emplace_back(name, stage(std::get<Slot>(staging), *a));
        },
        column);
  });
  if (p.cells) {
    const LocalGrid& g = layout.grid();
    const double sizes[] = {g.dx, g.dy, g.dz};
    out.cell_size.assign(sizes, sizes + p.dim);
  }
  pending_ = std::move(out);
}
template void StagedOutput::start<double>(const Particles<double>&, const FieldLayout&, int);
template void StagedOutput::start<float>(const Particles<float>&, const FieldLayout&, int);

std::string StagedOutput::write(const FieldLayout& layout, double dt, double weight) {
  Pending p = std::move(*pending_);
  pending_.reset();
  std::vector<cn::Array<double>> fields;
  for (const auto& c : p.fields) fields.push_back(c.result());
  cn::ParticleSpecies species{.weight = weight, .cell_size = p.cell_size};
  layout.particle_region(species.patch_offset, species.patch_extent);
  const MeshBlock mesh = layout.mesh_block(fields);
  return p.single ? write_as<float>(p, mesh, species, dt) : write_as<double>(p, mesh, species, dt);
}

// The staged columns (host arrays, the particle arrays' rows) as a host particle set, written.
template <typename Real>
std::string StagedOutput::write_as(Pending& p, const MeshBlock& mesh, cn::ParticleSpecies& species,
                                   double dt) {
  using Host = std::variant<cn::Array<double>, cn::Array<float>, cn::Array<std::int32_t>,
                            cn::Array<std::int64_t>>;
  std::map<std::string, Host> arrays;
  for (auto& [name, copy] : p.columns)
    std::visit([&](auto& c) { arrays.emplace(name, c.result()); }, copy);
  cn::ParticleSet<Real> set(p.layout, 0, cn::Backend::host);
  set.for_each_column([&](const std::string& name, cn::AnyParticleColumn column) {
    std::visit(
        [&]<typename T>(cn::Array<T>* a) {
          *a = std::get<cn::Array<T>>(arrays.at(name));
          arrays.erase(name);
        },
        column);
  });
  for (auto& [name, a] : arrays)
    std::visit([&]<typename T>(cn::Array<T>& values) { set.add_column(name, values); }, a);
  set.n = p.n;
  return writer_.write(p.step, p.step * dt, dt, mesh, set, species);
}

Health health_of(const Results& r) {
  Health h;
  if (r.field_energy.empty()) return h;
  auto unhealthy = [&](std::string why) {
    h.diverged = true;
    if (h.reason.empty()) h.reason = std::move(why);
  };
  // Every diagnostic finite at every step.
  const std::pair<const char*, const std::vector<double>*> series[] = {
      {"field energy", &r.field_energy},
      {"mode energy", &r.mode_energy},
      {"kinetic energy", &r.kinetic_energy},
      {"momentum", &r.momentum},
      {"total charge", &r.total_charge}};
  for (const auto& [name, values] : series)
    for (std::size_t i = 0; i < values->size(); ++i)
      if (!std::isfinite((*values)[i])) {
        const double v = (*values)[i];
        unhealthy("the " + std::string(name) + " is " +
                  (std::isnan(v) ? "NaN"
                   : v > 0       ? "+Inf"
                                 : "-Inf") +
                  " at step " + std::to_string(i));
        break;
      }
  const double e0 = r.field_energy.front() + r.kinetic_energy.front();
  if (!std::isnormal(e0) || !(e0 > 0.0)) {
    // Zero, subnormal, negative or not finite: a relative change of it measures nothing.
    std::ostringstream m;
    m << "the initial total energy is ";
    if (std::isfinite(e0))
      m << e0;
    else
      m << (std::isnan(e0) ? "NaN" : e0 > 0 ? "+Inf" : "-Inf");
    m << ", so its relative change cannot be measured";
    unhealthy(m.str());
    h.max_relative_energy_error = std::numeric_limits<double>::quiet_NaN();
    return h;
  }
  for (std::size_t i = 0; i < r.field_energy.size(); ++i) {
    const double e = r.field_energy[i] + r.kinetic_energy[i];
    const double change = std::abs(e - e0) / e0;
    // NaN-propagating: std::max would drop a NaN change.
    if (!(change <= h.max_relative_energy_error)) h.max_relative_energy_error = change;
  }
  if (!std::isfinite(h.max_relative_energy_error))
    unhealthy("the total energy stopped being a finite number");
  else if (h.max_relative_energy_error > 0.5) {
    std::ostringstream m;
    m << "the total energy changed by " << h.max_relative_energy_error << " of its initial value";
    unhealthy(m.str());
  }
  return h;
}

namespace {
namespace fs = std::filesystem;

// Text as a JSON string's contents.
std::string json_escape(const std::string& text) {
  std::string out;
  for (const char ch : text) {
    if (ch == '"' || ch == '\\') out += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      out += ' ';
      continue;
    }
    out += ch;
  }
  return out;
}

// The library's atomic write, its errors as the program's.
void write_file(const fs::path& path, const std::string& text) {
  try {
    cn::write_file_atomically(path, text);
  } catch (const cn::Error& e) {
    throw cn::Error(std::string("pic: ") + e.what());
  }
}

// A JSON number, or null for NaN and infinities.
std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream s;
  s.precision(10);
  s << v;
  return s.str();
}

}  // namespace

void prepare_output(const std::string& folder, bool overwrite) {
  const fs::path dir(folder);
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw cn::Error("pic: --output " + folder +
                    " is a file, not a folder; give a folder to write into");
  fs::create_directories(dir, ec);
  if (ec)
    throw cn::Error("pic: cannot create the output folder " + folder + ": " + ec.message() +
                    "; check the path and its permissions");
  if (!overwrite && (fs::exists(dir / "summary.json", ec) || fs::exists(dir / "energy.csv", ec)))
    throw cn::Error("pic: " + folder +
                    " holds the outputs of an earlier run; choose another folder or pass "
                    "--overwrite");
  // A probe: the folder must take a file now, not only after the run.
  const fs::path probe = dir / (".pic-probe." + std::to_string(getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw cn::Error("pic: cannot write into " + folder + ": " + std::strerror(errno) +
                    "; check its permissions or choose another folder");
  ::close(fd);
  ::unlink(probe.c_str());
}

void write_outputs(const std::string& folder, const Config& config, const Results& r) {
  const fs::path dir(folder);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw cn::Error("pic: cannot create the output folder " + folder + ": " + ec.message());
  std::ostringstream csv;
  csv << "step,time,field_energy,mode_energy,kinetic_energy,total_energy,momentum,total_charge\n";
  csv.precision(17);
  for (std::size_t i = 0; i < r.time.size(); ++i)
    csv << i << ',' << r.time[i] << ',' << r.field_energy[i] << ',' << r.mode_energy[i] << ','
        << r.kinetic_energy[i] << ',' << r.field_energy[i] + r.kinetic_energy[i] << ','
        << r.momentum[i] << ',' << r.total_charge[i] << '\n';
  const Health health = health_of(r);
  double max_momentum = 0.0, max_charge = 0.0;
  for (std::size_t i = 0; i < r.time.size(); ++i) {
    if (!(std::abs(r.momentum[i]) <= max_momentum)) max_momentum = std::abs(r.momentum[i]);
    if (!(std::abs(r.total_charge[i]) <= max_charge)) max_charge = std::abs(r.total_charge[i]);
  }
  std::ostringstream json;
  json.precision(10);
  json << "{\n"
       << "  \"case\": \"" << config.case_name << "\",\n"
       << "  \"complete\": " << (r.complete ? "true" : "false") << ",\n"
       << "  \"steps_done\": " << r.steps_done << ",\n"
       << "  \"diverged\": " << (health.diverged ? "true" : "false") << ",\n"
       << "  \"health\": \"" << (health.diverged ? json_escape(health.reason) : "ok") << "\",\n"
       << "  \"backend\": \"" << r.backend << "\",\n"
       << "  \"ranks\": " << r.ranks << ",\n"
       << "  \"threads_per_rank\": " << r.threads_per_rank << ",\n"
       << "  \"dim\": " << config.dim << ",\n"
       << "  \"particles\": " << config.particles << ",\n"
       << "  \"cells\": " << total_cells(config) << ",\n"
       << "  \"steps\": " << config.steps << ",\n"
       << "  \"dt\": " << json_number(config.dt) << ",\n"
       << "  \"k\": " << json_number(config.k) << ",\n"
       << "  \"shape\": \"" << (config.order == 1 ? "cic" : "tsc") << "\",\n"
       << "  \"deposit\": \""
       << (config.deterministic  ? "deterministic"
           : r.backend == "host" ? "private grids"
                                 : "atomic")
       << "\",\n"
       << "  \"kernels\": \"" << config.kernels << "\",\n"
       << "  \"layout\": \"" << r.layout << "\",\n"
       << "  \"step\": \"" << r.step << "\",\n"
       << "  \"solver\": \"" << r.solver << "\",\n"
       << "  \"quiet_start\": " << (config.quiet ? "true" : "false") << ",\n"
       << "  \"gamma_fit\": " << json_number(r.gamma_fit) << ",\n"
       << "  \"omega_fit\": " << json_number(r.omega_fit) << ",\n"
       << "  \"gamma_theory\": " << json_number(r.gamma_theory) << ",\n"
       << "  \"omega_theory\": " << json_number(r.omega_theory) << ",\n"
       << "  \"fit_window\": [" << json_number(r.fit_t_begin) << ", " << json_number(r.fit_t_end)
       << "],\n"
       << "  \"fit_points\": " << r.fit_points << ",\n"
       << "  \"fit_failure\": "
       << (r.fit_failure.empty() ? std::string("null") : "\"" + json_escape(r.fit_failure) + "\"")
       << ",\n"
       << "  \"max_relative_energy_error\": " << json_number(health.max_relative_energy_error)
       << ",\n"
       << "  \"max_abs_momentum\": " << json_number(max_momentum) << ",\n"
       << "  \"max_abs_total_charge\": " << json_number(max_charge) << ",\n"
       << "  \"seconds\": " << json_number(r.seconds) << ",\n"
       << "  \"ns_per_particle_step\": " << json_number(r.ns_per_particle_step) << ",\n"
       << "  \"particle_steps_per_second\": " << json_number(r.particle_steps_per_second) << ",\n"
       << "  \"transfers_in_loop\": " << r.transfers_in_loop << ",\n"
       << "  \"mpi_staging_in_loop\": " << r.mpi_staging_in_loop << ",\n"
       << "  \"global_atomics_per_particle_step\": "
       << (r.global_atomics_per_particle_step < 0 ? std::string("null")
                                                  : json_number(r.global_atomics_per_particle_step))
       << ",\n"
       << "  \"model_bytes_per_particle_step\": "
       << (r.model_bytes_per_particle_step < 0 ? std::string("null")
                                               : json_number(r.model_bytes_per_particle_step))
       << ",\n"
       << "  \"shared_atomics_per_particle_step\": "
       << (r.shared_atomics_per_particle_step < 0 ? std::string("null")
                                                  : json_number(r.shared_atomics_per_particle_step))
       << ",\n"
       << "  \"grid\": \"" << (r.decomposed ? "decomposed" : "replicated") << "\",\n"
       << "  \"bytes_sent_per_step_per_rank\": " << json_number(r.bytes_sent_per_step) << ",\n"
       << "  \"max_bytes_sent_per_step\": " << json_number(r.max_bytes_sent_per_step) << ",\n"
       << "  \"peak_memory_mb_per_rank\": " << json_number(r.peak_memory_mb) << ",\n"
       << "  \"replicated_allreduce_bytes_per_step\": " << json_number(r.replicated_bytes_per_step)
       << ",\n"
       << "  \"config\": " << options_json(config, "  ") << ",\n"
       << "  \"phase_seconds\": {";
  bool first = true;
  for (const auto& [name, seconds] : r.phase_seconds) {
    json << (first ? "" : ", ") << '"' << name << "\": " << json_number(seconds);
    first = false;
  }
  json << "},\n  \"phase_seconds_slowest_rank\": {";
  first = true;
  for (const auto& [name, seconds] : r.phase_seconds_max) {
    json << (first ? "" : ", ") << '"' << name << "\": " << json_number(seconds);
    first = false;
  }
  json << "},\n  \"overlap\": {";
  const auto overlap = [&](const char* name, const Results::Overlap& o) {
    json << '"' << name << "\": {\"overlapped_seconds\": " << json_number(o.overlapped)
         << ", \"waited_seconds\": " << json_number(o.waited)
         << ", \"hidden\": " << json_number(o.hidden()) << "}";
  };
  overlap("guard_sum", r.guard_sum_overlap);
  json << ", ";
  overlap("field_fill", r.field_fill_overlap);
  json << "},\n  \"redeposits\": " << r.redeposits << "\n}\n";
  // energy.csv first, summary.json last: a summary in place describes the energy.csv beside it.
  write_file(dir / "energy.csv", csv.str());
  write_file(dir / "summary.json", json.str());
}

}  // namespace pic
