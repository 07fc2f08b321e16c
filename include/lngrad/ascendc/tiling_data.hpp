// CANN's host tiling-data classes ("register/tilingdata_base.h"), written
// as host code writes them:
//
//   namespace optiling {
//   BEGIN_TILING_DATA_DEF(TilingData)
//   TILING_DATA_FIELD_DEF(uint32_t, totalLength);
//   TILING_DATA_FIELD_DEF_ARR(uint16_t, 3, split);
//   TILING_DATA_FIELD_DEF_STRUCT(LayerNormGradTiling, grad);
//   END_TILING_DATA_DEF;
//   REGISTER_TILING_DATA_CLASS(AddCustom, TilingData)
//   }
//
// The class is a plain struct: its fields are public data members in
// declaration order (zero-initialized), laid out as the same fields in a
// hand-written struct, so a kernel copies its bytes from GM into the kernel
// side's struct and reads `tilingData.totalLength`. It also has CANN's host
// methods: set_<name>(v) / get_<name>() for scalar and array fields (an
// array's set_ copies its declared count from the pointer), GetDataSize()
// (= sizeof) and SaveToBuffer(buf, capacity), which throws lngrad::Error for
// a null buffer or a capacity below GetDataSize().
//
// Field types are CANN's: int8/16/32/64_t, uint8/16/32/64_t and float;
// a struct field must itself be a tiling-data class.
//
// REGISTER_TILING_DATA_CLASS(op, cls) declares, in the enclosing namespace,
// the kernel side's default tiling type for GET_TILING_DATA:
// decltype(LngradDefaultTilingData()) is cls. Registrations of an
// intermediate struct (op named cls##Op) and of tiling-key variants (op
// named <op>_<digits>) do not take part, as in CANN; a namespace holds at
// most one default registration (one op per kernel file).
#pragma once

#include <stddef.h>  // NOLINT(modernize-deprecated-headers): host code names size_t, uint32_t unqualified
#include <stdint.h>  // NOLINT(modernize-deprecated-headers)

#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace AscendC::detail {

// CANN's field types.
template <typename T>
inline constexpr bool is_tiling_scalar_v =
    std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::uint8_t> || std::is_same_v<T, std::int16_t> ||
    std::is_same_v<T, std::uint16_t> || std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t> ||
    std::is_same_v<T, std::int64_t> || std::is_same_v<T, std::uint64_t> || std::is_same_v<T, float>;

// Whether T was defined by BEGIN_TILING_DATA_DEF.
template <typename T, typename = void>
struct is_tiling_data : std::false_type {};
template <typename T>
struct is_tiling_data<T, std::void_t<typename T::LngradTilingDataSelf>>
    : std::is_same<T, typename T::LngradTilingDataSelf> {};
template <typename T>
inline constexpr bool is_tiling_data_v = is_tiling_data<T>::value;

// SaveToBuffer: copies `size` bytes of `data` to `buffer`, or throws
// lngrad::Error naming the class when buffer is null or capacity < size.
void save_tiling_data(const void* data, std::size_t size, void* buffer, std::size_t capacity,
                      const char* class_name);
// set_<array>(nullptr): throws lngrad::Error naming the class and field.
[[noreturn]] void tiling_data_null_array(const char* class_name, const char* field, std::size_t count);

constexpr std::size_t c_length(const char* s) {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}

// CANN's naming rules for REGISTER_TILING_DATA_CLASS: "<cls>Op" registers an
// intermediate (nested) struct, "<op>_<tiling key>" a tiling-key variant;
// anything else is the op's default tiling data.
constexpr bool is_default_tiling_registration(const char* op, const char* cls) {
  const std::size_t n = c_length(op), m = c_length(cls);
  bool intermediate = n == m + 2 && op[m] == 'O' && op[m + 1] == 'p';
  for (std::size_t i = 0; intermediate && i < m; ++i) intermediate = op[i] == cls[i];
  std::size_t digits = 0;
  while (digits < n && op[n - 1 - digits] >= '0' && op[n - 1 - digits] <= '9') ++digits;
  const bool keyed = digits > 0 && digits + 1 < n && op[n - 1 - digits] == '_';
  return !intermediate && !keyed;
}

}  // namespace AscendC::detail

// Members other than the fields are static or functions, so the class stays
// standard-layout with the fields alone as its data.
#define BEGIN_TILING_DATA_DEF(class_name)                                  \
  class class_name { /* NOLINT(bugprone-macro-parentheses): a class name */ \
   public:                                                                 \
    using LngradTilingDataSelf = class_name;                               \
    static constexpr const char* LngradTilingDataName() { return #class_name; }

// Each field macro ends in a static_assert that the user's ';' completes.
#define TILING_DATA_FIELD_DEF(data_type, field_name)                                  \
  data_type field_name{};                                                             \
  void set_##field_name(data_type lngrad_value) { this->field_name = lngrad_value; }  \
  data_type get_##field_name() const { return this->field_name; }                     \
  static_assert(::AscendC::detail::is_tiling_scalar_v<data_type>,                     \
                "TILING_DATA_FIELD_DEF(" #data_type ", " #field_name "): the type must be int8_t, uint8_t, " \
                "int16_t, uint16_t, int32_t, uint32_t, int64_t, uint64_t or float")

#define TILING_DATA_FIELD_DEF_ARR(arr_type, arr_size, field_name)                                        \
  arr_type field_name[arr_size]{};                                                                       \
  void set_##field_name(const arr_type* lngrad_values) {                                                 \
    if (lngrad_values == nullptr) {                                                                      \
      ::AscendC::detail::tiling_data_null_array(LngradTilingDataName(), #field_name, (arr_size));        \
    }                                                                                                    \
    for (::std::size_t lngrad_i = 0; lngrad_i < (arr_size); ++lngrad_i) {                                \
      this->field_name[lngrad_i] = lngrad_values[lngrad_i];                                              \
    }                                                                                                    \
  }                                                                                                      \
  arr_type* get_##field_name() { return this->field_name; } /* NOLINT(bugprone-macro-parentheses): a type */ \
  const arr_type* get_##field_name() const { return this->field_name; }                                  \
  static_assert(::AscendC::detail::is_tiling_scalar_v<arr_type>,                                         \
                "TILING_DATA_FIELD_DEF_ARR(" #arr_type ", " #arr_size ", " #field_name                   \
                "): the element type must be int8_t, uint8_t, int16_t, uint16_t, int32_t, uint32_t, "    \
                "int64_t, uint64_t or float")

#define TILING_DATA_FIELD_DEF_STRUCT(struct_type, field_name)                  \
  struct_type field_name{};                                                    \
  static_assert(::AscendC::detail::is_tiling_data_v<struct_type>,              \
                "TILING_DATA_FIELD_DEF_STRUCT(" #struct_type ", " #field_name  \
                "): the type must be a class defined by BEGIN_TILING_DATA_DEF")

#define END_TILING_DATA_DEF                                                                               \
  ::std::size_t GetDataSize() const {                                                                     \
    static_assert(::std::is_standard_layout_v<LngradTilingDataSelf> &&                                    \
                      ::std::is_trivially_copyable_v<LngradTilingDataSelf>,                               \
                  "a tiling-data class must stay a plain struct of its fields");                          \
    return sizeof(LngradTilingDataSelf);                                                                  \
  }                                                                                                       \
  void SaveToBuffer(void* lngrad_buffer, ::std::size_t lngrad_capacity) const {                           \
    ::AscendC::detail::save_tiling_data(this, sizeof(LngradTilingDataSelf), lngrad_buffer, lngrad_capacity, \
                                        LngradTilingDataName());                                         \
  }                                                                                                       \
  }                                                                                                       \
  ;

// Valid with or without a ';' after it, as host code writes it both ways.
#define REGISTER_TILING_DATA_CLASS(op_type, class_name)                                             \
  template <int LngradN = 0,                                                                        \
            ::std::enable_if_t<LngradN == 0 && ::AscendC::detail::is_default_tiling_registration(   \
                                                   #op_type, #class_name),                          \
                               int> = 0>                                                            \
  class_name LngradDefaultTilingData();
