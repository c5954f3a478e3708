// apps/pic/config_table.hpp: every option of the mini-app defined once.
//
// A row holds an option's name, help, default, what it accepts and what a restart does with
// it; the command line (main.cpp), the checkpoint's configuration (checkpoint.cpp), the
// "config" of summary.json and the --help text are all made from the rows, so an option cannot
// be in one and missing from another.  Values travel as text (reals with 17 digits, so every
// value round-trips exactly).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "config.hpp"

namespace CLI {
class App;
}

namespace pic {

// What a restart does with an option given on its command line.
enum class OnRestart {
  keep,   // the checkpoint's value (the physics, the grid, the kernels): a different value
          // given now is an error naming the option, since the run would not continue
  apply,  // this call's value (how long to run, what to write, how to report)
};

enum class OptionKind { integer, real, text, flag };

struct Option {
  std::string name;  // --name on the command line, the attribute, the key in summary.json
  std::string help;
  OptionKind kind = OptionKind::text;
  OnRestart restart = OnRestart::keep;
  std::vector<std::string> choices;  // text options: the values accepted (empty: any)
  double min = 0, max = 0;           // numbers: the range accepted
  // Shorthand flags: --flag sets the option to the value (e.g. --decompose = --layout decomposed).
  std::vector<std::pair<std::string, std::string>> aliases;
  std::function<std::string(const Config&)> get;
  // Parses `text` into the configuration; ValueError saying what is allowed.
  std::function<void(Config&, const std::string&)> set;
};

// The rows, in --help's order.
const std::vector<Option>& options();
const Option& option(const std::string& name);

// The command line of the rows: each option filled into `config`, checked in words.
void add_options(CLI::App& app, Config& config);
// Whether the option (or one of its aliases) was given on the command line.
bool given(const CLI::App& app, const Option& o);

// The options as (name, text) pairs (the checkpoint's attributes), and back.
std::vector<std::pair<std::string, std::string>> option_values(const Config& config);
void set_option_values(Config& config,
                       const std::vector<std::pair<std::string, std::string>>& values);

// The configuration a restart runs: `checkpoint`'s, with the options of policy `apply` taken
// from `requested` (given or not: this call's outputs and reporting; --steps only where given);
// an option of policy `keep` given with another value than the checkpoint's is a ValueError
// naming it.  `changes` receives a line per option whose value differs from the checkpoint's.
Config merge_restart(const Config& checkpoint, const Config& requested,
                     const std::function<bool(const Option&)>& was_given,
                     std::vector<std::string>& changes);

// The defaults that follow from other options: cells along y and z as along x unless given;
// in 3D, when no cells are given, 32 x 4 x 4 cells (the mode along x, a box it fits in), and
// 262144 particles unless given (512 a cell).
void apply_defaults(Config& config, const std::function<bool(const Option&)>& was_given);
// A warning for a run with fewer than 10 particles a cell (its field is noise, its rates cannot
// be fitted), or empty.
std::string few_particles_warning(const Config& config);

// ValueError naming the first option whose value lies outside its row's range or choices.
void check_options(const Config& config);

// The "config" object of summary.json: every option, typed (numbers, strings, true/false).
std::string options_json(const Config& config, const std::string& indent);

}  // namespace pic
