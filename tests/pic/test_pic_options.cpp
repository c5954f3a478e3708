// The mini-app's configuration table (config_table.hpp): every option, one test each, keeps a
// value other than its default through a checkpoint and appears with it in summary.json; a
// restart applies or refuses a changed option by its row's policy, never silently.
#include <gtest/gtest.h>

#include <CLI/CLI.hpp>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <cunumpy/cunumpy.hpp>

#include "checkpoint.hpp"
#include "config_table.hpp"
#include "pic.hpp"
#include "test_environment.hpp"

namespace cn = cunumpy;

namespace {

// A value the row accepts that differs from the default's.
std::string other_value(const pic::Option& o) {
  const std::string now = o.get(pic::Config{});
  switch (o.kind) {
    case pic::OptionKind::flag:
      return now == "true" ? "false" : "true";
    case pic::OptionKind::text:
      for (const std::string& c : o.choices)
        if (c != now) return c;
      return "folder/with \"quotes\"";
    case pic::OptionKind::integer:  // the least value, or the next one when that is the default
      return std::to_string(static_cast<long long>(o.min) +
                            (now == std::to_string(static_cast<long long>(o.min)) ? 1 : 0));
    case pic::OptionKind::real: {
      // A number with all 17 digits (exact round trip), inside the range.
      const double v = o.min + (o.max - o.min) * 0.123456789012345678;
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.17g", v);
      return buf;
    }
  }
  return now;
}

std::string json_text(const pic::Option& o, const std::string& v) {
  if (o.kind != pic::OptionKind::text) return v;
  std::string out = "\"";
  for (const char c : v) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> option_names() {
  std::vector<std::string> names;
  for (const pic::Option& o : pic::options()) names.push_back(o.name);
  return names;
}

class EveryOption : public ::testing::TestWithParam<std::string> {};

}  // namespace

TEST_P(EveryOption, RoundTripsThroughACheckpointAndAppearsInTheSummary) {
  const pic::Option& o = pic::option(GetParam());
  pic::Config c;
  const std::string value = other_value(o);
  ASSERT_NE(value, o.get(c)) << "--" << o.name << ": no other value to try";
  o.set(c, value);
  ASSERT_EQ(o.get(c), value) << "--" << o.name << " does not keep what it is set to";

  cunumpy_test::TempDir scratch;
  // summary.json's "config": the option with this value.
  pic::Results r;
  r.time = {0.0};
  r.field_energy = r.mode_energy = r.kinetic_energy = {1.0};
  r.momentum = r.total_charge = {0.0};
  pic::write_outputs((scratch.path / "out").string(), c, r);
  const std::string json = slurp(scratch.path / "out" / "summary.json");
  const std::size_t config_at = json.find("\"config\": {");
  ASSERT_NE(config_at, std::string::npos) << json;
  const std::string config_json = json.substr(config_at, json.find('}', config_at) - config_at);
  EXPECT_NE(config_json.find("\"" + o.name + "\": " + json_text(o, value)), std::string::npos)
      << "--" << o.name << " " << value << " is not in summary.json's config:\n"
      << config_json;

#if PIC_WITH_CHECKPOINTS
  // The checkpoint's configuration: this option's value, every other option the default's.
  pic::Checkpoint<double> ck;
  ck.config = c;
  ck.step = 1;
  ck.history = r;
  ck.particles = cn::ParticleSet<double>({.dim = 2}, 2, cn::Backend::host);
  ck.particles.n = 2;
  for (cn::Array<double>* a :
       {&ck.particles.x, &ck.particles.y, &ck.particles.vx, &ck.particles.vy}) {
    a->host_span()[0] = 0.5;
    a->host_span()[1] = 1.5;
  }
  ck.particles.id.host_span()[0] = 0;
  ck.particles.id.host_span()[1] = 1;
  ck.total = 2;
  const std::string file = pic::write_checkpoint(scratch.path.string(), cn::Comm::serial(), ck);
  const pic::Config back = pic::read_checkpoint_config(file, cn::Comm::serial());
  for (const pic::Option& other : pic::options())
    EXPECT_EQ(other.get(back), other.get(c))
        << "--" << other.name << " after a checkpoint with --" << o.name << " " << value;
#else
  GTEST_SKIP() << "built without HDF5: no checkpoints";
#endif
}

INSTANTIATE_TEST_SUITE_P(PicOptions, EveryOption, ::testing::ValuesIn(option_names()),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

// A restart: the options that say how long to run and what to write are this call's (and
// said), a physics option given with another value is an error naming it, one given with the
// checkpoint's value is accepted.
TEST(PicOptions, ARestartAppliesOrRefusesEachChangedOptionExplicitly) {
  pic::Config checkpoint;
  checkpoint.host_step = "fused";
  checkpoint.steps = 100;
  checkpoint.output_folder = "first";
  pic::Config requested;
  requested.host_step = "separate";
  requested.steps = 200;
  requested.output_folder = "second";
  requested.restart = "first/checkpoints/checkpoint_50.h5";
  std::vector<std::string> changes;
  auto given = [](std::initializer_list<const char*> names) {
    return [names](const pic::Option& o) {
      for (const char* n : names)
        if (o.name == n) return true;
      return false;
    };
  };
  try {
    (void)pic::merge_restart(checkpoint, requested, given({"host-step", "steps"}), changes);
    FAIL() << "a restart ran with another --host-step than its checkpoint's";
  } catch (const cn::ValueError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("--host-step separate"), std::string::npos) << m;
    EXPECT_NE(m.find("--host-step fused"), std::string::npos) << m;
  }
  requested.host_step = "fused";  // the checkpoint's value: nothing changes
  const pic::Config out =
      pic::merge_restart(checkpoint, requested, given({"host-step", "steps", "output"}), changes);
  EXPECT_EQ(out.host_step, "fused");
  EXPECT_EQ(out.steps, 200);
  EXPECT_EQ(out.output_folder, "second");
  EXPECT_EQ(out.restart, requested.restart);
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_NE(changes[0].find("--steps 200"), std::string::npos) << changes[0];
  EXPECT_NE(changes[1].find("--output second"), std::string::npos) << changes[1];
  // Not given: the checkpoint's physics and its steps stay; the outputs are this call's, said.
  changes.clear();
  const pic::Config same = pic::merge_restart(checkpoint, requested, given({}), changes);
  EXPECT_EQ(same.steps, 100);
  EXPECT_EQ(same.host_step, "fused");
  EXPECT_EQ(same.output_folder, "second");
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_NE(changes[0].find("--output second (the checkpoint's run: first)"), std::string::npos)
      << changes[0];
}

// --help is made from the same table: every option appears with its help and its values.
TEST(PicOptions, HelpListsEveryOptionOfTheTable) {
  CLI::App app("pic");
  pic::Config config;
  pic::add_options(app, config);
  const std::string help = app.help();
  for (const pic::Option& o : pic::options()) {
    EXPECT_NE(help.find("--" + o.name), std::string::npos) << o.name << "\n" << help;
    // The first words of its help text (CLI11 may wrap the rest).
    const std::string start = o.help.substr(0, std::min<std::size_t>(o.help.size(), 20));
    EXPECT_NE(help.find(start), std::string::npos) << o.name << ": '" << start << "'";
  }
}
