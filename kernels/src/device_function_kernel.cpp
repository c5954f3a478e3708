// The elementwise wrapper kernel of a __device__ function (device_function_kernel.hpp).
#include <cunumpy/device_function_kernel.hpp>

#include <cctype>
#include <string>

#include <cunumpy/cuda_signature.hpp>
#include <cunumpy/errors.hpp>

#include "cuda_source.hpp"

namespace cunumpy {
namespace {

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

struct Prototype {
  std::string return_type;  // "void", "int", ...
  std::string function;
  std::string parameters;  // the text between the parentheses
};

Prototype split(std::string_view signature) {
  const std::string text = trim(signature);
  const std::size_t open = text.find('('), close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open ||
      !trim(std::string_view(text).substr(close + 1)).empty())
    throw ValueError("device_function_kernel: the signature '" + text +
                     "' is not a C prototype; write it as \"int find_span(const double* t, int "
                     "p, double eta)\"");
  const std::string head = trim(std::string_view(text).substr(0, open));
  std::size_t e = head.size(), b = e;
  while (b > 0 && (std::isalnum(static_cast<unsigned char>(head[b - 1])) || head[b - 1] == '_'))
    --b;
  Prototype p;
  p.function = head.substr(b, e - b);
  p.return_type = trim(std::string_view(head).substr(0, b));
  for (const char* word : {"__device__", "__host__", "__forceinline__", "inline", "static"}) {
    const std::size_t at = p.return_type.find(word);
    if (at != std::string::npos) p.return_type.erase(at, std::string_view(word).size());
  }
  p.return_type = trim(p.return_type);
  p.parameters = text.substr(open + 1, close - open - 1);
  if (p.function.empty() || p.return_type.empty())
    throw ValueError("device_function_kernel: the signature '" + text +
                     "' needs a return type and a function name");
  return p;
}

}  // namespace

std::string device_function_source(std::string_view header_source, std::string_view signature,
                                   const DeviceFunctionOptions& o) {
  const Prototype proto = split(signature);
  const bool returns = proto.return_type != "void";
  if (returns) {
    if (proto.return_type.find('*') != std::string::npos ||
        proto.return_type.find('&') != std::string::npos || !dtype_of_ctype(proto.return_type))
      throw ValueError("device_function_kernel: '" + proto.function + "' returns " +
                       proto.return_type +
                       "; the generated kernel stores scalar results (int, double, ...) only: "
                       "wrap the function in one that returns a scalar, or write the kernel");
  }
  // The parameters, parsed as those of a kernel with the same list.
  const std::string probe =
      "extern \"C\" __global__ void cunumpy_device_function_probe(" + proto.parameters + ") {}";
  std::vector<std::string> structs;
  for (const CudaStruct* s : o.kernel.structs) structs.push_back(s->name());
  std::vector<CudaParameter> params;
  try {
    params = parse_cuda_signature(probe, "cunumpy_device_function_probe", structs);
  } catch (const ValueError& e) {
    std::string what = e.what();
    const std::string probe_name = "parse_cuda_signature('cunumpy_device_function_probe')";
    if (const std::size_t at = what.find(probe_name); at != std::string::npos)
      what.replace(at, probe_name.size(), "");
    if (const std::size_t at = what.find("; pass check_signature"); at != std::string::npos)
      what.erase(at);
    while (!what.empty() && (what[0] == ':' || what[0] == ' ')) what.erase(0, 1);
    throw ValueError("device_function_kernel('" + trim(signature) + "'): " + what +
                     "; give the function scalar, pointer, array-view or struct parameters");
  }
  std::string list, call;
  for (const CudaParameter& p : params) {
    if (p.name == o.out_param || p.name == o.n_param)
      throw ValueError("device_function_kernel: '" + proto.function + "' has a parameter named '" +
                       p.name +
                       "', the name of a generated parameter; pass out_param / n_param "
                       "to rename the generated one");
    if (!list.empty()) {
      list += ", ";
      call += ", ";
    }
    const bool scalar = !p.pointer && p.view_ndim == 0 && p.struct_name.empty();
    if (scalar) {
      list += "const " + p.ctype + "* " + p.name;
      call += p.name + "[cunumpy_i]";
    } else {
      list += p.pointer ? (p.is_const ? "const " : "") + p.ctype + "* " + p.name : p.text;
      call += p.name;
    }
  }
  if (returns)
    list += std::string(list.empty() ? "" : ", ") + proto.return_type + "* " + o.out_param;
  list += std::string(list.empty() ? "" : ", ") + "int " + o.n_param;
  const std::string name = o.name.value_or(proto.function + "_kernel");
  std::string source;
  for (const std::string& inc : o.includes)
    source += "#include " + (inc.starts_with("<") ? inc : "\"" + inc + "\"") + "\n";
  source += std::string(header_source) + "\n\n";
  source += "extern \"C\" __global__ void " + name + "(" + list + ") {\n";
  source += "  const int cunumpy_i = blockDim.x * blockIdx.x + threadIdx.x;\n";
  source += "  if (cunumpy_i >= " + o.n_param + ") return;\n";
  source += std::string("  ") + (returns ? o.out_param + "[cunumpy_i] = " : "") + proto.function +
            "(" + call + ");\n}\n";
  return source;
}

CudaKernel device_function_kernel(std::string_view header_source, std::string_view signature,
                                  DeviceFunctionOptions options) {
  std::string source = device_function_source(header_source, signature, options);
  const Prototype proto = split(signature);
  return CudaKernel(std::move(source), options.name.value_or(proto.function + "_kernel"),
                    std::move(options.kernel));
}

}  // namespace cunumpy
