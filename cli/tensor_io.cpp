#include "tensor_io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <unistd.h>

#include "args.hpp"

namespace lngrad::cli {

namespace fs = std::filesystem;

NpyType storage_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::float64: return NpyType::float64;
    case Dtype::float32: return NpyType::float32;
    case Dtype::float16: return NpyType::float16;
    case Dtype::bfloat16: return NpyType::uint16;
  }
  return NpyType::float32;
}

bool is_npy(const std::string& path) { return path.size() >= 4 && path.compare(path.size() - 4, 4, ".npy") == 0; }

namespace {

constexpr Dtype kDtypes[] = {Dtype::float64, Dtype::float32, Dtype::float16, Dtype::bfloat16};

Dtype parse_dtype(const Args& a, const std::string& value) {
  for (Dtype d : kDtypes) {
    if (value == dtype_name(d)) return d;
  }
  a.fail("option '--dtype': expected float64, float32, float16 or bfloat16, given '" + value + "'");
}

// "6,10,48", "[6, 10, 48]" or "[]" (a 0-d tensor of one element).
Dims parse_dims(const Args& a, const std::string& value) {
  std::string s;
  for (char c : value) {
    if (c != ' ') s += c;
  }
  if (s.size() >= 2 && s.front() == '[' && s.back() == ']') s = s.substr(1, s.size() - 2);
  Dims dims;
  std::size_t begin = 0;
  while (!s.empty() && begin <= s.size()) {
    const std::size_t end = std::min(s.find(',', begin), s.size());
    const std::string item = s.substr(begin, end - begin);
    errno = 0;
    char* stop = nullptr;
    const long long d = std::strtoll(item.c_str(), &stop, 10);
    if (item.empty() || stop != item.c_str() + item.size() || errno == ERANGE || d < 0 || d > (1LL << 62)) {
      a.fail("option '--shape': expected extents >= 0 separated by commas (e.g. 6,10,48), given '" + value + "'");
    }
    dims.push_back(d);
    begin = end + 1;
  }
  if (dims.size() > static_cast<std::size_t>(kNpyMaxRank)) {
    a.fail("option '--shape': more than " + std::to_string(kNpyMaxRank) + " axes in '" + value + "'");
  }
  return dims;
}

template <typename T, typename Parse>
void read_entries(const Args& a, const char* option, const std::vector<std::string>& names, Parse parse,
                  std::optional<T>& fallback, std::map<std::string, T>& own) {
  for (const std::string& entry : a.all(option)) {
    const std::size_t eq = entry.find('=');
    if (eq == std::string::npos) {
      if (fallback) a.fail(std::string("option '--") + option + "': the default (no NAME=) given twice");
      fallback = parse(a, entry);
      continue;
    }
    const std::string name = entry.substr(0, eq);
    if (std::find(names.begin(), names.end(), name) == names.end()) {
      std::string known;
      for (const std::string& n : names) known += (known.empty() ? "" : ", ") + n;
      a.fail(std::string("option '--") + option + "': unknown tensor '" + name + "' (expected one of " + known + ")");
    }
    if (own.count(name)) a.fail(std::string("option '--") + option + "': '" + name + "' given twice");
    own[name] = parse(a, entry.substr(eq + 1));
  }
}

}  // namespace

TensorSpecs::TensorSpecs(const Args& args, const std::vector<std::string>& names) {
  read_entries<Dims>(args, "shape", names, parse_dims, default_shape_, shapes_);
  read_entries<Dtype>(args, "dtype", names, parse_dtype, default_dtype_, dtypes_);
}

std::optional<Dims> TensorSpecs::own_shape(const std::string& name) const {
  const auto it = shapes_.find(name);
  if (it == shapes_.end()) return std::nullopt;
  return it->second;
}

std::optional<Dtype> TensorSpecs::own_dtype(const std::string& name) const {
  const auto it = dtypes_.find(name);
  if (it == dtypes_.end()) return std::nullopt;
  return it->second;
}

std::optional<Dtype> TensorSpecs::dtype(const std::string& name) const {
  const auto own = own_dtype(name);
  return own ? own : default_dtype_;
}

InputTensor load_tensor(const std::string& label, const std::string& path, const std::string& name,
                        const TensorSpecs& specs, const RawDefaults& defaults) {
  InputTensor t;
  t.label = label;
  std::optional<Dtype> dtype = specs.dtype(name);
  if (is_npy(path)) {
    t.array = read_npy(path);
    switch (t.array.type) {
      case NpyType::float64: t.dtype = Dtype::float64; break;
      case NpyType::float32: t.dtype = Dtype::float32; break;
      case NpyType::float16: t.dtype = Dtype::float16; break;
      case NpyType::uint16:
        if (dtype != Dtype::bfloat16) {
          throw UsageError(path + ": uint16 data: lngrad reads uint16 only as bfloat16 bit patterns, "
                                  "with --dtype bfloat16");
        }
        t.dtype = Dtype::bfloat16;
        break;
    }
    const std::optional<Dtype> own = specs.own_dtype(name);
    if (own && *own != t.dtype) {
      throw UsageError(label + ": the file holds " + dtype_name(t.dtype) + ", but --dtype " + name + "=" +
                       dtype_name(*own) + " was given");
    }
    if (const auto own_shape = specs.own_shape(name); own_shape && *own_shape != t.array.shape) {
      throw UsageError(label + ": the file has shape " + shape_str(t.array.shape) + ", but --shape " + name + "=" +
                       shape_str(*own_shape) + " was given");
    }
    return t;
  }

  t.raw = true;
  std::vector<std::uint8_t> bytes = read_file(path);
  if (!dtype) dtype = defaults.dtype;
  if (!dtype) {
    throw UsageError(label + ": a raw file needs its dtype: --dtype D or --dtype " + name + "=D (float64, float32, "
                     "float16 or bfloat16)");
  }
  t.dtype = *dtype;
  const std::size_t item = dtype_size(t.dtype);
  std::optional<Dims> dims = specs.own_shape(name);
  if (!dims) dims = defaults.shape;
  if (!dims && defaults.flat) {
    if (bytes.size() % item != 0) {
      throw UsageError(label + ": " + std::to_string(bytes.size()) + " bytes is not a whole number of " +
                       dtype_name(t.dtype) + " elements");
    }
    dims = Dims{static_cast<std::int64_t>(bytes.size() / item)};
  }
  if (!dims) {
    throw UsageError(label + ": a raw file needs its shape: --shape DIMS or --shape " + name + "=DIMS");
  }
  const std::optional<std::size_t> want = checked_bytes(*dims, item);
  if (!want || *want != bytes.size()) {
    throw UsageError(label + ": " + std::to_string(bytes.size()) + " bytes, but " + dtype_name(t.dtype) + " " +
                     shape_str(*dims) + " is " + (want ? std::to_string(*want) : std::string("over 2^64")) + " bytes");
  }
  t.array.type = storage_type(t.dtype);
  t.array.shape = *dims;
  t.array.data = std::move(bytes);
  return t;
}

OutputTensor make_output(const std::string& stem, bool raw, Dtype dtype, const Dims& shape) {
  OutputTensor t;
  t.file = stem + (raw ? ".bin" : ".npy");
  t.raw = raw;
  t.dtype = dtype;
  t.array.type = storage_type(dtype);
  t.array.shape = shape;
  t.array.data.assign(static_cast<std::size_t>(t.array.count()) * dtype_size(dtype), 0);
  return t;
}

namespace {

void write_file(const fs::path& path, const std::vector<std::uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wbx");  // x: never follow or reuse an existing name
  if (f == nullptr) throw UsageError(path.string() + ": cannot create: " + std::strerror(errno));
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  const int saved = errno;
  const bool closed = std::fclose(f) == 0;
  if (!wrote || !closed) {
    std::remove(path.c_str());
    throw UsageError(path.string() + ": write failed: " + std::strerror(wrote ? errno : saved));
  }
}

}  // namespace

void write_outputs(const std::string& dir, const std::vector<OutputTensor>& outputs) {
  std::error_code ec;
  const fs::path out_dir(dir);
  if (fs::exists(out_dir, ec) && !fs::is_directory(out_dir, ec)) {
    throw UsageError(dir + ": --out must name a directory, and this is a file");
  }
  fs::create_directories(out_dir, ec);
  if (ec) throw UsageError(dir + ": cannot create the output directory: " + ec.message());
  for (const OutputTensor& t : outputs) {
    const fs::path target = out_dir / t.file;
    if (fs::is_directory(target, ec)) throw UsageError(target.string() + ": cannot replace a directory with a file");
  }

  std::vector<fs::path> temps;
  auto discard = [&] {
    for (const fs::path& p : temps) fs::remove(p, ec);
  };
  try {
    for (const OutputTensor& t : outputs) {
      temps.push_back(out_dir / ("." + t.file + ".tmp" + std::to_string(::getpid())));
      if (t.raw) {
        write_file(temps.back(), t.array.data);
      } else {
        write_file(temps.back(), serialize_npy(t.array));
      }
    }
  } catch (...) {
    temps.pop_back();  // write_file removed its own file
    discard();
    throw;
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const fs::path target = out_dir / outputs[i].file;
    fs::rename(temps[i], target, ec);
    if (ec) {
      std::vector<fs::path> rest(temps.begin() + static_cast<std::ptrdiff_t>(i), temps.end());
      temps = rest;
      discard();
      throw UsageError(target.string() + ": cannot move the finished file into place: " + ec.message());
    }
  }
}

}  // namespace lngrad::cli
