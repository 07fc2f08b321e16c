// .npy files as lngrad tensors: inputs read with the bfloat16 convention,
// outputs allocated in a given dtype and written all-or-nothing.
#pragma once

#include <string>
#include <vector>

#include "lngrad/lngrad.hpp"
#include "npy.hpp"

namespace lngrad::cli {

// The .npy element type a dtype is stored as: bfloat16 -> uint16.
NpyType storage_type(Dtype dtype);

// An .npy array read as a tensor. uint16 arrays are bfloat16 bit patterns and
// are accepted only with `bfloat16` set (--dtype bfloat16); the other types
// map to the dtype of the same name.
struct InputTensor {
  NpyArray array;
  Dtype dtype = Dtype::float32;
  ConstTensorView view() const { return {array.data.data(), dtype, Shape(array.shape)}; }
};

InputTensor load_tensor(const std::string& path, bool bfloat16);
Dtype tensor_dtype(const NpyArray& array, const std::string& path, bool bfloat16);

// An output tensor with its file name inside the output folder.
struct OutputTensor {
  std::string file;  // e.g. "pd_x.npy"
  NpyArray array;
  Dtype dtype = Dtype::float32;
  TensorView view() { return {array.data.data(), dtype, Shape(array.shape)}; }
};

OutputTensor make_output(std::string file, Dtype dtype, const std::vector<std::int64_t>& shape);

// Writes every output into `dir` (created if missing). Each file is written
// under a temporary name first and renamed into place only once all of them
// are written, so a failure leaves no partial file; a path that cannot be
// replaced (e.g. a directory of the same name) is refused before anything is
// written. Throws UsageError naming the file.
void write_outputs(const std::string& dir, const std::vector<OutputTensor>& outputs);

}  // namespace lngrad::cli
