// C types, kernel signatures, includes and hashes of run-time compiled kernels
// (cuda_signature.hpp).
#include <cunumpy/cuda_signature.hpp>

#include <openssl/evp.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <unordered_map>

#include <cunumpy/errors.hpp>
#include <cunumpy/files.hpp>

#include "cuda_source.hpp"
#include "embedded_headers.hpp"
#include "kernel_cache.hpp"

namespace cunumpy {
namespace detail {

std::string strip_comments(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"' || c == '\'') {  // a literal: copied whole (escapes included)
      const char quote = c;
      out += c;
      ++i;
      while (i < s.size() && s[i] != quote && s[i] != '\n') {
        if (s[i] == '\\' && i + 1 < s.size()) out += s[i++];
        out += s[i++];
      }
      if (i < s.size()) out += s[i++];
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      i += 2;
      while (i + 1 < s.size() && !(s[i] == '*' && s[i + 1] == '/')) {
        if (s[i] == '\n') out += '\n';
        ++i;
      }
      i = std::min(s.size(), i + 2);
      out += ' ';
    } else {
      out += c;
      ++i;
    }
  }
  return out;
}

std::vector<std::string> tokenize(std::string_view s) {
  std::vector<std::string> tokens;
  std::size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (std::isspace(c)) {
      ++i;
    } else if (std::isalpha(c) || c == '_') {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_')) ++j;
      tokens.emplace_back(s.substr(i, j - i));
      i = j;
    } else if (std::isdigit(c)) {
      std::size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
      tokens.emplace_back(s.substr(i, j - i));
      i = j;
    } else if (c == ':' && i + 1 < s.size() && s[i + 1] == ':') {
      tokens.emplace_back("::");
      i += 2;
    } else if (c == '"') {
      std::size_t j = i + 1;
      while (j < s.size() && s[j] != '"') j += s[j] == '\\' ? 2 : 1;
      tokens.emplace_back(s.substr(i, std::min(j + 1, s.size()) - i));
      i = j + 1;
    } else {
      tokens.emplace_back(1, static_cast<char>(c));
      ++i;
    }
  }
  return tokens;
}

bool is_identifier(std::string_view t) {
  return !t.empty() && (std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_');
}

std::size_t closing(const std::vector<std::string>& t, std::size_t open) {
  const std::string o = t[open], c = o == "(" ? ")" : o == "<" ? ">" : o == "[" ? "]" : "}";
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    if (t[i] == o) ++depth;
    if (t[i] == c && --depth == 0) return i;
  }
  return t.size();
}

namespace {

struct Global {
  std::string name;
  std::size_t params_open = 0, params_close = 0;              // token indices of ( and )
  std::vector<std::pair<bool, std::string>> template_params;  // (is a type, name)
  bool is_template = false;
};

// Every __global__ function of a (comment-free) token stream, in order.
std::vector<Global> globals(const std::vector<std::string>& t) {
  std::vector<Global> out;
  for (std::size_t g = 0; g < t.size(); ++g) {
    if (t[g] != "__global__") continue;
    Global f;
    std::size_t i = g + 1;
    for (; i < t.size(); ++i) {
      if (t[i] == "__launch_bounds__" && i + 1 < t.size() && t[i + 1] == "(") {
        i = closing(t, i + 1);
        continue;
      }
      if (is_identifier(t[i]) && i + 1 < t.size() && t[i + 1] == "(") break;
      if (t[i] == ";" || t[i] == "{" || t[i] == "(") {
        i = t.size();
        break;
      }
    }
    if (i >= t.size()) continue;
    f.name = t[i];
    f.params_open = i + 1;
    f.params_close = closing(t, i + 1);
    if (f.params_close >= t.size()) continue;
    // A template: the nearest "template <...>" before __global__, with only specifiers between.
    std::size_t back = g;
    while (back > 0 && (t[back - 1] == "static" || t[back - 1] == "inline" ||
                        t[back - 1] == "__forceinline__" || t[back - 1] == "__noinline__"))
      --back;
    if (back > 0 && t[back - 1] == ">") {
      int depth = 0;
      std::size_t open = back - 1;
      for (;; --open) {
        if (t[open] == ">") ++depth;
        if (t[open] == "<" && --depth == 0) break;
        if (open == 0) break;
      }
      if (t[open] == "<" && open > 0 && t[open - 1] == "template") {
        f.is_template = true;
        std::vector<std::string> param;
        auto flush = [&] {
          if (param.empty()) return;
          const std::size_t eq =
              static_cast<std::size_t>(std::find(param.begin(), param.end(), "=") - param.begin());
          const bool type = param[0] == "typename" || param[0] == "class";
          const std::string pname = eq > 0 ? param[eq - 1] : param.back();
          f.template_params.emplace_back(type, pname);
          param.clear();
        };
        int d = 0;
        for (std::size_t k = open + 1; k < back - 1; ++k) {
          if (t[k] == "<" || t[k] == "(") ++d;
          if (t[k] == ">" || t[k] == ")") --d;
          if (t[k] == "," && d == 0) {
            flush();
            continue;
          }
          param.push_back(t[k]);
        }
        flush();
      }
    }
    out.push_back(std::move(f));
  }
  return out;
}

const std::unordered_map<std::string, DType>& scalar_types() {
  static const std::unordered_map<std::string, DType> m = {
      {"bool", DType::boolean},
      {"char", DType::int8},  // signed on the LP64 targets CUDA supports
      {"signed char", DType::int8},
      {"int8_t", DType::int8},
      {"unsigned char", DType::uint8},
      {"uint8_t", DType::uint8},
      {"short", DType::int16},
      {"short int", DType::int16},
      {"signed short", DType::int16},
      {"int16_t", DType::int16},
      {"unsigned short", DType::uint16},
      {"unsigned short int", DType::uint16},
      {"uint16_t", DType::uint16},
      {"int", DType::int32},
      {"signed", DType::int32},
      {"signed int", DType::int32},
      {"int32_t", DType::int32},
      {"unsigned", DType::uint32},
      {"unsigned int", DType::uint32},
      {"uint32_t", DType::uint32},
      {"long", DType::int64},
      {"long int", DType::int64},
      {"signed long", DType::int64},
      {"long long", DType::int64},
      {"long long int", DType::int64},
      {"signed long long", DType::int64},
      {"int64_t", DType::int64},
      {"ptrdiff_t", DType::int64},
      {"intptr_t", DType::int64},
      {"unsigned long", DType::uint64},
      {"unsigned long int", DType::uint64},
      {"unsigned long long", DType::uint64},
      {"unsigned long long int", DType::uint64},
      {"uint64_t", DType::uint64},
      {"size_t", DType::uint64},
      {"uintptr_t", DType::uint64},
      {"float", DType::float32},
      {"double", DType::float64},
      {"complex<float>", DType::complex64},
      {"complex<double>", DType::complex128},
  };
  return m;
}

// "std::int64_t" -> "int64_t", "cuda::std::complex<double>" -> "complex<double>".
std::string normalized(std::string ctype) {
  for (const char* prefix : {"cuda::std::", "thrust::", "std::", "::"})
    if (ctype.rfind(prefix, 0) == 0) ctype = ctype.substr(std::char_traits<char>::length(prefix));
  return ctype;
}

std::string join(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) {
    const bool glue = out.empty() || t == "::" || t == "<" || t == ">" || t == "," || t == "*" ||
                      out.back() == ':' || out.back() == '<';
    if (!glue) out += ' ';
    if (t == "*" && !out.empty() && out.back() != '*' && out.back() != ' ') out += ' ';
    out += t;
    if (t == ",") out += ' ';
  }
  return out;
}

[[noreturn]] void bad_parameter(std::string_view name, const std::string& text,
                                const std::string& why) {
  throw ValueError("parse_cuda_signature('" + std::string(name) +
                   "'): cannot parse the parameter '" + text + "': " + why +
                   "; pass check_signature = false to launch with the arguments as given");
}

CudaParameter parse_parameter(std::string_view kernel, std::vector<std::string> tokens,
                              const std::string& text, std::span<const std::string> structs,
                              const std::unordered_map<std::string, std::string>& substitutions) {
  CudaParameter p;
  p.text = text;
  for (const char* bad : {"&", "[", "=", "(", "...", "."})
    if (std::find(tokens.begin(), tokens.end(), bad) != tokens.end())
      bad_parameter(kernel, text,
                    std::string(bad) == "&" ? "references are not kernel parameters"
                    : std::string(bad) == "["
                        ? "arrays are not kernel parameters (pass a pointer or an array view)"
                    : std::string(bad) == "=" ? "default arguments are not supported"
                                              : "not a parameter declaration");
  // Qualifiers that do not change what is passed.
  std::vector<std::string> t;
  for (std::string& tok : tokens) {
    if (tok == "const") {
      p.is_const = true;
      continue;
    }
    if (tok == "volatile" || tok == "__restrict__" || tok == "__restrict" || tok == "restrict" ||
        tok == "__grid_constant__" || tok == "struct")
      continue;
    auto it = substitutions.find(tok);
    if (it != substitutions.end()) {
      for (std::string& s : tokenize(it->second)) t.push_back(s);
      continue;
    }
    t.push_back(std::move(tok));
  }
  if (t.size() < 2 || !is_identifier(t.back()))
    bad_parameter(kernel, text, "a parameter needs a type and a name");
  p.name = t.back();
  t.pop_back();
  const auto stars = std::count(t.begin(), t.end(), "*");
  if (stars > 1)
    bad_parameter(kernel, text, "pointers to pointers are not supported (pass a flat array)");
  if (stars == 1) {
    if (t.back() != "*") bad_parameter(kernel, text, "a pointer must be written T* name");
    p.pointer = true;
    t.pop_back();
  }
  for (const std::string& tok : t)
    if (is_identifier(tok) && tok.size() > 1 && std::all_of(tok.begin(), tok.end(), [](char c) {
          return std::isupper(static_cast<unsigned char>(c)) || c == '_' ||
                 std::isdigit(static_cast<unsigned char>(c));
        }))
      bad_parameter(kernel, text,
                    "'" + tok + "' looks like a macro; macros in signatures cannot be checked");
  std::string type = normalized(join(t));
  if (type.rfind("cunumpy::", 0) == 0) type = type.substr(9);
  // Array views: Array<n>D<T>.
  if (type.size() > 9 && type.rfind("Array", 0) == 0 && type[6] == 'D' && type[7] == '<' &&
      type.back() == '>') {
    const int n = type[5] - '0';
    if (n < 1 || n > 4) bad_parameter(kernel, text, "array views have 1 to 4 dimensions");
    if (p.pointer) bad_parameter(kernel, text, "pass an array view by value, not a pointer to it");
    const std::string element = normalized(type.substr(8, type.size() - 9));
    auto it = scalar_types().find(element);
    if (it == scalar_types().end())
      bad_parameter(
          kernel, text,
          "array views of '" + element + "' are not supported (views of the scalar C types)");
    p.view_ndim = n;
    p.ctype = element;
    p.dtype = it->second;
    return p;
  }
  if (std::find(structs.begin(), structs.end(), type) != structs.end()) {
    if (p.pointer) bad_parameter(kernel, text, "structs are passed by value, not as pointers");
    p.struct_name = type;
    p.ctype = type;
    return p;
  }
  if (type == "void") {
    if (!p.pointer) bad_parameter(kernel, text, "a parameter cannot be void");
    p.ctype = "void";
    return p;
  }
  auto it = scalar_types().find(type);
  if (it == scalar_types().end())
    bad_parameter(kernel, text,
                  "unknown type '" + type +
                      "' (scalars, pointers to scalars, Array1D..Array4D views, or a struct "
                      "passed in structs)");
  p.ctype = type;
  p.dtype = it->second;
  return p;
}

}  // namespace
}  // namespace detail

std::string_view ctype_of(DType dtype) noexcept {
  switch (dtype) {
    case DType::boolean:
      return "bool";
    case DType::int8:
      return "signed char";
    case DType::uint8:
      return "unsigned char";
    case DType::int16:
      return "short";
    case DType::uint16:
      return "unsigned short";
    case DType::int32:
      return "int";
    case DType::uint32:
      return "unsigned int";
    case DType::int64:
      return "long long";
    case DType::uint64:
      return "unsigned long long";
    case DType::float32:
      return "float";
    case DType::float64:
      return "double";
    case DType::complex64:
      return "complex<float>";
    case DType::complex128:
      return "complex<double>";
  }
  return "void";
}

std::optional<DType> dtype_of_ctype(std::string_view ctype) {
  const std::string n = detail::normalized(detail::join(detail::tokenize(ctype)));
  auto it = detail::scalar_types().find(n);
  if (it == detail::scalar_types().end()) return std::nullopt;
  return it->second;
}

std::string template_expression(std::string_view name, std::span<const TemplateArg> template_args) {
  std::string e(name);
  if (template_args.empty()) return e;
  e += '<';
  for (std::size_t i = 0; i < template_args.size(); ++i) {
    if (i > 0) e += ", ";
    e += template_args[i].text();
  }
  return e + '>';
}

std::vector<std::string> cuda_kernel_names(std::string_view source) {
  std::vector<std::string> names;
  for (const auto& g : detail::globals(detail::tokenize(detail::strip_comments(source))))
    if (std::find(names.begin(), names.end(), g.name) == names.end()) names.push_back(g.name);
  return names;
}

std::vector<CudaParameter> parse_cuda_signature(std::string_view source, std::string_view name,
                                                std::span<const std::string> structs,
                                                std::span<const TemplateArg> template_args) {
  const auto tokens = detail::tokenize(detail::strip_comments(source));
  const auto all = detail::globals(tokens);
  auto it = std::find_if(all.begin(), all.end(), [&](const auto& g) { return g.name == name; });
  if (it == all.end()) {
    std::string found;
    for (const auto& g : all) found += (found.empty() ? "" : ", ") + g.name;
    throw ValueError("parse_cuda_signature: the source has no __global__ function '" +
                     std::string(name) + "' (it has: " + (found.empty() ? "none" : found) + ")");
  }
  const detail::Global& g = *it;
  std::unordered_map<std::string, std::string> substitutions;
  if (g.is_template) {
    if (template_args.size() != g.template_params.size())
      throw ValueError("parse_cuda_signature: '" + std::string(name) + "' is a template of " +
                       std::to_string(g.template_params.size()) + " parameter(s), " +
                       std::to_string(template_args.size()) +
                       " template argument(s) given; pass template_args such "
                       "as {\"double\", 3}");
    for (std::size_t i = 0; i < template_args.size(); ++i) {
      const auto& [is_type, pname] = g.template_params[i];
      if (is_type != template_args[i].is_type())
        throw ValueError("parse_cuda_signature: template parameter '" + pname + "' of '" +
                         std::string(name) + "' takes " + (is_type ? "a type" : "a value") +
                         ", got '" + template_args[i].text() + "'");
      substitutions[pname] = template_args[i].text();
    }
  } else if (!template_args.empty()) {
    throw ValueError("parse_cuda_signature: '" + std::string(name) + "' is not a template, but " +
                     std::to_string(template_args.size()) + " template argument(s) were given");
  }
  std::vector<CudaParameter> params;
  std::vector<std::string> current;
  std::string text;
  int depth = 0;
  auto flush = [&] {
    if (current.empty()) return;
    if (current.size() == 1 && current[0] == "void" && params.empty()) {
      current.clear();
      return;
    }
    text = detail::as_written(current);
    params.push_back(
        detail::parse_parameter(name, std::move(current), text, structs, substitutions));
    current.clear();
  };
  for (std::size_t i = g.params_open + 1; i < g.params_close; ++i) {
    const std::string& t = tokens[i];
    if (t == "<" || t == "(" || t == "[") ++depth;
    if (t == ">" || t == ")" || t == "]") --depth;
    if (t == "," && depth == 0) {
      flush();
      continue;
    }
    current.push_back(t);
  }
  flush();
  return params;
}

std::string sha256_hex(std::string_view bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr) != 1)
    throw Error("sha256: OpenSSL's EVP_Digest failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

namespace detail {
std::string as_written(const std::vector<std::string>& tokens) {
  std::string out;
  for (const std::string& t : tokens) {
    const bool attach = out.empty() || t == "<" || t == ">" || t == ">>" || t == "::" || t == "," ||
                        t == "*" || t == "&" || out.back() == '<' || out.back() == ':';
    if (!attach) out += ' ';
    out += t;
    if (t == ",") out += ' ';
  }
  return out;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw ValueError("cannot read '" + path.string() +
                     "': check that the file exists and is readable");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {
// The #include lines of a comment-free source: (quoted, name).
std::vector<std::pair<bool, std::string>> includes_of(const std::string& source) {
  std::vector<std::pair<bool, std::string>> out;
  std::istringstream lines(source);
  std::string line;
  while (std::getline(lines, line)) {
    std::size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 7, "include") != 0) continue;
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string::npos || (line[i] != '"' && line[i] != '<')) continue;
    const char close = line[i] == '"' ? '"' : '>';
    const std::size_t end = line.find(close, i + 1);
    if (end == std::string::npos) continue;
    out.emplace_back(close == '"', line.substr(i + 1, end - i - 1));
  }
  return out;
}
}  // namespace
}  // namespace detail

std::vector<std::filesystem::path> resolve_includes(
    std::string_view source, std::span<const std::filesystem::path> include_dirs,
    const std::optional<std::filesystem::path>& base_dir,
    std::span<const std::filesystem::path> angle_dirs) {
  namespace fs = std::filesystem;
  std::vector<fs::path> found;
  std::set<fs::path> seen;
  auto find = [&](const std::string& name, bool quoted,
                  const std::optional<fs::path>& here) -> std::optional<fs::path> {
    // As NVRTC and g++ search with -I: a quoted name first next to the including file, then
    // both forms through the -I folders in order (include_dirs, then angle_dirs).
    std::vector<fs::path> where;
    if (quoted && here) where.push_back(*here);
    where.insert(where.end(), include_dirs.begin(), include_dirs.end());
    where.insert(where.end(), angle_dirs.begin(), angle_dirs.end());
    for (const fs::path& dir : where) {
      std::error_code ec;
      const fs::path candidate = dir / name;
      if (fs::is_regular_file(candidate, ec)) return fs::weakly_canonical(candidate, ec);
    }
    return std::nullopt;
  };
  // Depth first, each header once (so cycles end), in order of first inclusion.
  auto visit = [&](auto&& self, const std::string& text,
                   const std::optional<fs::path>& here) -> void {
    for (const auto& [quoted, name] : detail::includes_of(detail::strip_comments(text))) {
      auto path = find(name, quoted, here);
      if (!path || !seen.insert(*path).second) continue;
      found.push_back(*path);
      self(self, detail::read_file(*path), path->parent_path());
    }
  };
  visit(visit, std::string(source), base_dir);
  return found;
}

std::string include_hash(std::span<const std::filesystem::path> paths) {
  std::string all;
  for (const auto& p : paths) all += detail::read_file(p);
  return sha256_hex(all).substr(0, 16);
}

std::filesystem::path cuda_include_dir() {
  namespace fs = std::filesystem;
  if (const char* env = std::getenv("CUNUMPY_INCLUDE_DIR"); env != nullptr && *env != '\0')
    return env;
  // The embedded headers, written out once per folder: in the kernel cache (shared by the
  // processes of a run), else this process's private folder.  The folder's name is their
  // digest, so another version of cunumpy uses another folder.
  static const std::string digest = [] {
    std::string all;
    for (const auto& f : detail::embedded_device_headers()) {
      all += f.path;
      all += '\0';
      all += f.text;
      all += '\0';
    }
    return sha256_hex(all).substr(0, 16);
  }();
  fs::path base = detail::usable_cache_dir();
  if (base.empty()) base = detail::private_temp_dir();
  const fs::path dir = base / ("include-" + digest);
  static std::mutex m;
  static std::set<fs::path> written;  // checked whole once per process, then by one file
  std::lock_guard lock(m);
  std::error_code ec;
  if (written.count(dir) > 0 && fs::exists(dir / "cunumpy" / "emulator.hpp", ec)) return dir;
  for (const auto& f : detail::embedded_device_headers()) {
    const fs::path path = dir / f.path;
    std::ifstream in(path, std::ios::binary);
    std::ostringstream now;
    if (in) now << in.rdbuf();
    if (in && now.str() == f.text) continue;
    fs::create_directories(path.parent_path(), ec);
    write_file_atomically(path, f.text);
  }
  written.insert(dir);
  return dir;
}

}  // namespace cunumpy
