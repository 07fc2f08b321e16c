// Host tiling-data classes (register/tilingdata_base.h) written as CANN's
// host code writes them: the layout against hand-written plain structs (what
// the kernel side copies word by word), set_/get_, SaveToBuffer's bytes and
// refusals, the built-in tiling structs under their three names, and which
// registration GET_TILING_DATA takes.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kernel_tiling/kernel_tiling.h"
#include "lngrad/lngrad.hpp"  // lngrad::Error
#include "register/tilingdata_base.h"
#include "tiling/tiling_api.h"

namespace optiling {
// An intermediate struct, registered under CANN's "<struct>Op" rule.
BEGIN_TILING_DATA_DEF(Inner)
TILING_DATA_FIELD_DEF(uint16_t, a);
TILING_DATA_FIELD_DEF_ARR(uint16_t, 3, arr);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(InnerOp, Inner)

BEGIN_TILING_DATA_DEF(TestTilingData)
TILING_DATA_FIELD_DEF(uint32_t, totalLength);
TILING_DATA_FIELD_DEF(float, scale);
TILING_DATA_FIELD_DEF(uint8_t, flag);
TILING_DATA_FIELD_DEF(int64_t, big);  // aligned to 8: padding after flag
TILING_DATA_FIELD_DEF_ARR(int16_t, 5, arr);
TILING_DATA_FIELD_DEF_STRUCT(Inner, inner);
TILING_DATA_FIELD_DEF_STRUCT(LayerNormGradTiling, grad);
TILING_DATA_FIELD_DEF_STRUCT(LayerNormTiling, ln);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(TestCustom, TestTilingData)

// A tiling-key variant ("<op>_<key>"), written with a trailing ';'.
BEGIN_TILING_DATA_DEF(TestTilingDataKey1)
TILING_DATA_FIELD_DEF(uint32_t, other);
END_TILING_DATA_DEF;
REGISTER_TILING_DATA_CLASS(TestCustom_1, TestTilingDataKey1);
}  // namespace optiling

namespace {

// The same fields written by hand, as a kernel file declares its tiling.
struct PlainInner {
  uint16_t a;
  uint16_t arr[3];
};
struct Plain {
  uint32_t totalLength;
  float scale;
  uint8_t flag;
  int64_t big;
  int16_t arr[5];
  PlainInner inner;
  uint32_t grad[30];
  uint32_t ln[25];
  float lnLastDimValueBack;
};

using optiling::TestTilingData;

TEST(AscendCTilingData, LayoutIsTheHandWrittenStructs) {
  static_assert(std::is_standard_layout_v<TestTilingData> && std::is_trivially_copyable_v<TestTilingData>);
  EXPECT_EQ(sizeof(TestTilingData), sizeof(Plain));
  EXPECT_EQ(offsetof(TestTilingData, totalLength), offsetof(Plain, totalLength));
  EXPECT_EQ(offsetof(TestTilingData, scale), offsetof(Plain, scale));
  EXPECT_EQ(offsetof(TestTilingData, flag), offsetof(Plain, flag));
  EXPECT_EQ(offsetof(TestTilingData, big), offsetof(Plain, big));
  EXPECT_EQ(offsetof(TestTilingData, arr), offsetof(Plain, arr));
  EXPECT_EQ(offsetof(TestTilingData, inner), offsetof(Plain, inner));
  EXPECT_EQ(offsetof(TestTilingData, grad), offsetof(Plain, grad));
  EXPECT_EQ(offsetof(TestTilingData, ln), offsetof(Plain, ln));
  EXPECT_EQ(sizeof(optiling::Inner), sizeof(PlainInner));
  EXPECT_EQ(offsetof(optiling::Inner, arr), offsetof(PlainInner, arr));
  // Fields in declaration order, the float last, as CANN's LayerNormTiling.
  EXPECT_EQ(offsetof(LayerNormTiling, lastDimValueBack), 25u * 4);
  EXPECT_EQ(offsetof(LayerNormGradTiling, lastDimValueBackMulTwo), 29u * 4);
  EXPECT_EQ(offsetof(LayerNormGradBetaTiling, reserved), 19u * 4);
  EXPECT_EQ(TestTilingData().GetDataSize(), sizeof(Plain));
}

TEST(AscendCTilingData, FieldsStartAtZeroAndSetGetAreTheMembers) {
  TestTilingData t;
  EXPECT_EQ(t.get_totalLength(), 0u);
  EXPECT_EQ(t.get_scale(), 0.0f);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.get_arr()[i], 0);
  EXPECT_EQ(t.grad.get_stackBufferSize(), 0u);

  t.set_totalLength(4096);
  t.set_scale(0.25f);
  t.set_flag(7);
  t.set_big(-(int64_t{1} << 40));
  // set_ of an array copies its declared count (5) from a longer source.
  const int16_t values[7] = {1, -2, 3, -4, 5, 99, 99};
  t.set_arr(values);
  t.inner.set_a(11);
  const uint16_t inner_values[3] = {21, 22, 23};
  t.inner.set_arr(inner_values);
  t.grad.set_hLength(16);
  t.ln.set_lastDimValueBack(0.0625f);

  EXPECT_EQ(t.totalLength, 4096u);
  EXPECT_EQ(t.get_totalLength(), 4096u);
  EXPECT_EQ(t.scale, 0.25f);
  EXPECT_EQ(t.get_flag(), 7);
  EXPECT_EQ(t.get_big(), -(int64_t{1} << 40));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(t.arr[i], values[i]) << i;
  EXPECT_EQ(t.get_arr(), t.arr);
  EXPECT_EQ(t.inner.get_a(), 11);
  EXPECT_EQ(t.inner.arr[2], 23);
  EXPECT_EQ(t.grad.hLength, 16u);
  EXPECT_EQ(t.ln.get_lastDimValueBack(), 0.0625f);
  const TestTilingData& c = t;
  EXPECT_EQ(c.get_arr()[4], 5);  // the const overload
}

// The bytes a kernel copies from GM: those of the hand-written struct with
// the same values (padding excluded: both are zeroed first).
TEST(AscendCTilingData, SaveToBufferWritesTheStructsBytes) {
  TestTilingData t;
  std::memset(static_cast<void*>(&t), 0, sizeof t);
  t.set_totalLength(123456);
  t.set_scale(-1.5f);
  t.set_flag(200);
  t.set_big(0x0102030405060708);
  const int16_t values[5] = {-1, 2, -3, 4, -5};
  t.set_arr(values);
  t.inner.set_a(9);
  const uint16_t inner_values[3] = {7, 8, 9};
  t.inner.set_arr(inner_values);
  AscendC::GetLayerNormGradNDTilingInfo(ge::Shape({2, 32, 16, 16}), 6144, 4, false, t.grad);

  Plain p;
  std::memset(&p, 0, sizeof p);
  p.totalLength = 123456;
  p.scale = -1.5f;
  p.flag = 200;
  p.big = 0x0102030405060708;
  for (int i = 0; i < 5; ++i) p.arr[i] = values[i];
  p.inner.a = 9;
  for (int i = 0; i < 3; ++i) p.inner.arr[i] = inner_values[i];
  // The LayerNormGrad plan worked by hand in test_tiling.cpp (float at the minimum).
  const uint32_t grad[30] = {6144, 2,    32,   16,   16,   256,  16,   4,    0,          0,
                             0,    256,  256,  256,  512,  256,  768,  256,  1024,       256,
                             1280, 256,  0,    256,  0,    256,  0,    256,  0x3D800000, 0x3E000000};
  std::memcpy(p.grad, grad, sizeof grad);

  const std::size_t n = t.GetDataSize();
  std::vector<unsigned char> buf(n + 16, 0xEE);
  t.SaveToBuffer(buf.data(), n);  // exactly the size is enough
  EXPECT_EQ(std::memcmp(buf.data(), &p, n), 0);
  for (std::size_t i = n; i < buf.size(); ++i) ASSERT_EQ(buf[i], 0xEE) << "written past GetDataSize() at " << i;

  // A kernel's word-by-word copy of the nested LayerNormGradTiling.
  LayerNormGradTiling kernel_side;
  auto* dst = reinterpret_cast<uint32_t*>(&kernel_side);
  for (std::size_t i = 0; i < sizeof(kernel_side) / 4; ++i) {
    std::memcpy(dst + i, buf.data() + offsetof(TestTilingData, grad) + 4 * i, 4);
  }
  EXPECT_EQ(kernel_side.loopNum, 4u);
  EXPECT_EQ(kernel_side.x3TensorPos, 1280u);
}

void expect_error(void (*call)(), const std::string& text) {
  try {
    call();
    ADD_FAILURE() << "no error; expected: " << text;
  } catch (const lngrad::Error& e) {
    EXPECT_EQ(std::string(e.what()), text);
  }
}

TEST(AscendCTilingData, RefusesATooSmallBufferAndNullPointers) {
  static std::vector<unsigned char> buf;
  buf.assign(sizeof(TestTilingData), 0xEE);
  const std::string size = std::to_string(sizeof(TestTilingData));
  expect_error([] { TestTilingData().SaveToBuffer(buf.data(), buf.size() - 1); },
               "TestTilingData::SaveToBuffer: capacity: expected at least " + size +
                   " bytes (GetDataSize()), given " + std::to_string(buf.size() - 1));
  for (unsigned char b : buf) ASSERT_EQ(b, 0xEE) << "written although refused";
  expect_error([] { TestTilingData().SaveToBuffer(nullptr, 1024); },
               "TestTilingData::SaveToBuffer: pdata: expected a buffer, given a null pointer");
  expect_error([] { TestTilingData().set_arr(nullptr); },
               "TestTilingData::set_arr: arr: expected a pointer to 5 elements, given a null pointer");
  expect_error(
      [] {
        LayerNormGradBetaTiling t;
        t.SaveToBuffer(buf.data(), 79);
      },
      "LayerNormGradBetaTiling::SaveToBuffer: capacity: expected at least 80 bytes (GetDataSize()), given 79");
}

TEST(AscendCTilingData, BuiltInStructsAreOneTypeUnderThreeNames) {
  static_assert(std::is_same_v<optiling::LayerNormGradTiling, AscendC::tiling::LayerNormGradTiling>);
  static_assert(std::is_same_v<::LayerNormGradTiling, AscendC::tiling::LayerNormGradTiling>);
  static_assert(std::is_same_v<optiling::LayerNormGradBetaTiling, ::LayerNormGradBetaTiling>);
  static_assert(std::is_same_v<optiling::LayerNormTiling, ::LayerNormTiling>);
  static_assert(std::is_same_v<optiling::LayerNormTiling, AscendC::LayerNormTiling>);
  static_assert(std::is_same_v<AscendC::TensorShape, ge::Shape>);
  EXPECT_EQ(LayerNormGradTiling().GetDataSize(), 120u);
  EXPECT_EQ(LayerNormGradBetaTiling().GetDataSize(), 80u);
  EXPECT_EQ(LayerNormTiling().GetDataSize(), 104u);

  // The optiling:: spelling goes through the same host function.
  const uint32_t b = 2, s = 32, h = 16;
  AscendC::TensorShape shape({b, s, h, h});  // uint32_t values, as host mains write it
  optiling::LayerNormGradBetaTiling host;
  AscendC::GetLayerNormGradBetaNDTilingInfo(shape, 2048, sizeof(float), false, host);
  EXPECT_EQ(host.get_oneCalSize(), 512u);  // 2048 bytes = 512 floats, a multiple of H, below B*S*H
  EXPECT_EQ(host.get_stackBufferSize(), 512u);
}

TEST(AscendCTilingData, TheDefaultRegistrationIsWhatGetTilingDataUses) {
  static_assert(std::is_same_v<decltype(::optiling::LngradDefaultTilingData()), optiling::TestTilingData>);
  using AscendC::detail::is_default_tiling_registration;
  static_assert(is_default_tiling_registration("AddCustom", "TilingData"));
  static_assert(is_default_tiling_registration("LayerNorm", "LayerNormTilingData"));
  static_assert(is_default_tiling_registration("Op", "X"));
  static_assert(!is_default_tiling_registration("MatmulOp", "Matmul"));  // intermediate struct
  static_assert(!is_default_tiling_registration("Add_1", "AddStructSample1"));  // tiling key 1
  static_assert(!is_default_tiling_registration("Add_12", "AddStruct"));
  static_assert(is_default_tiling_registration("Add_", "AddStruct"));   // no key digits
  static_assert(is_default_tiling_registration("_1", "AddStruct"));     // no op name
  static_assert(is_default_tiling_registration("MatmulOp", "Matmu"));   // not <cls>Op
  static_assert(is_default_tiling_registration("Add_v2", "AddStruct"));
  SUCCEED();
}

}  // namespace
