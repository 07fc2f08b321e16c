// .npy and raw files as lngrad tensors: inputs read with their --shape and
// --dtype, outputs allocated in a given dtype and written all-or-nothing.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lngrad/lngrad.hpp"
#include "npy.hpp"

namespace lngrad::cli {

class Args;

using Dims = std::vector<std::int64_t>;

// The .npy element type a dtype is stored as: bfloat16 -> uint16.
NpyType storage_type(Dtype dtype);

// A file is .npy when its name ends in ".npy"; any other name holds raw data
// (numpy's tofile: no header, C order, the host's byte order).
bool is_npy(const std::string& path);

// --shape and --dtype, each given any number of times as VALUE, the default,
// or NAME=VALUE, for the tensor NAME only. Shapes are written "6,10,48" (or
// "[6, 10, 48]"); dtypes float64, float32, float16 or bfloat16. They describe
// raw files; of an .npy file, which carries its own, a NAME=dtype is checked,
// and bfloat16 lets uint16 data be read as bfloat16 bit patterns.
class TensorSpecs {
 public:
  // `names`: the NAMEs the command knows; another is refused.
  TensorSpecs(const Args& args, const std::vector<std::string>& names);

  std::optional<Dims> own_shape(const std::string& name) const;
  const std::optional<Dims>& default_shape() const { return default_shape_; }
  std::optional<Dtype> own_dtype(const std::string& name) const;
  std::optional<Dtype> dtype(const std::string& name) const;  // own, else the default

 private:
  std::optional<Dims> default_shape_;
  std::optional<Dtype> default_dtype_;
  std::map<std::string, Dims> shapes_;
  std::map<std::string, Dtype> dtypes_;
};

// An input tensor; `label` names it in messages: "--x x.npy", or the path.
struct InputTensor {
  NpyArray array;
  Dtype dtype = Dtype::float32;
  std::string label;
  bool raw = false;
  ConstTensorView view() const { return {array.data.data(), dtype, Shape(array.shape)}; }
};

// What a raw file takes when --shape and --dtype do not say: the command's
// rule for the tensor, and with `flat` one axis of the file's length.
struct RawDefaults {
  std::optional<Dims> shape;
  std::optional<Dtype> dtype;
  bool flat = false;
};

// Reads the tensor NAME from `path`. An .npy file gives its own shape and
// dtype (uint16 only with the bfloat16 dtype). A raw file takes NAME's own
// --shape, else `defaults`, and its dtype from `specs`, else `defaults`; a
// file whose length is not that many elements is refused.
InputTensor load_tensor(const std::string& label, const std::string& path, const std::string& name,
                        const TensorSpecs& specs, const RawDefaults& defaults);

// An output tensor with its file name inside the output folder.
struct OutputTensor {
  std::string file;  // e.g. "pd_x.npy" or "pd_x.bin"
  bool raw = false;  // written without a header (.bin)
  NpyArray array;
  Dtype dtype = Dtype::float32;
  TensorView view() { return {array.data.data(), dtype, Shape(array.shape)}; }
};

// `stem` ("pd_x") with ".bin" when `raw`, else ".npy".
OutputTensor make_output(const std::string& stem, bool raw, Dtype dtype, const Dims& shape);

// Writes every output into `dir` (created if missing), as .npy or raw data.
// Each file is written under a temporary name first and renamed into place
// only once all of them are written, so a failure leaves no partial file; a
// path that cannot be replaced (e.g. a directory of the same name) is refused
// before anything is written. Throws UsageError naming the file.
void write_outputs(const std::string& dir, const std::vector<OutputTensor>& outputs);

}  // namespace lngrad::cli
