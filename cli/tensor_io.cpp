#include "tensor_io.hpp"

#include <cerrno>
#include <cstdio>
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

Dtype tensor_dtype(const NpyArray& array, const std::string& path, bool bfloat16) {
  switch (array.type) {
    case NpyType::float64: return Dtype::float64;
    case NpyType::float32: return Dtype::float32;
    case NpyType::float16: return Dtype::float16;
    case NpyType::uint16:
      if (!bfloat16) {
        throw UsageError(path + ": uint16 data: lngrad reads uint16 only as bfloat16 bit patterns, "
                                "with --dtype bfloat16");
      }
      return Dtype::bfloat16;
  }
  return Dtype::float32;
}

InputTensor load_tensor(const std::string& path, bool bfloat16) {
  InputTensor t;
  t.array = read_npy(path);
  t.dtype = tensor_dtype(t.array, path, bfloat16);
  return t;
}

OutputTensor make_output(std::string file, Dtype dtype, const std::vector<std::int64_t>& shape) {
  OutputTensor t;
  t.file = std::move(file);
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
      write_file(temps.back(), serialize_npy(t.array));
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
