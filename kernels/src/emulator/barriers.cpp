// The kernel emulator's search for barriers, kernel by kernel: which kernels of a source may
// reach a barrier or a warp operation (and so need their threads as fibers) and which can run
// their threads as a loop.  A kernel needs fibers when its body, or a function or macro it
// names (directly or through others), holds one; the search reads the source, the headers it
// includes and the -D options as text, and answers "fibers" wherever it cannot tell (a kernel
// whose definition it does not find, a barrier outside every function and macro).  A barrier
// it misses is reached in loop mode and reported by the engine, never a wrong result.
#include "barriers.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "../cuda_source.hpp"

namespace cunumpy::detail {
namespace {

// A name that synchronises threads: __syncthreads (and _count/_and/_or), __syncwarp, the *_sync
// warp operations (__shfl_sync, __ballot_sync, ...; not a bare "__sync"), the block and warp
// reductions of cunumpy/reduce.cuh.
bool is_sync(std::string_view t) {
  return t.find("__syncthreads") != std::string_view::npos ||
         t.find("__syncwarp") != std::string_view::npos ||
         t.find("block_reduce") != std::string_view::npos ||
         t.find("warp_reduce") != std::string_view::npos ||
         (t.size() > 5 && t.substr(t.size() - 5) == "_sync" &&
          t.substr(0, t.size() - 5).find_first_not_of('_') != std::string_view::npos);
}

// Functions that synchronise on a GPU but not in the emulator: cunumpy_block_sum_to gathers
// its block's values without a barrier (the engine adds the sum at the last thread's call), so
// a kernel whose only synchronisation it is still runs its threads as a loop.
bool never_sync(std::string_view name) {
  return name == "cunumpy_block_sum_to";
}

// What a function or macro of that name holds: whether it synchronises itself, and the names
// it mentions.  Overloads and a macro of the same name are one entry (the answer is "fibers"
// when any of them needs them).
struct Entry {
  bool sync = false;
  bool function = false;  // a function of this name was defined (not only a macro)
  std::set<std::string> names;
};

void add_tokens(Entry& e, const std::vector<std::string>& tokens, std::size_t from,
                std::size_t to) {
  for (std::size_t i = from; i < to; ++i) {
    if (!is_identifier(tokens[i])) continue;
    if (is_sync(tokens[i])) e.sync = true;
    e.names.insert(tokens[i]);
  }
}

// Code without its preprocessor lines (the #define bodies go to `macros`), char and string
// literals blanked (a brace in one does not count).
std::string code_and_macros(std::string_view source, std::map<std::string, Entry>& macros) {
  std::string code;
  std::size_t at = 0;
  while (at < source.size()) {
    // One logical line: physical lines joined where one ends in a backslash.
    std::string line;
    while (at < source.size()) {
      std::size_t end = source.find('\n', at);
      if (end == std::string_view::npos) end = source.size();
      std::string_view piece = source.substr(at, end - at);
      at = end + 1;
      if (!piece.empty() && piece.back() == '\\') {
        line.append(piece.substr(0, piece.size() - 1));
        line += ' ';
        continue;
      }
      line.append(piece);
      break;
    }
    const std::size_t first = line.find_first_not_of(" \t");
    if (first != std::string::npos && line[first] == '#') {
      const auto tokens = tokenize(std::string_view(line).substr(first + 1));
      if (tokens.size() >= 2 && tokens[0] == "define" && is_identifier(tokens[1]))
        add_tokens(macros[tokens[1]], tokens, 2, tokens.size());
      code += '\n';
      continue;
    }
    code += line;
    code += '\n';
  }
  // Literals blanked; a quote between two digits is a digit separator (1'000'000).
  for (std::size_t i = 0; i < code.size(); ++i) {
    const char q = code[i];
    if (q != '"' && q != '\'') continue;
    if (q == '\'' && i > 0 && i + 1 < code.size() &&
        std::isalnum(static_cast<unsigned char>(code[i - 1])) &&
        std::isalnum(static_cast<unsigned char>(code[i + 1])))
      continue;
    std::size_t j = i + 1;
    while (j < code.size() && code[j] != q && code[j] != '\n') {
      if (code[j] == '\\') code[j++] = ' ';
      if (j < code.size()) code[j++] = ' ';
    }
    i = j;
  }
  return code;
}

// Where a header's template parameter list ends (the token after its '>'), or `i` when the
// header has none at `i`.
std::size_t after_template(const std::vector<std::string>& t, std::size_t i, std::size_t to) {
  if (i + 1 >= to || t[i] != "template" || t[i + 1] != "<") return i;
  return std::min(closing(t, i + 1) + 1, to);
}

// Where a function header's constructor initialiser list starts (its ':' after the parameter
// list), or `to` when it has none.
std::size_t initialisers(const std::vector<std::string>& t, std::size_t from, std::size_t to) {
  int depth = 0;
  bool params = false;
  for (std::size_t i = after_template(t, from, to); i < to; ++i) {
    if (t[i] == "(") {
      ++depth;
      params = true;
    } else if (t[i] == ")") {
      --depth;
    } else if (depth == 0 && params && t[i] == ":") {
      return i;
    }
  }
  return to;
}

// The name of the function a block's header (the tokens before its '{') defines, or "" when the
// header is not a function's (a namespace, a class, an extern "C" block, an initialiser, a
// lambda at namespace scope): the last name at parenthesis depth 0 followed by '(' (the one
// before the parameter list: `__launch_bounds__(256) push(...)`, a macro call before the
// definition, a trailing `noexcept(...)` aside), before any initialiser list.
std::string function_name(const std::vector<std::string>& t, std::size_t from, std::size_t to) {
  static const std::set<std::string> not_names = {
      "__attribute__", "__launch_bounds__", "__align__", "alignas",  "decltype",      "__declspec",
      "sizeof",        "alignof",           "noexcept",  "requires", "static_assert", "throw",
      "__device__",    "__host__",          "__global__"};
  const std::size_t end = initialisers(t, from, to);
  int depth = 0;
  std::string name;
  for (std::size_t i = after_template(t, from, end); i < end; ++i) {
    if (t[i] == "(") {
      ++depth;
    } else if (t[i] == ")") {
      --depth;
    } else if (depth == 0 && t[i] == "operator") {
      return "operator";
    } else if (depth == 0 && t[i] == "=") {
      return "";  // an initialiser (a variable, a lambda), not a function
    } else if (depth == 0 && is_identifier(t[i]) && i + 1 < end && t[i + 1] == "(" &&
               !not_names.contains(t[i])) {
      name = t[i];
    }
  }
  return name;
}

}  // namespace

std::vector<bool> kernels_with_barriers(std::string_view source,
                                        const std::vector<std::string>& headers,
                                        const std::vector<std::string>& options,
                                        const std::vector<std::string>& kernels,
                                        std::set<std::string>* synchronising) {
  std::map<std::string, Entry> entries;  // functions and macros by name
  bool unattributed = false;             // a sync name outside every function and macro
  std::vector<std::string_view> texts{source};
  for (const std::string& h : headers) texts.emplace_back(h);
  for (std::string_view text : texts) {
    const auto t = tokenize(code_and_macros(strip_comments(text), entries));
    // Blocks: a function's body is the outermost block whose header names a function.
    struct Frame {
      bool in_function;
      std::string name;  // the function whose body this block is ("" for any other)
      std::size_t open;
    };
    std::vector<Frame> frames;
    std::size_t header = 0;  // where the current block's header starts
    auto in_function = [&] { return !frames.empty() && frames.back().in_function; };
    // Sync names met outside every function body, decided where their declaration ends: the
    // name a function's definition or declaration gives itself (reduce.cuh defines
    // block_reduce) is not a use; any other (an initialiser, a lambda at namespace scope) is.
    std::vector<std::size_t> pending;
    auto settle = [&](const std::string& declared) {
      for (std::size_t p : pending)
        if (t[p] != declared) unattributed = true;
      pending.clear();
    };
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t[i] == ";") {
        if (!in_function()) {
          settle(function_name(t, header, i));
          header = i + 1;
        }
      } else if (t[i] == "{") {
        if (in_function()) {
          frames.push_back({true, "", i});
          continue;
        }
        std::string name = function_name(t, header, i);
        settle(name);
        // A member's brace initialiser in a constructor's initialiser list is not the body.
        if (!name.empty() && initialisers(t, header, i) < i && i > header &&
            (is_identifier(t[i - 1]) || t[i - 1] == ">")) {
          i = closing(t, i);
          continue;
        }
        frames.push_back({!name.empty(), name, i});
      } else if (t[i] == "}") {
        if (!in_function()) settle("");
        if (frames.empty()) continue;   // unbalanced (a stray brace): the tokens that follow
        const Frame f = frames.back();  // still count, outside every function
        frames.pop_back();
        if (!f.name.empty()) {
          Entry& e = entries[f.name];
          e.function = true;
          add_tokens(e, t, f.open + 1, i);
        }
        if (!in_function()) header = i + 1;
      } else if (!in_function() && is_identifier(t[i]) && is_sync(t[i])) {
        pending.push_back(i);  // at namespace or class scope: settled where its declaration ends
      }
    }
    settle("");
    // A body left open at the end (unbalanced braces): its function's name is kept, undefined.
    for (const Frame& f : frames)
      if (!f.name.empty()) add_tokens(entries[f.name], t, f.open + 1, t.size());
  }
  // -D options: a macro each (-DNAME, -DNAME=value, -DNAME(args)=value).
  for (const std::string& o : options) {
    if (o.rfind("-D", 0) != 0) continue;
    const auto tokens = tokenize(std::string_view(o).substr(2));
    if (!tokens.empty() && is_identifier(tokens[0])) {
      add_tokens(entries[tokens[0]], tokens, 1, tokens.size());
    } else {
      for (const auto& tok : tokens) unattributed = unattributed || is_sync(tok);
    }
  }
  // Needing fibers spreads from what synchronises to every name that mentions it.
  std::set<std::string> syncing;
  for (const auto& [name, e] : entries)
    if ((e.sync || is_sync(name)) && !never_sync(name)) syncing.insert(name);
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [name, e] : entries) {
      if (syncing.contains(name) || never_sync(name)) continue;
      for (const std::string& n : e.names)
        if (syncing.contains(n)) {
          syncing.insert(name);
          changed = true;
          break;
        }
    }
  }
  if (synchronising != nullptr) *synchronising = syncing;
  const bool any = unattributed || !syncing.empty();
  std::vector<bool> out;
  for (const std::string& expression : kernels) {
    const auto found = entries.find(kernel_name(expression));
    if (unattributed || found == entries.end() || !found->second.function)
      out.push_back(any);  // cannot tell: fibers whenever the source synchronises anywhere
    else
      out.push_back(syncing.contains(found->first));
  }
  return out;
}

std::string kernel_name(std::string_view expression) {
  std::string name;
  for (const auto& tok : tokenize(expression)) {
    if (tok == "<") break;
    if (is_identifier(tok)) name = tok;
  }
  return name;
}

bool synchronises(std::string_view name, const std::set<std::string>& synchronising) {
  return !never_sync(name) && (is_sync(name) || synchronising.contains(std::string(name)));
}

}  // namespace cunumpy::detail
