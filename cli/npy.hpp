// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// Only what lngrad computes on is accepted: C-order arrays of float64,
// float32, float16 or uint16 (bfloat16 bit patterns), either byte order.
// Everything else - Fortran order, object or structured dtypes, other
// element types, malformed or oversized headers, data shorter or longer than
// the shape says - is refused with NpyError. The parser works on a memory
// buffer of known size and never reads outside it, so it can be fuzzed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lngrad::cli {

// A malformed or unsupported file. what() is one line: "<name>: <problem>".
class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Element types as stored; uint16 is only ever interpreted as bfloat16.
enum class NpyType : std::uint8_t { float64, float32, float16, uint16 };

std::size_t npy_type_size(NpyType type);
const char* npy_type_name(NpyType type);  // "float64", ..., "uint16"

struct NpyArray {
  NpyType type = NpyType::float32;
  std::vector<std::int64_t> shape;  // empty: a 0-d array holding one element
  std::vector<unsigned char> data;  // C order, converted to the host's byte order
  bool big_endian_file = false;     // the file stored the data big-endian

  std::int64_t count() const;  // elements: the product of shape (1 for 0-d)
};

// Limits. The header limit is numpy.load's own default (max_header_size),
// far above what any array of at most kNpyMaxRank axes needs.
inline constexpr std::size_t kNpyMaxHeaderSize = 10000;
inline constexpr int kNpyMaxRank = 32;  // NumPy's NPY_MAXDIMS

// Parses a whole .npy file held in memory; `name` prefixes every message.
NpyArray parse_npy(const std::uint8_t* data, std::size_t size, const std::string& name);

// Reads and parses a file; unreadable files raise NpyError too.
NpyArray read_npy(const std::string& path);

// A whole file's bytes; NpyError ("<path>: cannot open: ...") when it cannot be read.
std::vector<std::uint8_t> read_file(const std::string& path);

// count(shape) * item bytes, or nothing when that is 2^64 or more.
std::optional<std::size_t> checked_bytes(const std::vector<std::int64_t>& shape, std::size_t item);

// The file image of `array`: a version 1.0 header (2.0 if it would not fit)
// in the host's byte order, padded so that the data starts 64-byte aligned.
std::vector<std::uint8_t> serialize_npy(const NpyArray& array);

// "[2, 32, 16]"
std::string shape_str(const std::vector<std::int64_t>& shape);

}  // namespace lngrad::cli
