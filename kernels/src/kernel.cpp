// The non-template parts of Kernel and HostKernel (kernel.hpp): events, the fallback warning,
// the signature check.
#include <cunumpy/kernel.hpp>

#include <cstdio>
#include <string>

namespace cunumpy::detail {

void record_conversion(const std::string& kernel, int arrays, const std::source_location& where) {
  record_transfer(
      TransferKind::kernel_conversion,
      [&] {
        return "HostKernel '" + kernel + "': " + std::to_string(arrays) + " array(s) converted";
      },
      where);
}

void throw_output_index(const std::string& kernel, int index, int arguments) {
  throw IndexError("HostKernel '" + kernel + "': outputs index " + std::to_string(index) +
                   " is out of range for a call with " + std::to_string(arguments) +
                   " argument(s) (0.." + std::to_string(arguments - 1) + ", or -" +
                   std::to_string(arguments) +
                   "..-1 from the end); give the positions of the "
                   "arguments the function writes");
}

void record_fallback(const std::string& kernel, const std::source_location& where) {
  record_transfer(
      TransferKind::fallback,
      [&] {
        return "Kernel '" + kernel + "': the host kernel on the device's data (no CUDA kernel)";
      },
      where);
}

void warn_fallback_once(std::atomic<bool>& flag, const std::string& kernel,
                        const std::string& cuda_path) {
  if (flag.exchange(true)) return;
  std::fprintf(stderr,
               "cunumpy: warning: Kernel '%s' has no CUDA kernel%s%s: its host kernel runs on host "
               "copies of the device arrays, copied at every call\n",
               kernel.c_str(), cuda_path.empty() ? "" : "; expected at ", cuda_path.c_str());
}

namespace {

enum class Category { boolean, integer, real, complex, other };

Category category(DType d) {
  switch (d) {
    case DType::boolean:
      return Category::boolean;
    case DType::float32:
    case DType::float64:
      return Category::real;
    case DType::complex64:
    case DType::complex128:
      return Category::complex;
    default:
      return Category::integer;
  }
}

std::string list(const std::vector<HostParameter>& host, const std::vector<std::string>& names) {
  std::string s = "(";
  for (std::size_t i = 0; i < host.size(); ++i) {
    if (i > 0) s += ", ";
    s += host[i].text;
    if (names.size() == host.size()) s += " " + names[i];
  }
  return s + ")";
}

std::string list(const std::vector<CudaParameter>& cuda) {
  std::string s = "(";
  for (std::size_t i = 0; i < cuda.size(); ++i) s += (i > 0 ? ", " : "") + cuda[i].text;
  return s + ")";
}

bool is_signed(DType d) {
  return d == DType::int8 || d == DType::int16 || d == DType::int32 || d == DType::int64;
}

// Scalars of one kind of number: what the launch would refuse (a value wider than a float or
// complex<float> parameter), and integers that would fail it for some values (a wider host type:
// values past the parameter's range; another signedness: negative or top-half values).
std::string scalar_mismatch(const HostParameter& h, const CudaParameter& c, DType host,
                            DType cuda) {
  const std::string both = "a " + h.text + " on the host, a " + c.ctype + " on CUDA";
  const Category k = category(host);
  if ((k == Category::real || k == Category::complex) && dtype_size(host) > dtype_size(cuda))
    return both + ": the launch refuses it (expected a value of at most single precision for '" +
           c.ctype + "'); make the host parameter " + c.ctype + " or the CUDA one " + h.text;
  if (k != Category::integer) return {};
  if (is_signed(host) != is_signed(cuda))
    return both + " (another signedness: " + (is_signed(host) ? "negative" : "large") +
           " values do not fit the parameter type '" + c.ctype +
           "' at the launch); give both the same type";
  if (dtype_size(host) > dtype_size(cuda))
    return both + " (a wider integer: values past the range of '" + c.ctype +
           "' do not fit the parameter type at the launch); give both the same type";
  return {};
}

// Why host parameter h cannot take the place of CUDA parameter c (empty: it can).
std::string mismatch(const HostParameter& h, const CudaParameter& c) {
  const bool c_array = c.pointer || c.view_ndim > 0;
  const bool c_struct = !c.struct_name.empty() && !c_array;
  switch (h.kind) {
    case HostParameter::Kind::array:
      if (!c_array) return "an array on the host, not a pointer or an array view on CUDA";
      if (c.dtype && h.dtype && *c.dtype != *h.dtype)
        return "elements of " + std::string(to_string(*h.dtype)) + " on the host, " +
               std::string(to_string(*c.dtype)) + " on CUDA";
      return {};
    case HostParameter::Kind::scalar:
      if (c_array || c_struct || !c.dtype) return "a scalar on the host, not on CUDA";
      if (!h.dtype) return {};
      if (category(*h.dtype) != category(*c.dtype))
        return "a " + h.text + " on the host, a " + c.ctype + " on CUDA (another kind of number)";
      return scalar_mismatch(h, c, *h.dtype, *c.dtype);
    case HostParameter::Kind::object:
      if (!c_struct) return "a struct on the host, not on CUDA";
      if (c.struct_name != h.struct_name)
        return "struct " + h.struct_name + " on the host, " + c.struct_name + " on CUDA";
      return {};
    case HostParameter::Kind::unknown:
      return {};  // an object the check cannot see into
  }
  return {};
}

}  // namespace

std::string kernel_signature_difference(const std::string& kernel,
                                        const std::vector<HostParameter>& host,
                                        const std::vector<std::string>& host_names,
                                        const std::vector<CudaParameter>& cuda) {
  std::vector<std::string> problems;
  auto compare = [&](std::size_t h, std::size_t c) {
    const std::string m = mismatch(host[h], cuda[c]);
    if (!m.empty())
      problems.push_back("parameter " + std::to_string(c) + " ('" + cuda[c].name + "'): " + m);
    if (host_names.size() == host.size() && host[h].kind != HostParameter::Kind::unknown &&
        host_names[h] != cuda[c].name)
      problems.push_back("parameter " + std::to_string(c) + " is '" + host_names[h] +
                         "' on the host, '" + cuda[c].name + "' on CUDA");
  };
  // An object the check cannot see into (a host form) stands for one or more CUDA parameters:
  // the parameters before the first such object align from the start, those after the last
  // from the end.
  std::size_t first_unknown = host.size(), last_unknown = host.size();
  for (std::size_t i = 0; i < host.size(); ++i)
    if (host[i].kind == HostParameter::Kind::unknown) {
      if (first_unknown == host.size()) first_unknown = i;
      last_unknown = i;
    }
  if (first_unknown == host.size()) {
    if (host.size() != cuda.size()) {
      problems.push_back(std::to_string(host.size()) + " parameter(s) on the host, " +
                         std::to_string(cuda.size()) + " on CUDA");
    } else {
      for (std::size_t i = 0; i < host.size(); ++i) compare(i, i);
    }
  } else {
    const std::size_t tail = host.size() - last_unknown - 1;
    const std::size_t known = first_unknown + tail;
    const std::size_t unknowns = last_unknown - first_unknown + 1;
    if (cuda.size() < known + unknowns) {
      problems.push_back(std::to_string(host.size()) + " parameter(s) on the host (" +
                         std::to_string(unknowns) +
                         " of them objects standing for at least one each), " +
                         std::to_string(cuda.size()) + " on CUDA");
    } else {
      for (std::size_t i = 0; i < first_unknown; ++i) compare(i, i);
      for (std::size_t j = 0; j < tail; ++j) compare(last_unknown + 1 + j, cuda.size() - tail + j);
    }
  }
  if (problems.empty()) return {};
  std::string m =
      "Kernel '" + kernel +
      "': the host and CUDA kernels take different parameters\n  host: " + list(host, host_names) +
      "\n  cuda: " + list(cuda);
  for (const std::string& p : problems) m += "\n  " + p;
  return m + "\nmake both sides take the same parameters in the same order";
}

void check_kernel_signature(const std::string& kernel, const std::vector<HostParameter>& host,
                            const std::vector<std::string>& host_names,
                            const std::vector<CudaParameter>& cuda) {
  const std::string d = kernel_signature_difference(kernel, host, host_names, cuda);
  if (!d.empty()) throw ValueError(d);
}

}  // namespace cunumpy::detail
