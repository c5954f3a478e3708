// apps/pic/cli_checks.hpp: the command line's checks of numbers, with messages in words.
//
// CLI11's own range checks print "Value 0 not in range 0.000000 to 1797693134862315708...":
// 400 characters that contradict themselves for a strict bound.  These say what is allowed:
//   --particles: must be at least 1, got 0
//   --dt: must be a finite number greater than 0, got -1
#pragma once

#include <CLI/CLI.hpp>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace pic::cli {

namespace detail {
// The option's text as a double; nothing when it is no number (CLI11 then says so itself).
inline bool number_of(const std::string& text, double& value) {
  char* end = nullptr;
  value = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0';
}
inline std::string shown(double v) {
  char buf[32];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}
}  // namespace detail

// v >= min (integers and reals).
inline CLI::Validator at_least(double min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        double v = 0;
        if (!detail::number_of(text, v)) return {};
        if (v >= min) return {};
        return "must be at least " + detail::shown(min) + ", got " + text;
      },
      ">= " + detail::shown(min));
}

// v > 0, finite.
inline CLI::Validator positive() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!detail::number_of(text, v)) return {};
        if (v > 0 && std::isfinite(v)) return {};
        return "must be a finite number greater than 0, got " + text;
      },
      "> 0");
}

// min <= v <= max.
inline CLI::Validator between(double min, double max) {
  return CLI::Validator(
      [min, max](std::string& text) -> std::string {
        double v = 0;
        if (!detail::number_of(text, v)) return {};
        if (v >= min && v <= max) return {};
        return "must be between " + detail::shown(min) + " and " + detail::shown(max) + ", got " +
               text;
      },
      "in [" + detail::shown(min) + ", " + detail::shown(max) + "]");
}

// A finite number (any sign).
inline CLI::Validator finite() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double v = 0;
        if (!detail::number_of(text, v)) return {};
        if (std::isfinite(v)) return {};
        return "must be a finite number, got " + text;
      },
      "finite");
}

}  // namespace pic::cli
