// Fuzz target: the AscendC layer (<lngrad/ascendc.hpp>): the host tiling
// functions on arbitrary shapes, type sizes and buffer sizes, and the
// LayerNorm / LayerNormGrad / LayerNormGradBeta calls on arbitrary (possibly
// corrupted) tilings and buffers of arbitrary sizes.
//
// Contract checked:
//   - every function returns or throws lngrad::Error, nothing else;
//   - a tiling that is returned is a plan of whole rows: min <= max tmp
//     sizes; passes cover the rows exactly (loopNum * oneCalSize + tailSize
//     = B*S*storageH, whole rows per pass). (The regions' Pos/Size follow
//     CANN's arithmetic, which rounds rows per pass up to a block and so
//     may describe more than stackBufferSize; the calls below must still
//     stay inside the scratch they are given.)
//   - a kernel call reads and writes only its LocalTensors, whatever the
//     tiling claims (each view's element count is its true size; the buffers
//     are exact-size heap blocks under AddressSanitizer);
//   - a refused call writes nothing.
#include <cstdint>
#include <exception>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "fuzz_support.hpp"
#include "lngrad/ascendc.hpp"

namespace lngrad::fuzz {
namespace {

using AscendC::half;
using AscendC::LayerNormGradBetaTiling;
using AscendC::LayerNormGradTiling;
using AscendC::LayerNormTiling;
using AscendC::LocalTensor;

// Products of three 32-bit tiling fields, without wrapping.
using Wide = unsigned __int128;

std::int64_t decode_dim(Reader& r) {
  static const std::int64_t kDims[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 24, 32, 33, 48, 64,
                                       0, -1, std::int64_t{1} << 31, std::int64_t{1} << 32,
                                       std::numeric_limits<std::int64_t>::max(), 65535};
  return kDims[r.pick(sizeof kDims / sizeof kDims[0])];
}

std::uint32_t decode_u32(Reader& r, std::uint32_t typical) {
  switch (r.pick(6)) {
    case 0: return 0;
    case 1: return std::numeric_limits<std::uint32_t>::max();
    case 2: return static_cast<std::uint32_t>(r.u64());
    case 3: return typical / 2;
    default: return typical + r.pick(64);
  }
}

template <typename Call>
bool refused_with_error(Call call) {
  try {
    call();
    return false;
  } catch (const Error&) {
    return true;
  } catch (const std::exception& e) {
    fail(std::string("exception other than lngrad::Error: ") + e.what());
  } catch (...) {
    fail("exception of unknown type");
  }
}

// ---- The host tiling on arbitrary arguments. ---------------------------------

enum class Api { grad, beta, norm };

void fuzz_tiling(Reader& r, Api api) {
  const bool beta = api == Api::beta;
  std::vector<std::int64_t> dims;
  const unsigned rank = r.one_in(4) ? r.pick(7) : 4;
  for (unsigned i = 0; i < rank; ++i) dims.push_back(decode_dim(r));
  const ge::Shape shape(dims);
  static const std::uint32_t kTypeSizes[] = {2, 4, 0, 1, 3, 8};
  const std::uint32_t type_size = r.one_in(4) ? kTypeSizes[r.pick(6)] : (r.one_in(2) ? 2 : 4);
  const bool reuse = r.one_in(2);
  std::uint32_t max_size = 0, min_size = 0;
  const bool sizes_refused = refused_with_error([&] {
    if (api == Api::norm) {
      AscendC::GetLayerNormMaxMinTmpSize(shape, type_size, reuse, max_size, min_size);
    } else if (beta) {
      AscendC::GetLayerNormGradBetaMaxMinTmpSize(shape, type_size, reuse, max_size, min_size);
    } else {
      AscendC::GetLayerNormGradMaxMinTmpSize(shape, type_size, reuse, max_size, min_size);
    }
  });
  if (!sizes_refused) {
    LNGRAD_FUZZ_CHECK(min_size <= max_size, "min tmp size above max");
    LNGRAD_FUZZ_CHECK(min_size > 0, "min tmp size 0 for a non-empty shape");
  }
  const std::uint32_t stack = decode_u32(r, sizes_refused ? 4096 : min_size);
  if (api == Api::norm) {
    LayerNormTiling t;
    if (refused_with_error([&] { AscendC::GetLayerNormNDTilingInfo(shape, stack, type_size, reuse, t); })) return;
    const Wide bsh = Wide{t.bLength} * t.sLength * t.hLength;
    LNGRAD_FUZZ_CHECK(t.hLength > 0 && t.oneTmpSize > 0 && t.oneTmpSize % t.hLength == 0,
                      "norm tiling: a pass is not whole rows");
    LNGRAD_FUZZ_CHECK(t.oneTmpSize <= bsh && Wide{t.loopRound} * t.oneTmpSize + t.inputTailSize == bsh,
                      "norm tiling: passes do not cover B*S*H");
    LNGRAD_FUZZ_CHECK(Wide{t.firstTmpStartPos} + Wide{t.numberOfTmpBuf} * t.oneTmpSize <= t.tmpBufSize,
                      "norm tiling: buffers past the stack");
    return;
  }
  if (beta) {
    LayerNormGradBetaTiling t;
    if (refused_with_error([&] { AscendC::GetLayerNormGradBetaNDTilingInfo(shape, stack, type_size, reuse, t); })) {
      return;
    }
    const Wide bsh = Wide{t.bLength} * t.sLength * t.hLength;
    LNGRAD_FUZZ_CHECK(t.hLength > 0 && t.oneCalSize > 0 && t.oneCalSize % t.hLength == 0,
                      "beta tiling: a pass is not whole rows");
    LNGRAD_FUZZ_CHECK(t.oneCalSize <= bsh && t.bshLength == bsh, "beta tiling: pass larger than B*S*H");
    LNGRAD_FUZZ_CHECK(t.inputTailSize == t.bshLength % t.oneCalSize, "beta tiling: tail is not the remainder");
    return;
  }
  LayerNormGradTiling t;
  if (refused_with_error([&] { AscendC::GetLayerNormGradNDTilingInfo(shape, stack, type_size, reuse, t); })) return;
  const Wide bsh = Wide{t.bLength} * t.sLength * t.hLength;
  LNGRAD_FUZZ_CHECK(t.hLength > 0 && t.nohCalSize > 0, "grad tiling: empty pass");
  LNGRAD_FUZZ_CHECK(t.oneCalSize == std::uint64_t{t.nohCalSize} * t.hLength, "grad tiling: oneCalSize != nohCalSize*H");
  LNGRAD_FUZZ_CHECK(Wide{t.loopNum} * t.oneCalSize + t.tailSize == bsh, "grad tiling: passes do not cover B*S*H");
  LNGRAD_FUZZ_CHECK(t.tailSize % t.hLength == 0 && t.nohTailSize == t.tailSize / t.hLength, "grad tiling: partial tail row");
}

// ---- The kernel calls on arbitrary tilings and buffer sizes. ------------------

// An exact-size buffer of `count` elements viewed as LocalTensor<T>, filled
// with `fill` or from the input.
template <typename T>
struct View {
  Block block;
  std::uint32_t count = 0;
  View(Reader& r, std::uint32_t wanted, bool output) {
    // Usually the size the tiling needs, sometimes short or long.
    switch (r.pick(8)) {
      case 0: count = wanted > 0 ? wanted - 1 : 0; break;
      case 1: count = wanted / 2; break;
      case 2: count = wanted + 1 + r.pick(32); break;
      default: count = wanted; break;
    }
    block = Block(std::size_t{count} * sizeof(T));
    T* p = reinterpret_cast<T*>(block.data());
    std::uint32_t state = 1u + r.u8();  // values from a small generator: the input stays short
    for (std::uint32_t i = 0; i < count; ++i) {
      state = state * 1664525u + 1013904223u;
      if constexpr (std::is_same_v<T, std::uint8_t>) {
        p[i] = static_cast<std::uint8_t>(state >> 24);  // scratch: any garbage
      } else {
        p[i] = output ? T(-7.0f) : T(static_cast<float>(static_cast<int>(state >> 26) - 32) / 8.0f);
      }
    }
  }
  LocalTensor<T> tensor() const { return LocalTensor<T>(reinterpret_cast<T*>(block.data()), count); }
  std::vector<std::uint8_t> bytes() const { return {block.data(), block.data() + block.size()}; }
};

// Corrupts up to two fields of a tiling struct of uint32_t fields.
template <typename Tiling>
void corrupt(Reader& r, Tiling& t) {
  static_assert(sizeof(Tiling) % sizeof(std::uint32_t) == 0);
  const unsigned n = r.one_in(2) ? 0 : 1 + r.pick(2);
  for (unsigned k = 0; k < n; ++k) {
    std::uint32_t fields[sizeof(Tiling) / 4];
    std::memcpy(fields, &t, sizeof t);
    fields[r.pick(sizeof(Tiling) / 4)] = decode_u32(r, 8);
    std::memcpy(&t, fields, sizeof t);
  }
}

// A small [B, S, H, originH] shape with H a whole number of 32-byte blocks
// of T, as both call fuzzers draw it.
struct CallShape {
  std::uint32_t b, s, h, oh;
  ge::Shape shape() const { return ge::Shape({b, s, h, oh}); }
};

template <typename T>
CallShape draw_call_shape(Reader& r) {
  const std::uint32_t align = 32 / sizeof(T);
  const std::uint32_t b = 1 + r.pick(3), s = 1 + r.pick(4);
  const std::uint32_t h = align * (1 + r.pick(4));
  const std::uint32_t oh = r.one_in(3) ? 1 + r.pick(h) : h;
  return {b, s, h, oh};
}

template <typename T, bool kReuse>
void fuzz_grad_call(Reader& r) {
  const CallShape cs = draw_call_shape<T>(r);
  const std::uint32_t h = cs.h;
  const ge::Shape shape = cs.shape();
  std::uint32_t max_size = 0, min_size = 0;
  LayerNormGradTiling t;
  std::uint32_t stack = 0;
  try {
    AscendC::GetLayerNormGradMaxMinTmpSize(shape, sizeof(T), kReuse, max_size, min_size);
    stack = r.one_in(2) ? min_size : max_size;
    AscendC::GetLayerNormGradNDTilingInfo(shape, stack, sizeof(T), kReuse, t);
  } catch (const Error&) {
    return;  // e.g. reuse with half: the tiling half of the contract is fuzz_tiling's
  }
  corrupt(r, t);
  const std::uint32_t rows = cs.b * cs.s;
  View<T> pd_x(r, rows * h, true), res(r, rows * h, true), dy(r, rows * h, false), x(r, rows * h, false),
      var(r, rows, false), mean(r, rows, false), gamma(r, h, false);
  View<std::uint8_t> tmp(r, stack, false);
  const bool library_scratch = r.one_in(4);
  const auto before_pd_x = pd_x.bytes(), before_res = res.bytes();
  LocalTensor<std::uint8_t> tmp_tensor = tmp.tensor();
  const bool refused = refused_with_error([&] {
    if (library_scratch) {
      AscendC::LayerNormGrad<T, kReuse>(pd_x.tensor(), res.tensor(), dy.tensor(), x.tensor(), var.tensor(),
                                        mean.tensor(), gamma.tensor(), T(1e-5f), t);
    } else {
      AscendC::LayerNormGrad<T, kReuse>(pd_x.tensor(), res.tensor(), dy.tensor(), x.tensor(), var.tensor(),
                                        mean.tensor(), gamma.tensor(), tmp_tensor, T(1e-5f), t);
    }
  });
  if (refused) {
    LNGRAD_FUZZ_CHECK(pd_x.bytes() == before_pd_x && res.bytes() == before_res, "refused LayerNormGrad wrote output");
  }
}

template <typename T, bool kReuse>
void fuzz_beta_call(Reader& r) {
  const CallShape cs = draw_call_shape<T>(r);
  const std::uint32_t h = cs.h;
  const ge::Shape shape = cs.shape();
  std::uint32_t max_size = 0, min_size = 0;
  LayerNormGradBetaTiling t;
  std::uint32_t stack = 0;
  try {
    AscendC::GetLayerNormGradBetaMaxMinTmpSize(shape, sizeof(T), kReuse, max_size, min_size);
    stack = r.one_in(2) ? min_size : max_size;
    AscendC::GetLayerNormGradBetaNDTilingInfo(shape, stack, sizeof(T), kReuse, t);
  } catch (const Error&) {
    return;
  }
  corrupt(r, t);
  const std::uint32_t rows = cs.b * cs.s;
  View<T> pd_gamma(r, h, true), pd_beta(r, h, true), res(r, rows * h, false), dy(r, rows * h, false);
  View<std::uint8_t> tmp(r, stack, false);
  const bool library_scratch = r.one_in(4);
  const auto before_g = pd_gamma.bytes(), before_b = pd_beta.bytes();
  const bool refused = refused_with_error([&] {
    if (library_scratch) {
      AscendC::LayerNormGradBeta<T, kReuse>(pd_gamma.tensor(), pd_beta.tensor(), res.tensor(), dy.tensor(), t);
    } else {
      AscendC::LayerNormGradBeta<T, kReuse>(pd_gamma.tensor(), pd_beta.tensor(), res.tensor(), dy.tensor(),
                                            tmp.tensor(), t);
    }
  });
  if (refused) {
    LNGRAD_FUZZ_CHECK(pd_gamma.bytes() == before_g && pd_beta.bytes() == before_b,
                      "refused LayerNormGradBeta wrote output");
  }
}

template <typename T, bool kReuse>
void fuzz_norm_call(Reader& r) {
  const CallShape cs = draw_call_shape<T>(r);  // padded rows are refused by LayerNorm: fuzzed too
  const std::uint32_t h = cs.h;
  std::uint32_t max_size = 0, min_size = 0;
  LayerNormTiling t;
  std::uint32_t stack = 0;
  try {
    AscendC::GetLayerNormMaxMinTmpSize(cs.shape(), sizeof(T), kReuse, max_size, min_size);
    stack = r.one_in(2) ? min_size : max_size;
    AscendC::GetLayerNormNDTilingInfo(cs.shape(), stack, sizeof(T), kReuse, t);
  } catch (const Error&) {
    return;
  }
  corrupt(r, t);
  const std::uint32_t rows = cs.b * cs.s;
  View<T> y(r, rows * h, true), mean(r, rows, true), var(r, rows, true), x(r, rows * h, false), gamma(r, h, false),
      beta(r, h, false);
  View<std::uint8_t> tmp(r, stack, false);
  const bool library_scratch = r.one_in(4), over_x = r.one_in(4);
  const auto before_y = y.bytes(), before_mean = mean.bytes(), before_x = x.bytes();
  const LocalTensor<T> output = over_x ? x.tensor() : y.tensor();
  const bool refused = refused_with_error([&] {
    if (library_scratch) {
      AscendC::LayerNorm<T, kReuse>(output, mean.tensor(), var.tensor(), x.tensor(), gamma.tensor(), beta.tensor(),
                                    T(1e-5f), t);
    } else {
      AscendC::LayerNorm<T, kReuse>(output, mean.tensor(), var.tensor(), x.tensor(), gamma.tensor(), beta.tensor(),
                                    tmp.tensor(), T(1e-5f), t);
    }
  });
  if (refused) {
    LNGRAD_FUZZ_CHECK(y.bytes() == before_y && mean.bytes() == before_mean && x.bytes() == before_x,
                      "refused LayerNorm wrote output");
  }
}

}  // namespace
}  // namespace lngrad::fuzz

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace lngrad::fuzz;
  Reader r(data, size);
  const unsigned api = r.u8();
  if (api >= 250) {  // LayerNorm; below, api % 10 keeps the corpus's older inputs where they were
    switch (api - 250) {
      case 0: fuzz_tiling(r, Api::norm); break;
      case 1: fuzz_norm_call<float, false>(r); break;
      case 2: fuzz_norm_call<float, true>(r); break;
      default: fuzz_norm_call<AscendC::half, false>(r); break;
    }
    return 0;
  }
  switch (api % 10) {
    case 0: fuzz_tiling(r, Api::grad); break;
    case 1: fuzz_tiling(r, Api::beta); break;
    case 2: fuzz_grad_call<float, false>(r); break;
    case 3: fuzz_grad_call<float, true>(r); break;
    case 4: fuzz_grad_call<AscendC::half, false>(r); break;
    case 5: fuzz_grad_call<AscendC::half, true>(r); break;
    case 6: fuzz_beta_call<float, false>(r); break;
    case 7: fuzz_beta_call<float, true>(r); break;
    case 8: fuzz_beta_call<AscendC::half, false>(r); break;
    default: fuzz_beta_call<AscendC::half, true>(r); break;
  }
  return 0;
}
