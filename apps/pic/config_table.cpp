// The mini-app's options (config_table.hpp): one row each.
#include "config_table.hpp"

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <sstream>

#include <cunumpy/errors.hpp>

namespace pic {

namespace cn = cunumpy;

namespace {

std::string real_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string number_text(double v) {  // for messages: the shortest form
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : real_text(v);
}

// "--name must be ..." for a value outside what the row accepts; empty when it is accepted.
std::string problem(const Option& o, const std::string& text) {
  if (o.kind == OptionKind::text) {
    if (o.choices.empty()) return {};
    for (const auto& c : o.choices)
      if (c == text) return {};
    std::string list;
    for (const auto& c : o.choices) list += (list.empty() ? "" : ", ") + (c.empty() ? "\"\"" : c);
    return "must be one of " + list + ", got " + text;
  }
  if (o.kind == OptionKind::flag) {
    if (text == "true" || text == "false") return {};
    return "must be true or false, got " + text;
  }
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return "must be a number, got " + text;
  if (o.kind == OptionKind::integer && v != std::floor(v))
    return "must be a whole number, got " + text;
  if (!(v >= o.min && v <= o.max)) {
    if (o.max >= 1e9) return "must be at least " + number_text(o.min) + ", got " + text;
    return "must be between " + number_text(o.min) + " and " + number_text(o.max) + ", got " + text;
  }
  return {};
}

void check(const Option& o, const std::string& text) {
  const std::string p = problem(o, text);
  if (!p.empty()) throw cn::ValueError("--" + o.name + " " + p);
}

// A row: its set() checks the text against the row, then stores it with `put`.
Option row(std::string name, OptionKind kind, OnRestart r, std::string help, double min, double max,
           std::vector<std::string> choices, std::function<std::string(const Config&)> get,
           std::function<void(Config&, const std::string&)> put) {
  Option o;
  o.name = std::move(name);
  o.help = std::move(help);
  o.kind = kind;
  o.restart = r;
  o.min = min;
  o.max = max;
  o.choices = std::move(choices);
  o.get = std::move(get);
  o.set = [o, put = std::move(put)](Config& c, const std::string& t) {
    check(o, t);
    put(c, t);
  };
  return o;
}

// Row makers for a field of Config.
template <typename T>
Option integer(std::string name, T Config::*field, double min, double max, OnRestart r,
               std::string help) {
  return row(
      std::move(name), OptionKind::integer, r, std::move(help), min, max, {},
      [field](const Config& c) { return std::to_string(c.*field); },
      [field](Config& c, const std::string& text) {
        if constexpr (std::is_unsigned_v<T>)
          c.*field = static_cast<T>(std::strtoull(text.c_str(), nullptr, 10));
        else
          c.*field = static_cast<T>(std::strtoll(text.c_str(), nullptr, 10));
      });
}

Option real(std::string name, double Config::*field, double min, double max, OnRestart r,
            std::string help) {
  return row(
      std::move(name), OptionKind::real, r, std::move(help), min, max, {},
      [field](const Config& c) { return real_text(c.*field); },
      [field](Config& c, const std::string& text) {
        c.*field = std::strtod(text.c_str(), nullptr);
      });
}

Option text(std::string name, std::string Config::*field, std::vector<std::string> choices,
            OnRestart r, std::string help) {
  return row(
      std::move(name), OptionKind::text, r, std::move(help), 0, 0, std::move(choices),
      [field](const Config& c) { return c.*field; },
      [field](Config& c, const std::string& t) { c.*field = t; });
}

Option flag(std::string name, bool Config::*field, OnRestart r, std::string help) {
  return row(
      std::move(name), OptionKind::flag, r, std::move(help), 0, 0, {},
      [field](const Config& c) { return std::string(c.*field ? "true" : "false"); },
      [field](Config& c, const std::string& t) { c.*field = t == "true"; });
}

// A text option stored as another member (a bool, an int) of Config.
Option mapped(std::string name, std::vector<std::string> choices, OnRestart r, std::string help,
              std::function<std::string(const Config&)> get,
              std::function<void(Config&, const std::string&)> put) {
  return row(std::move(name), OptionKind::text, r, std::move(help), 0, 0, std::move(choices),
             std::move(get), std::move(put));
}

constexpr double kBig = 1e18;

std::vector<Option> make_rows() {
  using R = OnRestart;
  std::vector<Option> rows;
  rows.push_back(text("case", &Config::case_name, {"landau", "two_stream", "custom"}, R::keep,
                      "landau | two_stream | custom (custom: --k, --amplitude, --vth, "
                      "--beam-velocity as given)"));
  rows.push_back(integer("dim", &Config::dim, 1, 3, R::keep, "1, 2 or 3"));
  rows.push_back(integer("particles", &Config::particles, 1, kBig, R::keep,
                         "particles over all ranks (default 200000; 262144 in 3D: 512 a cell)"));
  rows.push_back(integer("cells", &Config::cells_x, 4, 1 << 24, R::keep,
                         "cells along x (and y, z unless --cells-y, --cells-z; default 64, in 3D "
                         "32 x 4 x 4: the Landau mode along x, enough particles a cell)"));
  rows.push_back(integer("cells-y", &Config::cells_y, 1, 1 << 24, R::keep,
                         "cells along y (2D and 3D; at least 4)"));
  rows.push_back(
      integer("cells-z", &Config::cells_z, 1, 1 << 24, R::keep, "cells along z (3D; at least 4)"));
  rows.push_back(integer("steps", &Config::steps, 1, 1e9, R::apply,
                         "time steps (a restart may extend the run)"));
  rows.push_back(real("dt", &Config::dt, 1e-12, 1e3, R::keep,
                      "time step (1/omega_p; the leapfrog is stable for dt < 2)"));
  rows.push_back(text("backend", &Config::backend, {"", "host", "cuda", "emulated"}, R::apply,
                      "host | cuda | emulated (default: CUNUMPY_BACKEND)"));
  rows.push_back(integer("seed", &Config::seed, 0, 1.8e19, R::keep, "random seed (random start)"));
  rows.push_back(mapped(
      "start", {"quiet", "random"}, R::keep, "quiet | random",
      [](const Config& c) { return std::string(c.quiet ? "quiet" : "random"); },
      [](Config& c, const std::string& t) { c.quiet = t == "quiet"; }));
  rows.push_back(mapped(
      "shape", {"cic", "tsc"}, R::keep, "cic | tsc",
      [](const Config& c) { return std::string(c.order == 1 ? "cic" : "tsc"); },
      [](Config& c, const std::string& t) { c.order = t == "cic" ? 1 : 2; }));
  rows.push_back(flag("deterministic", &Config::deterministic, R::keep,
                      "exact density sums: bit-identical results over runs, backends, thread and "
                      "rank counts"));
  rows.push_back(text("host-step", &Config::host_step, {"fused", "separate"}, R::keep,
                      "host particle step: fused (one pass: gather, push, next deposit) | "
                      "separate"));
  rows.push_back(text("particle-step", &Config::particle_step, {"auto", "tiled"}, R::keep,
                      "device particle step: auto (the separate passes of --kernels) | tiled "
                      "(particles sorted by tile, one thread block a tile, the deposit summed in "
                      "shared memory; cuda and emulated)"));
  rows.push_back(
      text("precision", &Config::precision, {"double", "single", "mixed"}, R::keep,
           "particles in double, single (float positions and velocities: half "
           "the particle memory; the fused host step's 2D and 3D CIC loops compute in float, "
           "twice the vector lanes) or mixed (an int32 cell and a float offset in it "
           "per axis, float velocities: exact far from the origin); fields and sums "
           "stay double"));
  rows.push_back(integer("sort-every", &Config::sort_every, 0, 1e9, R::keep,
                         "Morton re-sort period in steps (0: never)"));
  rows.push_back(real("k", &Config::k, 1e-8, 1e8, R::keep, "custom case: wave number"));
  rows.push_back(text("direction", &Config::direction, {"x", "xy", "xyz"}, R::keep,
                      "the wave vector: along x | the xy diagonal (2D, 3D) | the xyz diagonal "
                      "(3D); the box spans one wavelength along each of those axes"));
  rows.push_back(real("amplitude", &Config::amplitude, -0.999999, 0.999999, R::keep,
                      "custom case: density perturbation"));
  rows.push_back(real("vth", &Config::vth, 1e-12, 1e8, R::keep, "custom case: thermal velocity"));
  rows.push_back(real("beam-velocity", &Config::beam_velocity, 0, 1e8, R::keep,
                      "custom case: two streams at +-v (0: one Maxwellian)"));
  rows.push_back(text("kernels", &Config::kernels, {"builtin", "rtc"}, R::keep,
                      "builtin (parallel_for loops compiled with the program) | rtc (the kernel "
                      "catalog: host versions, CUDA sources compiled at run time)"));
  {
    Option layout = mapped(
        "layout", {"replicated", "decomposed"}, R::keep,
        "replicated (the whole grid on every rank, the density summed by an allreduce) | "
        "decomposed (the grid split over the ranks: halo exchange, particle migration, "
        "distributed FFT)",
        [](const Config& c) { return std::string(c.decompose ? "decomposed" : "replicated"); },
        [](Config& c, const std::string& t) { c.decompose = t == "decomposed"; });
    layout.aliases = {{"decompose", "decomposed"}, {"replicate", "replicated"}};
    rows.push_back(std::move(layout));
  }
  rows.push_back(text("solver", &Config::solver, {"fft", "petsc"}, R::keep,
                      "field solver: fft (spectral, distributed FFT) | petsc (finite "
                      "differences: PETSc's conjugate gradients with multigrid, "
                      "neighbour messages only; host backend)"));
  rows.push_back(text("output", &Config::output_folder, {}, R::apply,
                      "folder for energy.csv and summary.json (checked before the first step)"));
  rows.push_back(flag("overwrite", &Config::overwrite, R::apply,
                      "replace the outputs of an earlier run in --output"));
  rows.push_back(integer("flush-every", &Config::flush_every, 0, 1e9, R::apply,
                         "with --output: rewrite the outputs every N steps during the run "
                         "(not given: a tenth of the steps; 0: only at the end)"));
  {
    Option progress = flag("progress", &Config::progress, R::apply, "progress lines (rank 0)");
    progress.aliases = {{"no-progress", "false"}};
    rows.push_back(std::move(progress));
  }
  rows.push_back(integer("output-every", &Config::output_every, 0, 1e9, R::apply,
                         "with --output: openPMD fields and particles every N steps "
                         "(openpmd/data_<step>.h5)"));
  rows.push_back(integer("checkpoint-every", &Config::checkpoint_every, 0, 1e9, R::apply,
                         "with --output: a checkpoint every N steps "
                         "(checkpoints/checkpoint_<step>.h5)"));
  rows.push_back(text("restart", &Config::restart, {}, R::apply,
                      "continue from a checkpoint (its configuration, particles and histories; "
                      "--steps may extend the run)"));
  return rows;
}

}  // namespace

const std::vector<Option>& options() {
  static const std::vector<Option> rows = make_rows();
  return rows;
}

const Option& option(const std::string& name) {
  for (const Option& o : options())
    if (o.name == name) return o;
  throw cn::ValueError("pic: no option named " + name);
}

void add_options(CLI::App& app, Config& config) {
  for (const Option& o : options()) {
    const Option* row = &o;
    std::vector<CLI::Option*> spellings;  // the option and its aliases exclude each other
    if (o.kind == OptionKind::flag) {
      spellings.push_back(app.add_flag_callback(
          "--" + o.name, [row, &config] { row->set(config, "true"); }, o.help));
    } else {
      auto* opt = app.add_option_function<std::string>(
          "--" + o.name, [row, &config](const std::string& t) { row->set(config, t); }, o.help);
      opt->check(CLI::Validator([row](std::string& t) -> std::string { return problem(*row, t); },
                                o.kind == OptionKind::text && !o.choices.empty()
                                    ? "one of the values above"
                                    : (o.kind == OptionKind::text ? "TEXT" : "NUMBER")));
      opt->default_str(o.get(Config{}));
      spellings.push_back(opt);
    }
    for (const auto& [alias, value] : o.aliases) {
      const std::string v = value;
      spellings.push_back(app.add_flag_callback(
          "--" + alias, [row, v, &config] { row->set(config, v); },
          "same as --" + o.name + " " + v));
    }
    for (CLI::Option* a : spellings)
      for (CLI::Option* b : spellings)
        if (a != b) a->excludes(b);
  }
}

void check_options(const Config& config) {
  for (const Option& o : options()) check(o, o.get(config));
}

bool given(const CLI::App& app, const Option& o) {
  if (app.count("--" + o.name) > 0) return true;
  for (const auto& [alias, value] : o.aliases)
    if (app.count("--" + alias) > 0) return true;
  return false;
}

std::vector<std::pair<std::string, std::string>> option_values(const Config& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const Option& o : options()) out.emplace_back(o.name, o.get(config));
  return out;
}

void set_option_values(Config& config,
                       const std::vector<std::pair<std::string, std::string>>& values) {
  for (const auto& [name, text] : values) option(name).set(config, text);
}

void apply_defaults(Config& config, const std::function<bool(const Option&)>& was_given) {
  const bool cells = was_given(option("cells")), cells_y = was_given(option("cells-y")),
             cells_z = was_given(option("cells-z"));
  if (config.dim == 3 && !cells && !cells_y && !cells_z) {  // 64^3 would leave 0.76 a cell
    config.cells_x = 32;
    config.cells_y = config.cells_z = 4;
  } else {
    if (!cells_y) config.cells_y = config.dim >= 2 ? config.cells_x : 1;
    if (!cells_z) config.cells_z = config.dim == 3 ? config.cells_x : 1;
  }
  if (config.dim == 3 && !was_given(option("particles"))) config.particles = 262144;
}

std::string few_particles_warning(const Config& config) {
  const double per_cell =
      static_cast<double>(config.particles) / static_cast<double>(total_cells(config));
  if (per_cell >= 10.0) return {};
  char text[512];
  std::snprintf(text, sizeof text,
                "%.2f particles a cell (%lld particles on %lld cells): the field is mostly "
                "noise and the rates will not be fitted; give at least 10 a cell (--particles "
                "%lld) or fewer --cells",
                per_cell, config.particles, total_cells(config), 10 * total_cells(config));
  return text;
}

Config merge_restart(const Config& checkpoint, const Config& requested,
                     const std::function<bool(const Option&)>& was_given,
                     std::vector<std::string>& changes) {
  auto shown = [](const std::string& v) { return v.empty() ? std::string("\"\"") : v; };
  Config out = checkpoint;
  std::vector<std::string> applied;  // handed over when every option is settled
  for (const Option& o : options()) {
    const std::string then = o.get(checkpoint);
    if (o.restart == OnRestart::keep) {
      const std::string now = o.get(requested);
      if (was_given(o) && now != then)
        throw cn::ValueError("--" + o.name + " " + shown(now) +
                             ": the checkpoint was made with --" + o.name + " " + shown(then) +
                             ", and a restart continues with the checkpoint's configuration; "
                             "drop --" +
                             o.name + " or start a new run");
      continue;
    }
    // What this call asks for; --steps not given: the checkpoint's run continues to its end.
    const std::string now = (was_given(o) || o.name != "steps") ? o.get(requested) : then;
    o.set(out, now);
    if (now != then && o.name != "restart")
      applied.push_back("--" + o.name + " " + shown(now) +
                        " (the checkpoint's run: " + shown(then) + ")");
  }
  changes.insert(changes.end(), applied.begin(), applied.end());
  out.keep_ids = requested.keep_ids;
  out.on_flush = requested.on_flush;
  return out;
}

std::string options_json(const Config& config, const std::string& indent) {
  std::ostringstream j;
  j << "{\n";
  const auto& rows = options();
  for (std::size_t k = 0; k < rows.size(); ++k) {
    const Option& o = rows[k];
    const std::string v = o.get(config);
    j << indent << "  \"" << o.name << "\": ";
    if (o.kind == OptionKind::flag) {
      j << v;
    } else if (o.kind == OptionKind::integer || o.kind == OptionKind::real) {
      const double d = std::strtod(v.c_str(), nullptr);
      j << (std::isfinite(d) ? v : std::string("null"));
    } else {
      j << '"';
      for (const char ch : v) {
        if (ch == '"' || ch == '\\') j << '\\';
        j << (static_cast<unsigned char>(ch) < 0x20 ? ' ' : ch);
      }
      j << '"';
    }
    j << (k + 1 < rows.size() ? ",\n" : "\n");
  }
  j << indent << "}";
  return j.str();
}

}  // namespace pic
