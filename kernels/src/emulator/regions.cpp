// The kernel emulator's split of a kernel at its barriers and warp operations.  A GPU runs a
// block's threads side by side; the emulator runs them one after the other, so at a barrier
// each thread must stop and let the others catch up.  Fibers do that for any kernel, at the
// cost of a stack switch per thread and synchronisation.  Here, as PoCL's CPU device does for
// OpenCL, a kernel whose synchronisations lie on its body's straight path (statements of its
// body, or of the body of a `for` loop of its body) is rewritten into regions: a switch over
// the pieces of the body between two synchronisations, each ending where a thread arrives at
// one (region_arrive, then return).  The engine runs a region for every thread of the block,
// one after the other as a loop, exchanges what they brought, and runs the next region.  The
// values that live from one region into another (the declarations of the body whose names
// later regions use) are members of a struct, one per thread (region_state).  What the rewrite
// cannot follow (a synchronisation under a condition, in a nested loop, in a function of the
// kernel's own, a `return` before the last one, a `goto`, a declaration with `auto` that lives
// across) leaves the kernel to fibers.
#include "regions.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "../cuda_source.hpp"

namespace cunumpy::detail {
namespace {

struct Token {
  std::string_view text;
  std::size_t begin, end;  // offsets into the source
};

bool is_name(std::string_view t) {
  return !t.empty() && (std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_');
}

// C++ tokens with their offsets (numbers with their exponents, literals whole, "::" and "->"
// as one; a preprocessor line as one token starting with '#').
std::vector<Token> scan(std::string_view s) {
  std::vector<Token> out;
  std::size_t i = 0;
  bool line_start = true;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') {
      line_start = true;
      ++i;
      continue;
    }
    if (std::isspace(c)) {
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    if (c == '#' && line_start) {
      while (j < s.size() && !(s[j] == '\n' && s[j - 1] != '\\')) ++j;
    } else if (std::isalpha(c) || c == '_') {
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
    } else if (std::isdigit(c) || (c == '.' && j < s.size() && std::isdigit(s[j]))) {
      while (j < s.size()) {
        const char d = s[j];
        if ((d == '+' || d == '-') && std::strchr("eEpP", s[j - 1]) != nullptr) {
          ++j;
        } else if (std::isalnum(static_cast<unsigned char>(d)) || d == '.' || d == '_' ||
                   d == '\'') {
          ++j;
        } else {
          break;
        }
      }
    } else if (c == '"' || c == '\'') {
      while (j < s.size() && s[j] != static_cast<char>(c) && s[j] != '\n')
        j += s[j] == '\\' ? 2 : 1;
      j = std::min(j + 1, s.size());
    } else if ((c == ':' && j < s.size() && s[j] == ':') ||
               (c == '-' && j < s.size() && s[j] == '>')) {
      ++j;
    }
    out.push_back({s.substr(i, j - i), i, j});
    line_start = false;
    i = j;
  }
  return out;
}

// What the rewrite does with a synchronisation: the exchange it arrives at, and the type of what
// it gives back ("" for nothing).
struct Sync {
  enum Kind { barrier, shuffle, vote, block_vote, block_reduce, warp_reduce } kind;
  const char* exchange;  // the exchange (or the reduction's operation)
  const char* result;    // the result's type; "T" the value's
};

const std::map<std::string_view, Sync>& syncs() {
  static const std::map<std::string_view, Sync> table = {
      {"__syncthreads", {Sync::barrier, "::cunumpy_emulator::region_barrier", ""}},
      {"__syncwarp", {Sync::barrier, "::cunumpy_emulator::region_barrier", ""}},
      {"__shfl_sync",
       {Sync::shuffle, "::cunumpy_emulator::region_shuffle<::cunumpy_emulator::warp_shfl>", "T"}},
      {"__shfl_up_sync",
       {Sync::shuffle, "::cunumpy_emulator::region_shuffle<::cunumpy_emulator::warp_shfl_up>",
        "T"}},
      {"__shfl_down_sync",
       {Sync::shuffle, "::cunumpy_emulator::region_shuffle<::cunumpy_emulator::warp_shfl_down>",
        "T"}},
      {"__shfl_xor_sync",
       {Sync::shuffle, "::cunumpy_emulator::region_shuffle<::cunumpy_emulator::warp_shfl_xor>",
        "T"}},
      {"__ballot_sync",
       {Sync::vote, "::cunumpy_emulator::region_vote<::cunumpy_emulator::warp_ballot>",
        "unsigned"}},
      {"__any_sync",
       {Sync::vote, "::cunumpy_emulator::region_vote<::cunumpy_emulator::warp_any>", "int"}},
      {"__all_sync",
       {Sync::vote, "::cunumpy_emulator::region_vote<::cunumpy_emulator::warp_all>", "int"}},
      {"__syncthreads_count",
       {Sync::block_vote, "::cunumpy_emulator::region_block_vote<0>", "int"}},
      {"__syncthreads_and", {Sync::block_vote, "::cunumpy_emulator::region_block_vote<1>", "int"}},
      {"__syncthreads_or", {Sync::block_vote, "::cunumpy_emulator::region_block_vote<2>", "int"}},
      {"cunumpy_block_sum", {Sync::block_reduce, "::cunumpy::detail::ReduceSum", "T"}},
      {"cunumpy_block_min", {Sync::block_reduce, "::cunumpy::detail::ReduceMin", "T"}},
      {"cunumpy_block_max", {Sync::block_reduce, "::cunumpy::detail::ReduceMax", "T"}},
      {"cunumpy_warp_sum", {Sync::warp_reduce, "::cunumpy::detail::ReduceSum", "T"}},
      {"cunumpy_warp_min", {Sync::warp_reduce, "::cunumpy::detail::ReduceMin", "T"}},
      {"cunumpy_warp_max", {Sync::warp_reduce, "::cunumpy::detail::ReduceMax", "T"}}};
  return table;
}

struct Unsplittable {};  // thrown where the rewrite cannot follow: the kernel runs as fibers

class Splitter {
 public:
  Splitter(std::string_view src, const std::vector<Token>& t,
           const std::function<bool(std::string_view)>& synchronises)
      : src_(src), t_(t), synchronises_(synchronises) {}

  // The body between the braces at `open` and `close`, rewritten.
  std::string body(std::size_t open, std::size_t close) {
    std::vector<std::size_t> statements = split(open + 1, close);
    // Where the last synchronisation is: a `return` before it leaves the kernel to fibers.
    std::size_t last_sync = open;
    for (std::size_t i = open + 1; i < close; ++i) {
      if (t_[i].text == "goto") throw Unsplittable{};
      if (t_[i].text[0] == '#' &&
          t_[i].text.substr(1).find_first_not_of(" \t") != t_[i].text.substr(1).find("pragma"))
        throw Unsplittable{};  // a directive other than a #pragma (unroll, ...)
      if (is_sync(i)) last_sync = i;
    }
    for (std::size_t i = open + 1; i < last_sync; ++i) {
      if (t_[i].text == "]") i = past_lambda_body(i);  // a lambda's own return is its own
      if (i < last_sync && t_[i].text == "return") throw Unsplittable{};
    }
    regions_.emplace_back();
    for (std::size_t k = 0; k + 1 < statements.size(); ++k)
      statement(statements[k], statements[k + 1], true);
    return generate();
  }

 private:
  struct Part {
    std::string text;
    bool declaration = false;  // a statement that may declare names living across regions
  };
  struct Region {
    std::vector<Part> parts;
    std::string end;  // how it ends: an arrival and return, a goto; "" the kernel's end
  };
  struct Declarator {
    std::string name, type, array, init_kind, init;
  };

  std::string_view src_;
  const std::vector<Token>& t_;
  const std::function<bool(std::string_view)>& synchronises_;
  std::vector<Region> regions_;
  std::vector<std::string> hoisted_;

  // At a lambda's capture list's ']': the last token of its body ('}'); else `i`.
  std::size_t past_lambda_body(std::size_t i) const {
    std::size_t j = i + 1;
    if (j < t_.size() && t_[j].text == "(") j = match(j) + 1;
    while (j < t_.size() && (is_name(t_[j].text) || t_[j].text == "->" || t_[j].text == "::" ||
                             t_[j].text == "*" || t_[j].text == "&"))
      ++j;  // mutable, noexcept, a trailing return type
    return j < t_.size() && t_[j].text == "{" ? match(j) : i;
  }
  std::string_view text(std::size_t from, std::size_t to) const {  // tokens [from, to)
    if (from >= to) return {};
    return src_.substr(t_[from].begin, t_[to - 1].end - t_[from].begin);
  }
  bool is_sync(std::size_t i) const { return is_name(t_[i].text) && synchronises_(t_[i].text); }
  bool has_sync(std::size_t from, std::size_t to) const {
    for (std::size_t i = from; i < to; ++i)
      if (is_sync(i)) return true;
    return false;
  }
  std::size_t match(std::size_t open) const {
    const std::string_view o = t_[open].text;
    const std::string_view c = o == "(" ? ")" : o == "[" ? "]" : o == "<" ? ">" : "}";
    int depth = 0;
    for (std::size_t i = open; i < t_.size(); ++i) {
      if (t_[i].text == o) ++depth;
      if (t_[i].text == c && --depth == 0) return i;
    }
    throw Unsplittable{};
  }
  // The token ranges of a call's arguments, its parentheses at `open` and `close`.
  std::vector<std::pair<std::size_t, std::size_t>> arguments(std::size_t open,
                                                             std::size_t close) const {
    std::vector<std::pair<std::size_t, std::size_t>> args;
    int depth = 0;
    std::size_t from = open + 1;
    for (std::size_t i = open + 1; i <= close; ++i) {
      const std::string_view x = t_[i].text;
      if (x == "(" || x == "[") ++depth;
      if ((x == ")" || x == "]") && i < close) --depth;
      if ((depth == 0 && x == ",") || i == close) {
        if (i > from) args.emplace_back(from, i);
        from = i + 1;
      }
    }
    return args;
  }
  // Where the statement that starts at `i` ends (the token after it).
  std::size_t statement_end(std::size_t i, std::size_t to) const {
    if (i >= to) throw Unsplittable{};
    const std::string_view w = t_[i].text;
    if (w[0] == '#') return statement_end(i + 1, to);  // a #pragma: with the statement it precedes
    if (w == "{") return match(i) + 1;
    if (w == "if" || w == "while" || w == "for" || w == "switch") {
      if (i + 1 >= to || t_[i + 1].text != "(") throw Unsplittable{};
      std::size_t j = statement_end(match(i + 1) + 1, to);
      if (w == "if" && j < to && t_[j].text == "else") j = statement_end(j + 1, to);
      return j;
    }
    if (w == "do") {
      std::size_t j = statement_end(i + 1, to);
      if (j >= to || t_[j].text != "while") throw Unsplittable{};
      return match(j + 1) + 2;
    }
    int depth = 0;
    for (std::size_t j = i; j < to; ++j) {
      const std::string_view x = t_[j].text;
      if (x == "(" || x == "[" || x == "{") ++depth;
      if (x == ")" || x == "]" || x == "}") --depth;
      if (depth == 0 && x == ";") return j + 1;
    }
    throw Unsplittable{};
  }
  // The starts of the statements in [from, to), and `to`.
  std::vector<std::size_t> split(std::size_t from, std::size_t to) const {
    std::vector<std::size_t> starts;
    for (std::size_t i = from; i < to; i = statement_end(i, to)) starts.push_back(i);
    starts.push_back(to);
    return starts;
  }
  Region& current() { return regions_.back(); }
  int new_region() {
    regions_.emplace_back();
    return static_cast<int>(regions_.size()) - 1;
  }
  static std::string label(int r) { return "cunumpy_region_" + std::to_string(r); }

  void statement(std::size_t from, std::size_t to, bool top) {
    const std::string_view w = t_[from].text;
    // A #pragma before a synchronisation's statement or loop (unroll) only tunes the code the
    // split rewrites: left out.
    if (w[0] == '#' && has_sync(from, to)) return statement(from + 1, to, top);
    // Shared or static data in a loop's body would be a variable of each region's own.
    if (!top && (w == "__shared__" || w == "static")) throw Unsplittable{};
    if (!has_sync(from, to)) {
      static const std::set<std::string_view> hoist = {
          "using", "typedef", "constexpr", "static_assert", "__shared__", "static", "enum"};
      const bool type = (w == "struct" || w == "class" || w == "union") && to - from > 2 &&
                        t_[from + 2].text == "{";
      bool dynamic_shared = false;
      for (std::size_t i = from; i < to; ++i)
        dynamic_shared = dynamic_shared || t_[i].text == "cunumpy_emulator_dynamic_shared";
      if (top && (hoist.contains(w) || type || dynamic_shared)) {
        hoisted_.emplace_back(text(from, to));
        return;
      }
      if (!top)  // a loop body's own break and continue would leave the region, not the loop
        for (std::size_t i = from; i < to; ++i)
          if (t_[i].text == "break" || t_[i].text == "continue") throw Unsplittable{};
      const bool control = w == "if" || w == "for" || w == "while" || w == "do" || w == "switch" ||
                           w == "{" || w == "return";
      current().parts.push_back({std::string(text(from, to)), !control});
      return;
    }
    if (w == "for" && top) return loop(from, to);
    if (w == "if" || w == "for" || w == "while" || w == "do" || w == "switch" || w == "{" ||
        w == "return")
      throw Unsplittable{};
    synchronisation(from, to);
  }

  // for (init; condition; step) body: the condition opens a region of its own (the loop's head,
  // reached by a goto from before the loop and from the end of its body).
  void loop(std::size_t from, std::size_t to) {
    const std::size_t open = from + 1, close = match(open);
    std::vector<std::size_t> semis;
    int depth = 0;
    for (std::size_t i = open + 1; i < close; ++i) {
      const std::string_view x = t_[i].text;
      if (x == "(" || x == "[" || x == "{") ++depth;
      if (x == ")" || x == "]" || x == "}") --depth;
      if (depth == 0 && x == ";") semis.push_back(i);
    }
    if (semis.size() != 2 || has_sync(open, close + 1)) throw Unsplittable{};
    if (shuffle_loop(open, close, semis)) return;
    if (semis[0] > open + 1)
      current().parts.push_back({std::string(text(open + 1, semis[0] + 1)), true});
    const int h = static_cast<int>(regions_.size());  // the head: the region made next
    current().end = "goto " + label(h) + ";";
    new_region();
    const std::string_view condition = text(semis[0] + 1, semis[1]);
    const int exit_marker = static_cast<int>(exits_.size());
    exits_.push_back(-1);
    current().parts.push_back({"if (!(" + std::string(condition.empty() ? "true" : condition) +
                                   ")) goto @exit" + std::to_string(exit_marker) + "@;",
                               false});
    const std::size_t body = close + 1;
    if (t_[body].text == "{") {
      const std::size_t end = match(body);
      const auto statements = split(body + 1, end);
      for (std::size_t k = 0; k + 1 < statements.size(); ++k)
        statement(statements[k], statements[k + 1], false);
    } else {
      statement(body, to, false);
    }
    const std::string_view step = text(semis[1] + 1, close);
    if (!step.empty()) current().parts.push_back({"(void)(" + std::string(step) + ");", false});
    current().end = "goto " + label(h) + ";";
    exits_[exit_marker] = new_region();
  }
  std::vector<int> exits_;

  // Tokens that are numbers, operators, warpSize or the names in `names`, and no call.
  bool constant_of(std::size_t from, std::size_t to, const std::set<std::string_view>& names,
                   bool calls = false) const {
    for (std::size_t i = from; i < to; ++i) {
      const std::string_view x = t_[i].text;
      if (x == "=" && i + 1 < to && t_[i + 1].text == "=") {
        ++i;
        continue;
      }
      if (x == "=" && i > from && std::strchr("<>!", t_[i - 1].text[0]) != nullptr) continue;
      if (x == "=" || (x == "+" && i + 1 < to && t_[i + 1].text == "+") ||
          (x == "-" && i + 1 < to && t_[i + 1].text == "-"))
        return false;  // assignments are for the loop's step only
      if (is_name(x) && x != "warpSize" && !names.contains(x) &&
          !(calls && i + 1 < to && t_[i + 1].text == "(") && !(calls && x == "std") &&
          !(calls && i > from && t_[i - 1].text == "::"))
        return false;
      if (x == "{" || x == ";" || x == "?" || (x == "," && !calls) || x[0] == '"' || x[0] == '\'')
        return false;
    }
    return true;
  }

  // The warp-shuffle reduction idiom, a loop whose body is one statement combining a variable
  // with its value shuffled from another lane:
  //   for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(mask, v, o);
  // (any shuffle, any combination of v and the shuffled value, a loop of constants): one region
  // ends before it and the exchange runs the whole loop for each warp's lanes in lock step.
  bool shuffle_loop(std::size_t open, std::size_t close, const std::vector<std::size_t>& semis) {
    // for (TYPE o = constant; condition of o; step of o)
    std::size_t i = open + 1;
    while (i < semis[0] && t_[i].text != "=") ++i;
    if (i >= semis[0] || i < open + 3 || !is_name(t_[i - 1].text)) return false;
    const std::string_view o = t_[i - 1].text;
    for (std::size_t j = open + 1; j + 1 < i; ++j)
      if (!is_name(t_[j].text)) return false;  // int, unsigned, unsigned int, ...
    if (!constant_of(i + 1, semis[0], {}) || !constant_of(semis[0] + 1, semis[1], {o}))
      return false;
    for (std::size_t j = semis[1] + 1; j < close; ++j) {
      const std::string_view x = t_[j].text;
      if (is_name(x) && x != o && x != "warpSize") return false;
    }
    // One statement: v = ...;  or  v op= ...;  holding one shuffle of v by an offset of o.
    std::size_t from = close + 1, to = 0;
    if (t_[from].text == "{") {
      const auto statements = split(from + 1, match(from));
      if (statements.size() != 2) return false;
      to = statements[1];
      from = statements[0];
    } else {
      to = statement_end(from, t_.size());
    }
    if (to - from < 4 || !is_name(t_[from].text) || t_[to - 1].text != ";") return false;
    const std::string_view v = t_[from].text;
    std::size_t shuffle = to;
    for (std::size_t j = from; j < to; ++j)
      if (is_sync(j)) {
        if (shuffle != to) return false;
        shuffle = j;
      }
    static const std::map<std::string_view, std::string_view> ops = {
        {"__shfl_sync", "warp_shfl"},
        {"__shfl_up_sync", "warp_shfl_up"},
        {"__shfl_down_sync", "warp_shfl_down"},
        {"__shfl_xor_sync", "warp_shfl_xor"}};
    const auto op = ops.find(t_[shuffle].text);
    if (op == ops.end() || shuffle + 1 >= to || t_[shuffle + 1].text != "(") return false;
    const std::size_t args_close = match(shuffle + 1);
    const auto args = arguments(shuffle + 1, args_close);
    if (args.size() < 3 || args.size() > 4) return false;
    if (args[1].second != args[1].first + 1 || t_[args[1].first].text != v) return false;
    if (!constant_of(args[0].first, args[0].second, {}) ||
        !constant_of(args[2].first, args[2].second, {o}) ||
        (args.size() == 4 && !constant_of(args[3].first, args[3].second, {})))
      return false;
    // The combination: v, o, numbers and calls (fmax, min, ...) around the shuffle.
    const std::size_t first = from + 1;
    if (!(t_[first].text == "=" ||
          (std::strchr("+-*/&|^", t_[first].text[0]) != nullptr && t_[first + 1].text == "=")))
      return false;
    if (!constant_of(t_[first].text == "=" ? first + 1 : first + 2, shuffle, {v, o}, true) ||
        !constant_of(args_close + 1, to - 1, {v, o}, true))
      return false;
    const std::string type = "std::decay_t<decltype(" + std::string(v) + ")>";
    const std::string combine =
        "decltype([](auto " + std::string(v) + ", auto cunumpy_shuffled, auto " + std::string(o) +
        ") { " + std::string(text(from, shuffle)) + " cunumpy_shuffled " +
        std::string(text(args_close + 1, to)) + " return " + std::string(v) + "; })";
    const std::string loop =
        "decltype([](auto cunumpy_step) { for (" + std::string(text(open + 1, semis[1] + 1)) + " " +
        std::string(text(semis[1] + 1, close)) + ") cunumpy_step(" + std::string(o) + "); })";
    const int next = static_cast<int>(regions_.size());
    current().parts.push_back(
        {"::cunumpy_emulator::region_arrive(" + std::to_string(next) +
             ", &::cunumpy_emulator::region_shuffle_loop<" + type +
             ", ::cunumpy_emulator::" + std::string(op->second) + ", " + combine + ", " + loop +
             ">, \"a warp-shuffle loop\", ::cunumpy_emulator::bits_of(" + std::string(v) +
             "), 0, " +
             (args.size() == 4
                  ? "static_cast<int>(" + std::string(text(args[3].first, args[3].second)) + ")"
                  : std::string("32")) +
             ");",
         false});
    current().end = "return;";
    new_region();
    current().parts.push_back(
        {std::string(v) + " = ::cunumpy_emulator::region_result<" + type + ">();", false});
    return true;
  }

  // A statement holding one synchronisation: its region ends where the call's arguments have
  // been evaluated (the thread arrives), and the next one begins with the rest of the statement,
  // the call replaced by what the exchange gave the thread.
  void synchronisation(std::size_t from, std::size_t to) {
    std::size_t at = to;
    for (std::size_t i = from; i < to; ++i)
      if (is_sync(i)) {
        if (at != to) throw Unsplittable{};  // two in one statement
        at = i;
      }
    // Not under a condition (?:, && and || around the call; in its arguments they are
    // evaluated whatever they hold), nor in a lambda or a braced initialiser.
    std::size_t call_end = at + 1;
    if (call_end < to && t_[call_end].text == "<") call_end = match(call_end) + 1;
    if (call_end < to && t_[call_end].text == "(") call_end = match(call_end) + 1;
    for (std::size_t i = from; i < to; ++i) {
      const std::string_view x = t_[i].text;
      const bool outside = i < at || i >= call_end;
      if (x == "{" ||
          (outside && (x == "?" || x == "|" || (x == "&" && i + 1 < to && t_[i + 1].text == "&"))))
        throw Unsplittable{};
    }
    const auto found = syncs().find(t_[at].text);
    if (found == syncs().end()) throw Unsplittable{};  // a function of the kernel's own
    const Sync& sync = found->second;
    std::size_t open = at + 1;
    std::string explicit_type;
    if (open < to && t_[open].text == "<") {
      const std::size_t c = match(open);
      explicit_type = text(open + 1, c);
      open = c + 1;
    }
    if (open >= to || t_[open].text != "(") throw Unsplittable{};
    const std::size_t close = match(open);
    const auto args = arguments(open, close);
    auto arg = [&](std::size_t k) -> std::string {
      if (k >= args.size()) throw Unsplittable{};
      return "(" + std::string(text(args[k].first, args[k].second)) + ")";
    };
    const std::size_t value_arg = sync.kind == Sync::shuffle || sync.kind == Sync::vote ? 1 : 0;
    std::string type = sync.result;
    if (type == "T")
      type =
          !explicit_type.empty() ? explicit_type : "std::decay_t<decltype(" + arg(value_arg) + ")>";
    const int next = static_cast<int>(regions_.size());
    const std::string name = "\"" + std::string(t_[at].text) + "\"";
    std::string arrive;
    switch (sync.kind) {
      case Sync::barrier:
        arrive = "::cunumpy_emulator::region_arrive(" + std::to_string(next) + ", &" +
                 sync.exchange + ", " + name + ");";
        break;
      case Sync::shuffle:
        arrive = "::cunumpy_emulator::region_arrive(" + std::to_string(next) + ", &" +
                 sync.exchange + ", " + name + ", ::cunumpy_emulator::bits_of(static_cast<" + type +
                 ">" + arg(1) + "), static_cast<int>" + arg(2) + ", " +
                 (args.size() > 3 ? "static_cast<int>" + arg(3) : std::string("32")) + ");";
        break;
      case Sync::vote:
        arrive = "::cunumpy_emulator::region_arrive(" + std::to_string(next) + ", &" +
                 sync.exchange + ", " + name + ", " + arg(1) + " != 0, static_cast<int>" + arg(0) +
                 ");";
        break;
      case Sync::block_vote:
        arrive = "::cunumpy_emulator::region_arrive(" + std::to_string(next) + ", &" +
                 sync.exchange + ", " + name + ", " + arg(0) + " != 0);";
        break;
      case Sync::block_reduce:
      case Sync::warp_reduce:
        arrive = std::string(sync.kind == Sync::block_reduce ? "::cunumpy::detail::region_block<"
                                                             : "::cunumpy::detail::region_warp<") +
                 type + ", " + sync.exchange + ">(" + std::to_string(next) + ", " + arg(0) + ");";
        break;
    }
    current().parts.push_back({arrive, false});
    current().end = "return;";
    new_region();
    const std::string before(text(from, at)), after(text(close + 1, to));
    if (sync.result[0] == '\0') {
      if (!before.empty() || after != ";") throw Unsplittable{};
      return;
    }
    current().parts.push_back(
        {before + " ::cunumpy_emulator::region_result<" + type + ">() " + after, true});
  }

  // A declaration's declarators, or nothing when the statement declares nothing this rewrite
  // can keep across regions.
  static std::optional<std::vector<Declarator>> declarators(std::string_view statement,
                                                            bool& unsupported) {
    const std::vector<Token> t = scan(statement);
    unsupported = false;
    if (t.size() < 3 || t.back().text != ";") return std::nullopt;
    static const std::set<std::string_view> not_types = {
        "return",  "goto", "break", "continue", "delete", "throw",    "case",
        "default", "else", "do",    "new",      "sizeof", "co_return"};
    if (!is_name(t[0].text) || not_types.contains(t[0].text)) return std::nullopt;
    // The type: names, "::", template arguments, '*' and '&' up to the first declarator's name.
    std::size_t i = 0;
    std::string base;
    std::size_t name_at = t.size();
    while (i < t.size()) {
      const std::string_view x = t[i].text;
      if (is_name(x) && i + 1 < t.size()) {
        const std::string_view n = t[i + 1].text;
        if (n == "=" || n == ";" || n == "," || n == "[" || n == "(" || n == "{") {
          name_at = i;
          break;
        }
      }
      if (x == "<") {
        int depth = 0;
        std::size_t j = i;
        for (; j < t.size(); ++j) {
          if (t[j].text == "<") ++depth;
          if (t[j].text == ">" && --depth == 0) break;
        }
        if (j == t.size()) return std::nullopt;
        i = j + 1;
        continue;
      }
      if (!(is_name(x) || x == "::" || x == "*" || x == "&")) return std::nullopt;
      ++i;
    }
    if (name_at == t.size() || name_at == 0) return std::nullopt;
    const std::string_view last = t[name_at - 1].text;
    if (!(is_name(last) || last == ">" || last == "*" || last == "&")) return std::nullopt;
    bool any_name = false;
    for (std::size_t j = 0; j < name_at; ++j) {
      const std::string_view x = t[j].text;
      if (x == "auto" || x == "decltype" || x == "&") unsupported = true;
      any_name = any_name || is_name(x);
    }
    if (!any_name) return std::nullopt;
    // The base type: the tokens before the first declarator, its own '*' and '&' aside.
    std::size_t base_end = name_at;
    while (base_end > 0 && (t[base_end - 1].text == "*" || t[base_end - 1].text == "&")) --base_end;
    base = std::string(statement.substr(t[0].begin, t[base_end - 1].end - t[0].begin));
    std::vector<Declarator> out;
    std::size_t j = base_end;
    while (j + 1 < t.size()) {
      Declarator d;
      std::string pointers;
      while (j < t.size() && (t[j].text == "*" || t[j].text == "&" || t[j].text == "const")) {
        pointers += " ";
        pointers += t[j].text;
        if (t[j].text == "&") unsupported = true;
        ++j;
      }
      if (j >= t.size() || !is_name(t[j].text)) return std::nullopt;
      d.name = t[j].text;
      d.type = base + pointers;
      ++j;
      while (j < t.size() && t[j].text == "[") {
        std::size_t c = j;
        int depth = 0;
        for (; c < t.size(); ++c) {
          if (t[c].text == "[") ++depth;
          if (t[c].text == "]" && --depth == 0) break;
        }
        if (c == t.size()) return std::nullopt;
        d.array += statement.substr(t[j].begin, t[c].end - t[j].begin);
        j = c + 1;
      }
      // The initialiser, to the next ',' or ';' outside brackets.
      if (j < t.size() && (t[j].text == "=" || t[j].text == "(" || t[j].text == "{")) {
        d.init_kind = t[j].text;
        const std::size_t from = t[j].text == "=" ? j + 1 : j;
        int depth = 0;
        std::size_t k = from;
        for (; k < t.size(); ++k) {
          const std::string_view x = t[k].text;
          if (x == "(" || x == "[" || x == "{") ++depth;
          if (x == ")" || x == "]" || x == "}") --depth;
          if (depth == 0 && (x == "," || x == ";")) break;
        }
        if (k == t.size() || k == from) return std::nullopt;
        d.init = statement.substr(t[from].begin, t[k - 1].end - t[from].begin);
        j = k;
      }
      out.push_back(d);
      if (j < t.size() && t[j].text == ",") {
        ++j;
        continue;
      }
      if (j < t.size() && t[j].text == ";") break;
      return std::nullopt;
    }
    return out;
  }

  static bool mentions(std::string_view code, const std::string& name) {
    for (const Token& tok : scan(code))
      if (tok.text == name) return true;
    return false;
  }
  static bool region_mentions(const Region& r, const std::string& name) {
    for (const Part& p : r.parts)
      if (mentions(p.text, name)) return true;
    return mentions(r.end, name);
  }

  std::string generate() {
    // The declarations whose names other regions use live in each thread's state.
    struct Living {
      std::string name, type, array;
      std::size_t region;
    };
    std::vector<Living> living;
    std::vector<std::vector<std::optional<std::vector<Declarator>>>> decls(regions_.size());
    for (std::size_t r = 0; r < regions_.size(); ++r) {
      decls[r].resize(regions_[r].parts.size());
      for (std::size_t p = 0; p < regions_[r].parts.size(); ++p) {
        if (!regions_[r].parts[p].declaration) continue;
        bool unsupported = false;
        auto ds = declarators(regions_[r].parts[p].text, unsupported);
        if (!ds) continue;
        bool lives = false;
        for (const Declarator& d : *ds) {
          bool elsewhere = false;
          for (std::size_t o = 0; o < regions_.size() && !elsewhere; ++o)
            elsewhere = o != r && region_mentions(regions_[o], d.name);
          if (!elsewhere) continue;
          if (unsupported || (!d.array.empty() && !d.init.empty() && d.init_kind != "="))
            throw Unsplittable{};
          for (const Living& l : living)
            if (l.name == d.name) throw Unsplittable{};
          living.push_back({d.name, d.type, d.array, r});
          lives = true;
        }
        if (lives) decls[r][p] = std::move(ds);
      }
    }
    auto is_living = [&](const std::string& name) {
      return std::any_of(living.begin(), living.end(),
                         [&](const Living& l) { return l.name == name; });
    };
    std::string out = "\n";
    for (const std::string& h : hoisted_) out += h + "\n";
    out += "struct cunumpy_region_state {";
    for (const Living& l : living)
      out += " std::remove_const_t<" + l.type + "> " + l.name + l.array + ";";
    out +=
        " };\ncunumpy_region_state& cunumpy_state = "
        "::cunumpy_emulator::region_state<cunumpy_region_state>();\n"
        "switch (::cunumpy_emulator::region_now()) {\n";
    for (std::size_t r = 0; r < regions_.size(); ++r) {
      out += "case " + std::to_string(r) + ": " + label(static_cast<int>(r)) + ": {";
      for (const Living& l : living)
        if (l.region != r) out += " auto& " + l.name + " = cunumpy_state." + l.name + ";";
      out += "\n{\n";
      for (std::size_t p = 0; p < regions_[r].parts.size(); ++p) {
        if (!decls[r][p]) {
          out += regions_[r].parts[p].text + "\n";
          continue;
        }
        for (const Declarator& d : *decls[r][p]) {
          if (!is_living(d.name)) {
            out += d.type + " " + d.name + d.array + (d.init_kind == "=" ? " = " : " ") + d.init +
                   ";\n";
            continue;
          }
          if (!d.array.empty() && !d.init.empty())  // an array's initialiser: through a copy
            out += "{ std::remove_const_t<" + d.type + "> cunumpy_init" + d.array + " = " + d.init +
                   "; std::memcpy(&cunumpy_state." + d.name +
                   ", &cunumpy_init, sizeof cunumpy_init); }\n";
          else if (d.init_kind == "=")
            out += "cunumpy_state." + d.name + " = " + d.init + ";\n";
          else if (!d.init_kind.empty())
            out += "cunumpy_state." + d.name + " = std::remove_const_t<" + d.type + ">" + d.init +
                   ";\n";
          out += (d.array.empty() ? d.type + "&" : std::string("auto&")) + " " + d.name +
                 " = cunumpy_state." + d.name + ";\n";
        }
      }
      out += (regions_[r].end.empty() ? std::string("return;") : regions_[r].end) + "\n}}\n";
    }
    out += "}\n";
    // The loops' exits, now that their regions are numbered.
    for (std::size_t e = 0; e < exits_.size(); ++e) {
      const std::string marker = "@exit" + std::to_string(e) + "@";
      for (std::size_t at = out.find(marker); at != std::string::npos; at = out.find(marker))
        out.replace(at, marker.size(), label(exits_[e]));
    }
    return out;
  }
};

}  // namespace

std::string split_into_regions(std::string_view source, const std::set<std::string>& kernels,
                               const std::function<bool(std::string_view)>& synchronises,
                               const std::string& source_name, std::set<std::string>& split) {
  const std::vector<Token> t = scan(source);
  std::string out;
  std::size_t copied = 0;  // offset of source copied to out
  int depth = 0;
  std::size_t statement = 0;  // the first token of the current declaration at depth 0
  for (std::size_t i = 0; i < t.size(); ++i) {
    const std::string_view x = t[i].text;
    if (x == "{") {
      ++depth;
    } else if (x == "}") {
      if (--depth <= 0) {
        depth = 0;
        statement = i + 1;
      }
    } else if (x == ";" && depth == 0) {
      statement = i + 1;
    }
    if (depth != 0 || !kernels.contains(std::string(x)) || i + 1 >= t.size() ||
        t[i + 1].text != "(")
      continue;
    bool global = false;
    for (std::size_t j = statement; j < i; ++j) global = global || t[j].text == "__global__";
    if (!global) continue;
    // The parameter list, then the body (a declaration without one is passed by).
    int parens = 0;
    std::size_t j = i + 1;
    for (; j < t.size(); ++j) {
      if (t[j].text == "(") ++parens;
      if (t[j].text == ")" && --parens == 0) break;
    }
    while (j < t.size() && t[j].text != "{" && t[j].text != ";") ++j;
    if (j >= t.size() || t[j].text != "{") continue;
    int braces = 0;
    std::size_t close = j;
    for (; close < t.size(); ++close) {
      if (t[close].text == "{") ++braces;
      if (t[close].text == "}" && --braces == 0) break;
    }
    if (close >= t.size()) break;
    try {
      Splitter splitter(source, t, synchronises);
      const std::string body = splitter.body(j, close);
      out.append(source.substr(copied, t[j].end - copied));
      out += body;
      const auto line = 1 + std::count(source.begin(), source.begin() + t[close].begin, '\n');
      out += "}\n#line " + std::to_string(line) + " \"" + source_name + "\"\n";
      copied = t[close].end;
      split.insert(std::string(x));
    } catch (const Unsplittable&) {
    }
    i = close;
    statement = close + 1;
  }
  out.append(source.substr(copied));
  return out;
}

}  // namespace cunumpy::detail
