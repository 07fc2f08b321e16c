// compare: the golden-data check. Two .npy files, or two folders compared file
// by file, element by element in the files' own dtype.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "lngrad/half.hpp"
#include "tensor_io.hpp"

namespace lngrad::cli {

namespace {

namespace fs = std::filesystem;

const char* const kCompareHelp = R"(usage: lngrad compare EXPECTED ACTUAL [--rtol R] [--atol A] [--dtype D]...
                      [--shape S]...

Compares two files (.npy or raw), or two folders file by file (every *.npy
and *.bin in EXPECTED against the file of the same name in ACTUAL). For each
tensor it
prints the largest absolute and relative error with their indices, the
worst element (the one furthest outside, or closest to, its tolerance), the
largest ULP distance counted in the files' own dtype, and how many elements
are outside tolerance. An element is outside when
  |actual - expected| > atol + rtol * |expected|        (numpy.isclose's rule)
NaN against NaN counts as equal, NaN against a number as outside; infinities
must match exactly. A shape or dtype mismatch, or a file missing from
ACTUAL, counts as a difference. Byte order does not matter.

Default tolerances, by dtype (--rtol and --atol replace them for every file):
  float64   rtol 1e-12  atol 1e-12  about 4500 ulps: room for another summation
                                    order over long rows, yet far below any
                                    float32 rounding in a float64 path
  float32   rtol 1e-4   atol 1e-4   CANN's own precision check for this
                                    operator's float32 samples (about 840 ulps)
  float16   rtol 4e-3   atol 4e-3   CANN's float16/bfloat16 system tests (about
  bfloat16  rtol 4e-3   atol 4e-3   4 float16 ulps; one bfloat16 rounding, 2^-8)
Raw files: --dtype D (or --dtype NAME=D, NAME a file's name without .bin)
gives their dtype and --shape their shape (optional: without one, a raw file
has the shape of its .npy counterpart, else one axis).
Exit status 1 when anything is outside tolerance or missing.
)";

struct Tolerance {
  double rtol, atol;
};

Tolerance default_tolerance(Dtype d) {
  switch (d) {
    case Dtype::float64: return {1e-12, 1e-12};
    case Dtype::float32: return {1e-4, 1e-4};
    case Dtype::float16:
    case Dtype::bfloat16: return {4e-3, 4e-3};
  }
  return {0, 0};
}

// One element as a double, and its bit pattern with the sign split off.
double value_at(const InputTensor& t, std::size_t i) {
  const unsigned char* p = t.array.data.data();
  switch (t.dtype) {
    case Dtype::float64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case Dtype::float32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case Dtype::float16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); return float16_to_float(v); }
    case Dtype::bfloat16: { std::uint16_t v; std::memcpy(&v, p + 2 * i, 2); return bfloat16_to_float(v); }
  }
  return 0;
}

struct SignMagnitude {
  bool negative;
  std::uint64_t magnitude;
};

SignMagnitude bits_at(const InputTensor& t, std::size_t i) {
  const std::size_t size = dtype_size(t.dtype);
  std::uint64_t u = 0;
  if (size == 8) {
    std::memcpy(&u, t.array.data.data() + 8 * i, 8);
  } else if (size == 4) {
    std::uint32_t v;
    std::memcpy(&v, t.array.data.data() + 4 * i, 4);
    u = v;
  } else {
    std::uint16_t v;
    std::memcpy(&v, t.array.data.data() + 2 * i, 2);
    u = v;
  }
  const std::uint64_t sign = std::uint64_t{1} << (8 * size - 1);
  return {(u & sign) != 0, u & (sign - 1)};
}

// Number of representable values of the dtype between the two (0 for +0 and
// -0): adjacent floats of one sign have adjacent magnitudes as integers.
std::uint64_t ulp_distance(SignMagnitude a, SignMagnitude b) {
  if (a.negative == b.negative) return a.magnitude > b.magnitude ? a.magnitude - b.magnitude : b.magnitude - a.magnitude;
  return a.magnitude + b.magnitude;  // below 2^64: each magnitude is below 2^63
}

std::string index_str(std::size_t flat, const std::vector<std::int64_t>& shape) {
  std::vector<std::int64_t> idx(shape.size());
  for (std::size_t k = shape.size(); k-- > 0;) {
    idx[k] = static_cast<std::int64_t>(flat % static_cast<std::size_t>(shape[k]));
    flat /= static_cast<std::size_t>(shape[k]);
  }
  return shape_str(idx);
}

std::string num(double v, Dtype d) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", d == Dtype::float64 ? 17 : 9, v);
  return buf;
}

// Compares one pair; prints its report; returns whether it matched.
bool compare_tensors(const std::string& label, const InputTensor& e, const InputTensor& a,
                     std::optional<double> rtol_opt, std::optional<double> atol_opt) {
  if (e.dtype != a.dtype || e.array.shape != a.array.shape) {
    std::printf("%s: FAIL: expected %s %s, actual %s %s\n", label.c_str(), dtype_name(e.dtype),
                shape_str(e.array.shape).c_str(), dtype_name(a.dtype), shape_str(a.array.shape).c_str());
    return false;
  }
  const Tolerance def = default_tolerance(e.dtype);
  const double rtol = rtol_opt.value_or(def.rtol), atol = atol_opt.value_or(def.atol);
  const auto n = static_cast<std::size_t>(e.array.count());

  double max_abs = 0, max_rel = 0, worst_ratio = -1;
  std::size_t at_abs = 0, at_rel = 0, worst = 0, outside = 0, nan_mismatch = 0;
  std::uint64_t max_ulp = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double ev = value_at(e, i), av = value_at(a, i);
    double diff = 0, ratio = 0;
    bool out = false;
    if (std::isnan(ev) || std::isnan(av)) {
      out = std::isnan(ev) != std::isnan(av);
      nan_mismatch += out ? 1 : 0;
      ratio = out ? std::numeric_limits<double>::infinity() : 0;
      diff = ratio;
    } else {
      if (ev != av) diff = std::fabs(av - ev);  // inf - inf stays out of it
      const double tol = atol + rtol * std::fabs(ev);
      out = std::isinf(ev) || std::isinf(av) ? ev != av : diff > tol;
      ratio = tol > 0 && std::isfinite(tol) ? diff / tol : (out ? std::numeric_limits<double>::infinity() : 0);
      const double rel = diff == 0 ? 0 : diff / std::fabs(ev);  // inf for expected 0
      if (rel > max_rel) { max_rel = rel; at_rel = i; }
      max_ulp = std::max(max_ulp, ulp_distance(bits_at(e, i), bits_at(a, i)));
    }
    if (diff > max_abs) { max_abs = diff; at_abs = i; }
    if (ratio > worst_ratio) { worst_ratio = ratio; worst = i; }
    outside += out ? 1 : 0;
  }

  const auto& shape = e.array.shape;
  std::printf("%s: %s (%s %s, rtol %g, atol %g)\n", label.c_str(), outside ? "FAIL" : "ok", dtype_name(e.dtype),
              shape_str(shape).c_str(), rtol, atol);
  if (n == 0) {
    std::printf("  no elements\n");
    return true;
  }
  std::printf("  max abs error %.3g at %s, max rel error %.3g at %s, max ULP distance %llu\n", max_abs,
              index_str(at_abs, shape).c_str(), max_rel, index_str(at_rel, shape).c_str(),
              static_cast<unsigned long long>(max_ulp));
  std::printf("  worst element %s: expected %s, actual %s (%.3g of its tolerance)\n", index_str(worst, shape).c_str(),
              num(value_at(e, worst), e.dtype).c_str(), num(value_at(a, worst), a.dtype).c_str(), worst_ratio);
  std::printf("  outside tolerance: %zu of %zu", outside, n);
  if (nan_mismatch) std::printf(" (%zu NaN against a number)", nan_mismatch);
  std::printf("\n");
  return outside == 0;
}

void report_unreadable(const char* message) {
  std::fflush(stdout);
  std::fprintf(stderr, "lngrad: %s\n", message);
}

std::vector<std::string> data_files(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name.size() > 4 && (name.ends_with(".npy") || name.ends_with(".bin")) &&
        name[0] != '.') {
      names.push_back(name);
    }
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The pair of files to compare. A raw file without a --shape entry of its
// own takes the default --shape, else its .npy partner's shape, else one
// axis; without a --dtype, its partner's dtype.
std::pair<InputTensor, InputTensor> load_pair(const fs::path& expected, const fs::path& actual,
                                              const TensorSpecs& specs) {
  const auto load = [&](const fs::path& p, const InputTensor* partner) {
    RawDefaults d{specs.default_shape(), std::nullopt, true};
    if (partner != nullptr && !partner->raw) {
      if (!d.shape) d.shape = partner->array.shape;
      d.dtype = partner->dtype;
    }
    return load_tensor(p.string(), p.string(), p.stem().string(), specs, d);
  };
  if (!is_npy(expected.string()) && is_npy(actual.string())) {
    InputTensor t = load(actual, nullptr);
    InputTensor e = load(expected, &t);
    return {std::move(e), std::move(t)};
  }
  InputTensor e = load(expected, nullptr);
  InputTensor t = load(actual, &e);
  return {std::move(e), std::move(t)};
}

}  // namespace

int cmd_compare(const Argv& args) {
  const Args a("compare", args, {{"rtol", true}, {"atol", true}, {"dtype", true, true}, {"shape", true, true}}, 2);
  if (a.help()) {
    std::printf("%s\n%s\n%s", kCompareHelp, kNpyHelp, kExitStatusHelp);
    return kExitOk;
  }
  const std::optional<double> rtol = a.number("rtol"), atol = a.number("atol");
  for (auto [name, v] : {std::pair{"rtol", rtol}, std::pair{"atol", atol}}) {
    if (v && !(std::isfinite(*v) && *v >= 0)) a.fail(std::string("--") + name + ": expected a finite value >= 0");
  }
  if (a.positionals().size() != 2) a.fail("expected two paths, EXPECTED and ACTUAL");
  const fs::path expected = a.positionals()[0], actual = a.positionals()[1];
  std::error_code ec;
  const bool edir = fs::is_directory(expected, ec), adir = fs::is_directory(actual, ec);

  if (!edir && !adir) {
    // NAME= entries name the files by their names without .npy/.bin.
    const TensorSpecs specs(a, {expected.stem().string(), actual.stem().string()});
    const auto [e, t] = load_pair(expected, actual, specs);
    return compare_tensors(actual.string(), e, t, rtol, atol) ? kExitOk : kExitDifferences;
  }
  if (edir != adir) a.fail("EXPECTED and ACTUAL must both be files or both be folders");

  const std::vector<std::string> names = data_files(expected);
  if (names.empty()) a.fail(expected.string() + ": no .npy or .bin files to compare");
  std::vector<std::string> stems;
  for (const std::string& name : names) stems.push_back(fs::path(name).stem().string());
  const TensorSpecs specs(a, stems);
  std::size_t ok = 0, differ = 0, missing = 0, unreadable = 0;
  for (const std::string& name : names) {
    if (!fs::exists(actual / name, ec)) {
      std::printf("%s: FAIL: missing from %s\n", name.c_str(), actual.string().c_str());
      ++missing;
      continue;
    }
    try {
      const auto [e, t] = load_pair(expected / name, actual / name, specs);
      (compare_tensors(name, e, t, rtol, atol) ? ok : differ) += 1;
    } catch (const NpyError& err) {
      report_unreadable(err.what());
      ++unreadable;
    } catch (const UsageError& err) {  // uint16 without --dtype bfloat16, a raw file's size
      report_unreadable(err.what());
      ++unreadable;
    }
  }
  for (const std::string& name : data_files(actual)) {
    if (!std::binary_search(names.begin(), names.end(), name)) {
      std::printf("%s: not in %s, not compared\n", name.c_str(), expected.string().c_str());
    }
  }
  std::printf("%zu compared: %zu ok, %zu outside tolerance, %zu missing, %zu unreadable\n", ok + differ, ok, differ,
              missing, unreadable);
  if (unreadable) return kExitUsage;
  return differ || missing ? kExitDifferences : kExitOk;
}

}  // namespace lngrad::cli
