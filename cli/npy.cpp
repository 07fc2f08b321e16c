#include "npy.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string_view>
#include <sys/stat.h>

namespace lngrad::cli {

namespace {

constexpr unsigned char kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr bool kHostLittle = std::endian::native == std::endian::little;

bool one_of(char c, std::string_view set) { return set.find(c) != std::string_view::npos; }

[[noreturn]] void fail(const std::string& name, const std::string& problem) { throw NpyError(name + ": " + problem); }

// The header is a Python dict literal, as numpy writes it:
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// This parser accepts exactly that grammar (either quote, any spacing,
// optional trailing commas) and nothing that would need evaluating.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const std::string& name) : s_(text), name_(name) {}

  void parse(std::string& descr, bool& fortran_order, std::vector<std::int64_t>& shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    skip_space();
    expect('{', "the header to start with '{'");
    skip_space();
    while (!at('}')) {
      const std::string key = string_literal("a quoted key");
      skip_space();
      expect(':', "':' after '" + key + "'");
      skip_space();
      if (key == "descr") {
        once(have_descr, key);
        if (at('[')) fail(name_, "structured dtypes are not supported (descr is a list of fields)");
        descr = string_literal("a quoted dtype string for 'descr'");
      } else if (key == "fortran_order") {
        once(have_order, key);
        fortran_order = boolean();
      } else if (key == "shape") {
        once(have_shape, key);
        shape = tuple();
      } else {
        fail(name_, "unexpected key '" + key + "' in the header (expected descr, fortran_order, shape)");
      }
      skip_space();
      if (at(',')) {
        ++i_;
        skip_space();
      } else if (!at('}')) {
        problem("',' or '}' after the value of '" + key + "'");
      }
    }
    ++i_;  // '}'
    skip_space();
    if (i_ != s_.size()) problem("only spaces after the closing '}'");
    for (auto [have, key] : {std::pair{have_descr, "descr"}, std::pair{have_order, "fortran_order"},
                             std::pair{have_shape, "shape"}}) {
      if (!have) fail(name_, std::string("the header lacks the key '") + key + "'");
    }
  }

 private:
  bool at(char c) const { return i_ < s_.size() && s_[i_] == c; }

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }

  [[noreturn]] void problem(const std::string& expected) const {
    std::string found = "the end of the header";
    if (i_ < s_.size()) {
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      found = (c >= 0x20 && c < 0x7F) ? "'" + std::string(1, static_cast<char>(c)) + "'" : "a non-printable byte";
    }
    fail(name_, "malformed header: expected " + expected + " at offset " + std::to_string(i_) + ", found " + found);
  }

  void expect(char c, const std::string& what) {
    if (!at(c)) problem(what);
    ++i_;
  }

  void once(bool& seen, const std::string& key) const {
    if (seen) fail(name_, "the header repeats the key '" + key + "'");
    seen = true;
  }

  std::string string_literal(const std::string& what) {
    if (!at('\'') && !at('"')) problem(what);
    const char quote = s_[i_++];
    const std::size_t begin = i_;
    while (i_ < s_.size() && s_[i_] != quote) {
      const unsigned char c = static_cast<unsigned char>(s_[i_]);
      if (c == '\\' || c < 0x20 || c >= 0x7F) problem("a plain ASCII string");
      ++i_;
    }
    if (i_ >= s_.size()) problem("a closing quote");
    return std::string(s_.substr(begin, i_++ - begin));
  }

  bool boolean() {
    for (auto [word, value] : {std::pair{std::string_view("True"), true}, std::pair{std::string_view("False"), false}}) {
      if (s_.substr(i_, word.size()) == word) {
        i_ += word.size();
        return value;
      }
    }
    problem("True or False for 'fortran_order'");
  }

  std::int64_t integer() {
    constexpr std::int64_t kMax = std::int64_t{1} << 62;  // far beyond any real extent
    if (i_ >= s_.size() || s_[i_] < '0' || s_[i_] > '9') problem("a non-negative integer extent in 'shape'");
    if (s_[i_] == '0' && i_ + 1 < s_.size() && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9') {
      problem("an integer without leading zeros");
    }
    std::int64_t v = 0;
    while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') {
      const int digit = s_[i_++] - '0';
      if (v > (kMax - digit) / 10) fail(name_, "shape extent too large (over 2^62)");
      v = v * 10 + digit;
    }
    return v;
  }

  // (), (n,), (n, m), (n, m,) - a one-element tuple needs its comma, as in Python.
  std::vector<std::int64_t> tuple() {
    std::vector<std::int64_t> dims;
    expect('(', "a tuple for 'shape'");
    skip_space();
    bool comma = false;
    while (!at(')')) {
      if (static_cast<int>(dims.size()) == kNpyMaxRank) {
        fail(name_, "shape has more than " + std::to_string(kNpyMaxRank) + " axes");
      }
      dims.push_back(integer());
      skip_space();
      comma = at(',');
      if (comma) {
        ++i_;
        skip_space();
      } else if (!at(')')) {
        problem("',' or ')' in 'shape'");
      }
    }
    if (dims.size() == 1 && !comma) fail(name_, "malformed header: shape (n) must be written (n,)");
    ++i_;  // ')'
    return dims;
  }

  std::string_view s_;
  const std::string& name_;
  std::size_t i_ = 0;
};

std::string describe_unsupported(const std::string& descr) {
  const std::string code = descr.size() > 1 && one_of(descr[0], "<>|=") ? descr.substr(1) : descr;
  if (code == "O" || code == "O8" || code == "O4") return "object arrays are not supported";
  std::string kind;
  if (!code.empty()) {
    switch (code[0]) {
      case 'b': kind = code == "b1" ? "bool" : "int"; break;
      case 'i': kind = "int"; break;
      case 'u': kind = "uint"; break;
      case 'f': kind = "float"; break;
      case 'c': kind = "complex"; break;
      case 'S': kind = "bytes"; break;
      case 'U': kind = "str"; break;
      case 'V': kind = "void"; break;
      case 'M': kind = "datetime64"; break;
      case 'm': kind = "timedelta64"; break;
      default: break;
    }
  }
  std::string what = "dtype '" + descr + "'";
  const bool sized = code.size() > 1 && code.size() <= 3 &&
                    std::all_of(code.begin() + 1, code.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (sized && (kind == "int" || kind == "uint" || kind == "float" || kind == "complex")) {
    const int bytes = code.size() == 2 ? code[1] - '0' : (code[1] - '0') * 10 + (code[2] - '0');
    what = "dtype " + kind + std::to_string(bytes * 8) + " ('" + descr + "')";
  } else if (kind == "bool") {
    what = "dtype bool ('" + descr + "')";
  }
  return what + " is not supported: expected float64, float32, float16, or uint16 holding bfloat16";
}

// descr -> element type and whether the file is big-endian.
void decode_descr(const std::string& descr, const std::string& name, NpyType& type, bool& big_endian) {
  if (descr.size() == 3 && one_of(descr[0], "<>=")) {
    const std::string code = descr.substr(1);
    bool known = true;
    if (code == "f8") type = NpyType::float64;
    else if (code == "f4") type = NpyType::float32;
    else if (code == "f2") type = NpyType::float16;
    else if (code == "u2") type = NpyType::uint16;
    else known = false;
    if (known) {
      big_endian = descr[0] == '>' || (descr[0] == '=' && !kHostLittle);
      return;
    }
  }
  if (descr.size() > 2 && descr[0] == '|' && one_of(descr[1], "fiuc") && descr.substr(2) != "1") {
    fail(name, "dtype '" + descr + "': byte order '|' is only valid for single-byte types");
  }
  fail(name, describe_unsupported(descr));
}

std::uint32_t read_le(const std::uint8_t* p, int bytes) {
  std::uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | p[i];
  return v;
}

}  // namespace

std::size_t npy_type_size(NpyType type) {
  switch (type) {
    case NpyType::float64: return 8;
    case NpyType::float32: return 4;
    case NpyType::float16:
    case NpyType::uint16: return 2;
  }
  return 1;
}

const char* npy_type_name(NpyType type) {
  switch (type) {
    case NpyType::float64: return "float64";
    case NpyType::float32: return "float32";
    case NpyType::float16: return "float16";
    case NpyType::uint16: return "uint16";
  }
  return "unknown";
}

std::int64_t NpyArray::count() const {
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;  // before any product can overflow
  std::int64_t n = 1;
  for (std::int64_t d : shape) n *= d;
  return n;
}

std::string shape_str(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

NpyArray parse_npy(const std::uint8_t* data, std::size_t size, const std::string& name) {
  if (size < 8) fail(name, "truncated: " + std::to_string(size) + " bytes, shorter than the .npy preamble");
  if (std::memcmp(data, kMagic, sizeof kMagic) != 0) fail(name, "not a .npy file (bad magic bytes)");
  const int major = data[6], minor = data[7];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0)) {
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (expected 1.0, 2.0 or 3.0)");
  }
  const int len_bytes = major == 1 ? 2 : 4;
  const std::size_t preamble = 8 + static_cast<std::size_t>(len_bytes);
  if (size < preamble) fail(name, "truncated: " + std::to_string(size) + " bytes, shorter than the .npy preamble");
  const std::size_t header_len = read_le(data + 8, len_bytes);
  if (header_len > kNpyMaxHeaderSize) {
    fail(name, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                   std::to_string(kNpyMaxHeaderSize) + " bytes");
  }
  if (header_len > size - preamble) {
    fail(name, "truncated header: the header length is " + std::to_string(header_len) + " bytes but only " +
                   std::to_string(size - preamble) + " follow the preamble");
  }
  if (header_len == 0 || data[preamble + header_len - 1] != '\n') {
    fail(name, "malformed header: it must end with a newline");
  }

  std::string descr;
  bool fortran_order = false;
  std::vector<std::int64_t> shape;
  const std::string_view text(reinterpret_cast<const char*>(data + preamble), header_len);
  HeaderParser(text, name).parse(descr, fortran_order, shape);

  NpyArray out;
  decode_descr(descr, name, out.type, out.big_endian_file);
  if (fortran_order) {
    fail(name, "Fortran-order arrays are not supported (save a C-order array, e.g. numpy.ascontiguousarray)");
  }
  out.shape = std::move(shape);

  const std::size_t item = npy_type_size(out.type);
  const std::size_t available = size - preamble - header_len;
  const std::optional<std::size_t> bytes = checked_bytes(out.shape, item);
  const bool too_big = !bytes;
  const std::size_t count = too_big ? 0 : *bytes / item;
  const std::string shape_desc = "shape " + shape_str(out.shape) + " of " + npy_type_name(out.type);
  if (too_big || count * item > available) {
    fail(name, "data shorter than the header says: " + shape_desc + " needs " +
                   (too_big ? std::string("more than 2^64") : std::to_string(count * item)) + " bytes, the file holds " +
                   std::to_string(available));
  }
  if (count * item < available) {
    fail(name, "data longer than the header says: " + shape_desc + " needs " + std::to_string(count * item) +
                   " bytes, the file holds " + std::to_string(available));
  }
  const std::uint8_t* src = data + preamble + header_len;
  out.data.assign(src, src + count * item);
  if (out.big_endian_file == kHostLittle && item > 1) {
    for (std::size_t i = 0; i < out.data.size(); i += item) std::reverse(out.data.begin() + i, out.data.begin() + i + item);
  }
  return out;
}

std::optional<std::size_t> checked_bytes(const std::vector<std::int64_t>& shape, std::size_t item) {
  // Count with an overflow check before any multiplication can wrap.
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) return 0;
  std::size_t count = 1;
  for (const std::int64_t extent : shape) {
    const auto d = static_cast<std::size_t>(extent);
    if (count > std::numeric_limits<std::size_t>::max() / item / d) return std::nullopt;
    count *= d;
  }
  return count * item;
}

std::vector<std::uint8_t> read_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) fail(path, "is a directory, expected a file");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<std::uint8_t> bytes;
  std::uint8_t chunk[1 << 16];
  std::size_t n;
  while ((n = std::fread(chunk, 1, sizeof chunk, f)) > 0) bytes.insert(bytes.end(), chunk, chunk + n);
  const bool failed = std::ferror(f) != 0;
  std::fclose(f);
  if (failed) fail(path, "read error");
  return bytes;
}

NpyArray read_npy(const std::string& path) {
  const std::vector<std::uint8_t> bytes = read_file(path);
  return parse_npy(bytes.data(), bytes.size(), path);
}

std::vector<std::uint8_t> serialize_npy(const NpyArray& array) {
  static const char* const codes[] = {"f8", "f4", "f2", "u2"};
  std::string header = std::string("{'descr': '") + (kHostLittle ? '<' : '>') +
                       codes[static_cast<int>(array.type)] + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < array.shape.size(); ++i) {
    header += (i ? ", " : "") + std::to_string(array.shape[i]);
  }
  header += array.shape.size() == 1 ? ",), }" : "), }";
  // Version 1.0 stores the header length in 2 bytes; 2.0 in 4.
  std::size_t preamble = 10;
  std::size_t total = (preamble + header.size() + 1 + 63) / 64 * 64;  // data 64-byte aligned, as numpy
  if (total - preamble > 65535) {
    preamble = 12;
    total = (preamble + header.size() + 1 + 63) / 64 * 64;
  }
  const bool v1 = preamble == 10;
  header.append(total - preamble - header.size() - 1, ' ');
  header += '\n';

  std::vector<std::uint8_t> out(kMagic, kMagic + sizeof kMagic);
  out.push_back(v1 ? 1 : 2);
  out.push_back(0);
  const std::size_t len = header.size();
  for (std::size_t i = 0; i < preamble - 8; ++i) out.push_back(static_cast<std::uint8_t>(len >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

}  // namespace lngrad::cli
