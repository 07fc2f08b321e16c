// Fuzz target: the .npy reader (cli/npy.hpp), on arbitrary bytes.
//
// Contract checked:
//   - parse_npy returns or throws NpyError, nothing else, and reads only the
//     bytes it is given (libFuzzer hands over an exact-size heap copy, so
//     AddressSanitizer sees any read past it);
//   - an NpyError message starts with the name passed in;
//   - a parsed array is consistent: at most kNpyMaxRank extents, none
//     negative, count() their product, data exactly count() elements;
//   - serialize_npy of it parses back to the same type, shape and data.
#include <cstdint>
#include <exception>
#include <string>

#include "fuzz_support.hpp"
#include "npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using lngrad::cli::NpyArray;
  using lngrad::cli::NpyError;
  using lngrad::fuzz::fail;
  NpyArray a;
  try {
    a = lngrad::cli::parse_npy(data, size, "input.npy");
  } catch (const NpyError& e) {
    const std::string msg = e.what();
    LNGRAD_FUZZ_CHECK(msg.rfind("input.npy: ", 0) == 0, "NpyError without the file name: " + msg);
    LNGRAD_FUZZ_CHECK(msg.find('\n') == std::string::npos, "NpyError message is not one line: " + msg);
    return 0;
  } catch (const std::exception& e) {
    fail(std::string("exception other than NpyError: ") + e.what());
  } catch (...) {
    fail("exception of unknown type");
  }

  LNGRAD_FUZZ_CHECK(a.shape.size() <= static_cast<std::size_t>(lngrad::cli::kNpyMaxRank), "rank above the limit");
  // An empty array (some extent 0) holds nothing, whatever its other extents.
  std::int64_t count = 1;
  bool empty = false;
  for (std::int64_t d : a.shape) {
    LNGRAD_FUZZ_CHECK(d >= 0, "negative extent accepted");
    empty = empty || d == 0;
  }
  for (std::int64_t d : a.shape) {
    if (empty) {
      count = 0;
      break;
    }
    LNGRAD_FUZZ_CHECK(!__builtin_mul_overflow(count, d, &count), "element count overflows");
  }
  LNGRAD_FUZZ_CHECK(a.count() == count, "count() is not the product of the shape");
  LNGRAD_FUZZ_CHECK(a.data.size() == static_cast<std::uint64_t>(count) * lngrad::cli::npy_type_size(a.type),
                    "data size does not match the shape");

  const std::vector<std::uint8_t> image = lngrad::cli::serialize_npy(a);
  NpyArray b;
  try {
    b = lngrad::cli::parse_npy(image.data(), image.size(), "round trip");
  } catch (const std::exception& e) {
    fail(std::string("a serialized array does not parse back: ") + e.what());
  }
  LNGRAD_FUZZ_CHECK(b.type == a.type && b.shape == a.shape && b.data == a.data, "round trip changed the array");
  return 0;
}
