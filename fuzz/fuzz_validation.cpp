// Fuzz target: the argument validation of the four operators.
//
// The input decodes one call: the operator, a consistent problem (shape,
// normalized axes, dtypes) and then a few mutations of it (a dtype, an
// extent, a rank, a null pointer, an absent tensor, an output pointed into an
// input), options (epsilon, statistic, output mask, normalized_ndim, threads)
// and the values. Every tensor gets exactly the bytes its view claims (or,
// when the claim cannot be backed because it overflows, a region that faults
// on any access). The contract checked:
//   - the call returns or throws lngrad::Error, nothing else;
//   - no access outside the buffers (AddressSanitizer, the fault region);
//   - on Error: the message reads "<op>: <argument>: expected ..., given ..."
//     and no byte of any tensor changed;
//   - on success: every requested output was written in full (outputs start
//     as a signalling-NaN pattern no computation produces), nothing else was
//     written, and inputs are unchanged unless an output is exactly over them;
//   - for some successful calls (a choice read after the values), the same
//     call with its rows repeated to 3 * 2^14 elements or more, so that the
//     library really uses several threads: 1 and 3 threads give the same
//     values, and every repetition of a row gives the original call's (bit
//     for bit, NaN for NaN: a NaN's sign and payload may differ).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "lngrad/half.hpp"
#include "lngrad/lngrad.hpp"

namespace lngrad::fuzz {
namespace {

constexpr std::int64_t kMaxBaseElements = 4096;
constexpr std::size_t kMaxBackedBytes = std::size_t{64} << 20;
const Dtype kDtypes[] = {Dtype::float64, Dtype::float32, Dtype::float16, Dtype::bfloat16};

enum class Op { grad, grad_x, grad_beta, forward };
const char* op_name(Op op) {
  switch (op) {
    case Op::grad: return "layer_norm_grad";
    case Op::grad_x: return "layer_norm_grad_x";
    case Op::grad_beta: return "layer_norm_grad_beta";
    case Op::forward: return "layer_norm";
  }
  return "?";
}

bool known(Dtype d) { return static_cast<unsigned>(d) <= static_cast<unsigned>(Dtype::bfloat16); }

// Bytes a view claims; nullopt when the count overflows 64 bits. Extents
// below 1 claim nothing (such a view must be refused before any access).
std::optional<std::uint64_t> claimed_bytes(const Shape& s, Dtype d) {
  std::uint64_t n = dtype_size(d);
  for (int i = 0; i < s.rank() && i < kMaxRank; ++i) {
    if (s[i] < 1) return 0;
    if (n > std::numeric_limits<std::uint64_t>::max() / static_cast<std::uint64_t>(s[i])) return std::nullopt;
    n *= static_cast<std::uint64_t>(s[i]);
  }
  if (n > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) return std::nullopt;
  return n;
}

// What an argument is, apart from its memory (copyable; a Block is not).
struct ArgDecl {
  const char* name = "";
  bool output = false;
  bool optional = false;  // may be absent (std::nullopt / an empty view)
  bool present = true;
  bool null_data = false;
  Dtype dtype = Dtype::float32;
  std::vector<std::int64_t> dims;
  int alias_of = -1;            // outputs: index of the input the view points into
  std::int64_t alias_offset = 0;  // in elements of the output's dtype
  bool requested = false;       // outputs: the call must write every element
};

struct Arg : ArgDecl {
  Block block;
  void* data = nullptr;
  bool unbacked = false;

  Shape shape() const { return Shape(dims.data(), dims.size()); }
  std::size_t bytes() const { return block.size(); }
  ConstTensorView cview() const { return {data, dtype, shape()}; }
  TensorView view() const { return {data, dtype, shape()}; }
};

// Signalling NaNs: arithmetic only ever produces quiet NaNs, and the 16-bit
// conversions quieten, so a requested output still holding one was not written.
void put_sentinel(std::uint8_t* p, Dtype d) {
  switch (d) {
    case Dtype::float64: { const std::uint64_t v = 0x7FF4DEADBEEF0001ull; std::memcpy(p, &v, 8); return; }
    case Dtype::float32: { const std::uint32_t v = 0x7FA5A5A5u; std::memcpy(p, &v, 4); return; }
    case Dtype::float16: { const std::uint16_t v = 0x7D2Bu; std::memcpy(p, &v, 2); return; }
    case Dtype::bfloat16: { const std::uint16_t v = 0x7FA5u; std::memcpy(p, &v, 2); return; }
  }
  *p = 0xA5;
}

bool is_sentinel(const std::uint8_t* p, Dtype d) {
  std::uint8_t want[8];
  put_sentinel(want, d);
  return std::memcmp(p, want, dtype_size(d)) == 0;
}

class Values {
 public:
  Values(std::uint64_t seed, unsigned special_rate) : s_(seed | 1), rate_(special_rate) {}
  double next() {
    static const double kSpecial[] = {0.0, -0.0, NAN, INFINITY, -INFINITY, 1e-40, 5e-324, 65504.0, 1e30, -1e30, 1e-8, 6e-8};
    const std::uint64_t v = step();
    if (rate_ != 0 && v % 64 < rate_) return kSpecial[(v >> 8) % (sizeof kSpecial / sizeof kSpecial[0])];
    return static_cast<double>(static_cast<std::int64_t>((v >> 16) % 2001) - 1000) / 256.0;
  }
  std::uint64_t step() {  // xorshift64
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return s_;
  }

 private:
  std::uint64_t s_;
  unsigned rate_;
};

void fill_value(std::uint8_t* p, Dtype d, double v, Values& rng) {
  switch (d) {
    case Dtype::float64: std::memcpy(p, &v, 8); return;
    case Dtype::float32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); return; }
    case Dtype::float16: { const std::uint16_t h = float_to_float16(static_cast<float>(v)); std::memcpy(p, &h, 2); return; }
    case Dtype::bfloat16: { const std::uint16_t h = float_to_bfloat16(static_cast<float>(v)); std::memcpy(p, &h, 2); return; }
  }
  *p = static_cast<std::uint8_t>(rng.step());
}

struct Call {
  Op op = Op::grad;
  std::vector<Arg> args;
  std::optional<double> epsilon;
  Statistic statistic = Statistic::variance;
  bool mask[3] = {true, true, true};
  int normalized_ndim = 0;
  int num_threads = 0;
  // The consistent call's normalized rank and statistics layout, and whether
  // a mutation changed an extent or a rank (see tile_rows).
  int base_ndim = 0;
  bool keepdim_stats = false;
  bool shapes_mutated = false;

  Arg& arg(const char* name) {
    for (Arg& a : args) {
      if (std::string(a.name) == name) return a;
    }
    fail(std::string("no argument ") + name);
  }
  std::optional<ConstTensorView> opt(const char* name) {
    Arg& a = arg(name);
    return a.present ? std::optional<ConstTensorView>(a.cview()) : std::nullopt;
  }
  TensorView out(const char* name) {
    Arg& a = arg(name);
    return a.present ? a.view() : TensorView{nullptr, a.dtype, a.shape()};
  }

  void invoke(int threads) {
    switch (op) {
      case Op::grad: {
        GradOptions o;
        o.epsilon = epsilon;
        o.statistic = statistic;
        o.compute_pd_x = mask[0];
        o.compute_pd_gamma = mask[1];
        o.compute_pd_beta = mask[2];
        o.normalized_ndim = normalized_ndim;
        o.num_threads = threads;
        layer_norm_grad(arg("dy").cview(), arg("x").cview(), arg("variance").cview(), arg("mean").cview(),
                        opt("gamma"), out("pd_x"), out("pd_gamma"), out("pd_beta"), o);
        return;
      }
      case Op::grad_x: {
        GradXOptions o;
        o.epsilon = epsilon;
        o.statistic = statistic;
        o.normalized_ndim = normalized_ndim;
        o.num_threads = threads;
        layer_norm_grad_x(arg("dy").cview(), arg("x").cview(), arg("variance").cview(), arg("mean").cview(),
                          opt("gamma"), out("pd_x"), out("res_for_gamma"), o);
        return;
      }
      case Op::grad_beta: {
        GradBetaOptions o;
        o.num_threads = threads;
        layer_norm_grad_beta(arg("res_for_gamma").cview(), arg("dy").cview(), out("pd_gamma"), out("pd_beta"), o);
        return;
      }
      case Op::forward: {
        ForwardOptions o;
        o.epsilon = epsilon;
        o.normalized_ndim = normalized_ndim;
        o.num_threads = threads;
        layer_norm(arg("x").cview(), opt("gamma"), opt("beta"), out("y"), out("mean"), out("variance"), out("rstd"),
                   o);
        return;
      }
    }
  }
};

// The consistent call the mutations start from.
Call decode_base(Reader& r) {
  Call c;
  c.op = static_cast<Op>(r.pick(4));
  const Dtype x = kDtypes[r.pick(4)];
  const std::vector<Dtype> stat_ok = x == Dtype::float64   ? std::vector<Dtype>{Dtype::float64}
                                     : x == Dtype::float32 ? std::vector<Dtype>{Dtype::float32, Dtype::float64}
                                                           : std::vector<Dtype>{x, Dtype::float32, Dtype::float64};
  const Dtype stat = stat_ok[r.pick(static_cast<unsigned>(stat_ok.size()))];
  const Dtype param = r.one_in(2) ? x : (x == Dtype::float64 ? Dtype::float64 : Dtype::float32);
  const Dtype res = x == Dtype::float64 ? x : (r.one_in(2) ? x : Dtype::float32);

  static const std::int64_t kExtents[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 64, 100};
  const int rank = 1 + static_cast<int>(r.pick(4));
  std::vector<std::int64_t> xs;
  std::int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    std::int64_t e = kExtents[r.pick(16)];
    if (count * e > kMaxBaseElements) e = 1;
    count *= e;
    xs.push_back(e);
  }
  const int ndim = 1 + static_cast<int>(r.pick(static_cast<unsigned>(rank)));
  const std::vector<std::int64_t> norm(xs.end() - ndim, xs.end());
  std::vector<std::int64_t> stat_dims(xs.begin(), xs.end() - ndim);
  c.base_ndim = ndim;
  c.keepdim_stats = r.one_in(2);
  if (c.keepdim_stats) stat_dims.insert(stat_dims.end(), static_cast<std::size_t>(ndim), 1);

  auto add = [&](const char* name, bool output, Dtype d, const std::vector<std::int64_t>& dims, bool optional = false) {
    Arg a;
    a.name = name;
    a.output = output;
    a.dtype = d;
    a.dims = dims;
    a.optional = optional;
    c.args.push_back(std::move(a));
  };
  switch (c.op) {
    case Op::grad:
    case Op::grad_x:
      add("dy", false, x, xs);
      add("x", false, x, xs);
      add("variance", false, stat, stat_dims);
      add("mean", false, stat, stat_dims);
      add("gamma", false, param, norm, true);
      add("pd_x", true, x, xs, c.op == Op::grad);
      if (c.op == Op::grad) {
        add("pd_gamma", true, param, norm, true);
        add("pd_beta", true, param, norm, true);
      } else {
        add("res_for_gamma", true, res, xs);
      }
      break;
    case Op::grad_beta:
      add("res_for_gamma", false, res, xs);
      add("dy", false, x, xs);
      add("pd_gamma", true, param, norm);
      add("pd_beta", true, param, norm);
      break;
    case Op::forward:
      add("x", false, x, xs);
      add("gamma", false, param, norm, true);
      add("beta", false, param, norm, true);
      add("y", true, x, xs);
      add("mean", true, stat, stat_dims);
      add("variance", true, stat, stat_dims);
      add("rstd", true, stat, stat_dims, true);
      break;
  }
  return c;
}

void mutate(Reader& r, Call& c) {
  static const std::int64_t kOdd[] = {-1, 0, 1, 2, 3, 7, std::int64_t{1} << 62, std::numeric_limits<std::int64_t>::max()};
  const unsigned n = r.pick(4);
  for (unsigned m = 0; m < n; ++m) {
    Arg& a = c.args[r.pick(static_cast<unsigned>(c.args.size()))];
    switch (r.pick(7)) {
      case 0:  // any dtype value, known or not
        a.dtype = r.one_in(4) ? static_cast<Dtype>(4 + r.pick(252)) : kDtypes[r.pick(4)];
        break;
      case 1:  // an extent
        if (!a.dims.empty()) a.dims[r.pick(static_cast<unsigned>(a.dims.size()))] = kOdd[r.pick(8)];
        c.shapes_mutated = true;
        break;
      case 2:  // the rank: drop an axis, add one, or go past kMaxRank
        c.shapes_mutated = true;
        switch (r.pick(3)) {
          case 0: if (!a.dims.empty()) a.dims.pop_back(); break;
          case 1: a.dims.insert(a.dims.begin(), 1 + r.pick(3)); break;
          default: while (static_cast<int>(a.dims.size()) <= kMaxRank) a.dims.push_back(1); break;
        }
        break;
      case 3: a.null_data = true; break;
      case 4: if (a.optional) a.present = false; break;
      case 5:  // an output into an input: exactly over it, or one element off
        if (a.output) {
          std::vector<int> inputs;
          for (std::size_t i = 0; i < c.args.size(); ++i) {
            if (!c.args[i].output) inputs.push_back(static_cast<int>(i));
          }
          a.alias_of = inputs[r.pick(static_cast<unsigned>(inputs.size()))];
          a.alias_offset = static_cast<std::int64_t>(r.pick(3)) - 1;
        }
        break;
      default:  // an output over another output
        if (a.output) {
          for (std::size_t i = 0; i < c.args.size(); ++i) {
            if (c.args[i].output && &c.args[i] != &a && r.one_in(2)) {
              a.alias_of = static_cast<int>(i);
              a.alias_offset = 0;
              break;
            }
          }
        }
        break;
    }
  }
  static const double kEps[] = {1e-5, 0.0, 1e-12, -1e-5, NAN, INFINITY, 1e-300, 1e300, 0.5};
  if (!r.one_in(3)) c.epsilon = kEps[r.pick(9)];
  c.statistic = r.one_in(4) ? Statistic::rstd : Statistic::variance;
  const unsigned bits = r.one_in(2) ? 7u : r.pick(8);
  for (int i = 0; i < 3; ++i) c.mask[i] = (bits >> i) & 1u;
  c.normalized_ndim = r.one_in(3) ? static_cast<int>(r.pick(8)) - 1 : 0;
  static const int kThreads[] = {0, 1, 2, 3, -1, std::numeric_limits<int>::max()};
  c.num_threads = kThreads[r.pick(6)];
}

// Allocates every view; false when some claim is too large to back but does
// not overflow (then a consistent call could legitimately read it: skip).
bool allocate(Call& c) {
  for (Arg& a : c.args) {
    if (!a.present || a.null_data || a.alias_of >= 0) continue;
    const auto bytes = claimed_bytes(a.shape(), a.dtype);
    if (!bytes) {
      a.unbacked = true;
      a.data = no_access_region();
      continue;
    }
    if (*bytes > kMaxBackedBytes) return false;
    a.block = Block(static_cast<std::size_t>(*bytes));
    a.data = a.block.data();
  }
  for (Arg& a : c.args) {  // outputs into other views
    if (!a.present || a.null_data || a.alias_of < 0) continue;
    const Arg& target = c.args[static_cast<std::size_t>(a.alias_of)];
    if (target.alias_of >= 0) {  // no chains: the view gets its own memory
      a.alias_of = -1;
      const auto bytes = claimed_bytes(a.shape(), a.dtype);
      if (!bytes || *bytes > kMaxBackedBytes) return false;
      a.block = Block(static_cast<std::size_t>(*bytes));
      a.data = a.block.data();
      continue;
    }
    if (target.data == nullptr) {
      a.null_data = true;
      continue;
    }
    const auto base = reinterpret_cast<std::uintptr_t>(target.data);
    const std::uintptr_t begin =
        base + static_cast<std::uintptr_t>(a.alias_offset * static_cast<std::int64_t>(dtype_size(a.dtype)));
    const auto bytes = claimed_bytes(a.shape(), a.dtype);
    // The view must either stay inside the target's memory, or overlap a
    // target the library sees (which it must then refuse). Otherwise (it
    // misses the target, or the target is an output not asked for) the
    // library may rightly write it, so it gets memory of its own.
    const bool inside = bytes && begin >= base && begin + *bytes <= base + target.bytes();
    const bool overlaps = bytes && begin < base + target.bytes() && base < begin + *bytes;
    const bool seen = !target.output || target.requested;
    if (bytes && !inside && !(overlaps && seen)) {
      a.alias_of = -1;
      if (*bytes > kMaxBackedBytes) return false;
      a.block = Block(static_cast<std::size_t>(*bytes));
      a.data = a.block.data();
      continue;
    }
    a.data = reinterpret_cast<void*>(begin);
    a.unbacked = target.unbacked;
  }
  return true;
}

void fill(Reader& r, Call& c) {
  Values rng(r.u64(), r.pick(8));
  for (Arg& a : c.args) {
    if (a.data == nullptr || a.unbacked || a.alias_of >= 0) continue;
    const std::size_t size = dtype_size(a.dtype);
    for (std::size_t off = 0; off + size <= a.bytes(); off += size) {
      if (a.output) {
        put_sentinel(a.block.data() + off, a.dtype);
      } else {
        fill_value(a.block.data() + off, a.dtype, rng.next(), rng);
      }
    }
  }
}

std::vector<std::vector<std::uint8_t>> snapshot(const Call& c) {
  std::vector<std::vector<std::uint8_t>> s;
  for (const Arg& a : c.args) s.emplace_back(a.block.data(), a.block.data() + a.bytes());
  return s;
}

void mark_requested(Call& c) {
  for (Arg& a : c.args) {
    if (!a.output) continue;
    const std::string n = a.name;
    if (c.op == Op::grad) {
      a.requested = (n == "pd_x" && c.mask[0]) || (n == "pd_gamma" && c.mask[1]) || (n == "pd_beta" && c.mask[2]);
    } else if (c.op == Op::forward && n == "rstd") {
      a.requested = a.present && !a.null_data;
    } else {
      a.requested = true;
    }
  }
}

void check_after_error(const Call& c, const std::string& msg, const std::vector<std::vector<std::uint8_t>>& before) {
  const std::string prefix = std::string(op_name(c.op)) + ": ";
  LNGRAD_FUZZ_CHECK(msg.rfind(prefix, 0) == 0, "Error message does not start with '" + prefix + "': " + msg);
  LNGRAD_FUZZ_CHECK(msg.find(": expected ") != std::string::npos && msg.find(", given ") != std::string::npos,
                    "Error message lacks 'expected ..., given ...': " + msg);
  const auto after = snapshot(c);
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    LNGRAD_FUZZ_CHECK(after[i] == before[i], std::string("refused call changed ") + c.args[i].name + ": " + msg);
  }
}

void check_after_success(const Call& c, const std::vector<std::vector<std::uint8_t>>& before) {
  const auto after = snapshot(c);
  for (std::size_t i = 0; i < c.args.size(); ++i) {
    const Arg& a = c.args[i];
    bool aliased_by_output = false;
    for (const Arg& o : c.args) aliased_by_output = aliased_by_output || o.alias_of == static_cast<int>(i);
    if (!a.output) {
      LNGRAD_FUZZ_CHECK(aliased_by_output || after[i] == before[i], std::string("input changed: ") + a.name);
      continue;
    }
    if (!a.requested) {
      LNGRAD_FUZZ_CHECK(aliased_by_output || after[i] == before[i], std::string("unrequested output written: ") + a.name);
      continue;
    }
    LNGRAD_FUZZ_CHECK(a.data != nullptr && !a.unbacked, std::string("accepted an unusable output: ") + a.name);
    LNGRAD_FUZZ_CHECK(known(a.dtype), std::string("accepted an unknown dtype for ") + a.name);
    if (a.alias_of >= 0 || aliased_by_output) continue;
    const std::size_t size = dtype_size(a.dtype);
    for (std::size_t off = 0; off + size <= a.bytes(); off += size) {
      LNGRAD_FUZZ_CHECK(!is_sentinel(a.block.data() + off, a.dtype),
                        std::string("requested output not fully written: ") + a.name + " element " +
                            std::to_string(off / size));
    }
  }
  for (const Arg& a : c.args) {
    if (!a.output && a.present && !a.null_data) LNGRAD_FUZZ_CHECK(known(a.dtype), std::string("accepted an unknown dtype for ") + a.name);
  }
}

// The tiled check: rows repeated to at least kTiledElements elements, so that
// a call uses 3 threads (lngrad keeps one thread per 2^14 elements).
constexpr std::int64_t kTiledElements = 3 * (std::int64_t{1} << 14);

// Tensors with a row axis first (the others are gamma, beta and their
// gradients).
bool has_rows(const Arg& a) {
  const std::string n = a.name;
  return n != "gamma" && n != "beta" && n != "pd_gamma" && n != "pd_beta";
}

bool is_nan(const std::uint8_t* p, Dtype d) {
  switch (d) {
    case Dtype::float64: { double v; std::memcpy(&v, p, 8); return std::isnan(v); }
    case Dtype::float32: { float v; std::memcpy(&v, p, 4); return std::isnan(v); }
    case Dtype::float16: { std::uint16_t h; std::memcpy(&h, p, 2); return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }
    case Dtype::bfloat16: { std::uint16_t h; std::memcpy(&h, p, 2); return (h & 0x7F80u) == 0x7F80u && (h & 0x7Fu) != 0; }
  }
  return false;
}

// The same bits, or both NaN: which NaN (sign, payload) an operation on NaN
// operands returns depends on the order the compiler gave them, which
// differs between compiled copies of a loop (a row's first pass alone or
// inside the previous group's second pass), and which copy a row takes
// depends on the rows around it and the thread count.
bool same_value(const std::uint8_t* p, const std::uint8_t* q, Dtype d) {
  return std::memcmp(p, q, dtype_size(d)) == 0 || (is_nan(p, d) && is_nan(q, d));
}

void fill_sentinels(Arg& a) {
  const std::size_t size = dtype_size(a.dtype);
  for (std::size_t off = 0; off + size <= a.bytes(); off += size) put_sentinel(a.block.data() + off, a.dtype);
}

// c succeeded with no output over another tensor. The same call with every
// row-axis tensor repeated `k` times along its first axis (a leading, never
// normalized axis, as the consistent call decoded it): 1 and 3 threads give
// the same values, and every repetition of a row-axis output equals c's
// (same_value: bit for bit, NaN for NaN).
void check_tiled(Call& c) {
  const Arg& x = c.arg(c.op == Op::grad_beta ? "dy" : "x");
  const int rank = static_cast<int>(x.dims.size());
  if (c.shapes_mutated || c.base_ndim >= rank || (c.normalized_ndim != 0 && c.normalized_ndim != c.base_ndim)) return;
  std::int64_t count = 1;
  for (std::int64_t d : x.dims) count *= d;
  const std::int64_t k = (kTiledElements + count - 1) / count;
  Call t;
  t.op = c.op;
  t.epsilon = c.epsilon;
  t.statistic = c.statistic;
  for (int i = 0; i < 3; ++i) t.mask[i] = c.mask[i];
  t.normalized_ndim = c.normalized_ndim;
  for (const Arg& a : c.args) {
    Arg b;
    static_cast<ArgDecl&>(b) = a;
    b.alias_of = -1;
    if (a.present && a.data != nullptr) {
      const std::size_t reps = has_rows(a) ? static_cast<std::size_t>(k) : 1;
      if (reps > 1) b.dims[0] *= k;
      b.block = Block(a.bytes() * reps);
      b.data = b.block.data();
      if (a.output) {
        fill_sentinels(b);
      } else {
        for (std::size_t i = 0; i < reps; ++i) std::memcpy(b.block.data() + i * a.bytes(), a.block.data(), a.bytes());
      }
    }
    t.args.push_back(std::move(b));
  }
  auto run = [&](int threads) {
    try {
      t.invoke(threads);
    } catch (const std::exception& e) {
      fail(std::string("the call with its rows repeated failed: ") + e.what());
    }
  };
  run(1);
  std::vector<std::vector<std::uint8_t>> one;
  for (std::size_t i = 0; i < t.args.size(); ++i) {
    Arg& b = t.args[i];
    if (!b.output || b.data == nullptr) continue;
    const Arg& a = c.args[i];
    one.emplace_back(b.block.data(), b.block.data() + b.bytes());
    if (b.requested && has_rows(b)) {
      const std::size_t size = dtype_size(b.dtype);
      for (std::size_t off = 0; off < b.bytes(); off += size) {
        LNGRAD_FUZZ_CHECK(same_value(b.block.data() + off, a.block.data() + off % a.bytes(), b.dtype),
                          std::string("a row's result depends on the rows around it: ") + b.name);
      }
    }
    fill_sentinels(b);
  }
  run(3);
  std::size_t n = 0;
  for (const Arg& b : t.args) {
    if (!b.output || b.data == nullptr) continue;
    const std::size_t size = dtype_size(b.dtype);
    for (std::size_t off = 0; off < b.bytes(); off += size) {
      LNGRAD_FUZZ_CHECK(same_value(b.block.data() + off, one[n].data() + off, b.dtype),
                        std::string("result depends on the thread count: ") + b.name);
    }
    ++n;
  }
}

}  // namespace
}  // namespace lngrad::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lngrad::fuzz;
  Reader r(data, size);
  Call c = decode_base(r);
  mutate(r, c);
  mark_requested(c);
  if (!allocate(c)) return 0;
  mark_requested(c);  // an output into a null view became null
  fill(r, c);
  const auto before = snapshot(c);
  try {
    c.invoke(c.num_threads);
  } catch (const lngrad::Error& e) {
    check_after_error(c, e.what(), before);
    return 0;
  } catch (const std::exception& e) {
    fail(std::string("exception other than lngrad::Error: ") + e.what());
  } catch (...) {
    fail("exception of unknown type");
  }
  for (const Arg& a : c.args) {
    LNGRAD_FUZZ_CHECK(a.alias_of >= 0 || a.block.guards_intact(), std::string("write past ") + a.name);
  }
  check_after_success(c, before);
  // A choice past the values (absent in short inputs: zeros, no check).
  if (r.pick(4) == 3) {
    bool any_alias = false;
    for (const Arg& a : c.args) any_alias = any_alias || a.alias_of >= 0;
    if (!any_alias) check_tiled(c);
  }
  return 0;
}
