// The AscendC kernel programming model on the host, in CANN's names: the
// qualifiers and macros kernel files use, GlobalTensor, TPipe, TQue, TBuf,
// PopStackBuffer, the block index, synchronisation and the tiling macros.
// Data movement and vector calls are in <lngrad/ascendc/kernel_ops.hpp>.
//
// A kernel runs on one of blockDim cores launched by ICPU_RUN_KF or
// ACLRT_LAUNCH_KERNEL (<lngrad/ascendc/launch.hpp>). Each core has a unified
// buffer (UB) of the chip's size; TPipe::InitBuffer carves it and the queues
// hand out LocalTensors inside it. Every misuse the device punishes (or
// silently tolerates) is raised as an lngrad::Error naming the call and the
// numbers; the launch adds the kernel and the core.
//
// Included through "kernel_operator.h" (CMake target lngrad::ascendc): it
// defines CANN's global macros (__global__, __aicore__, GM_ADDR, ...).
#pragma once

#include <cstddef>
#include <cstdint>

#include "lngrad/ascendc/kernel_runtime.hpp"
#include "lngrad/ascendc/types.hpp"

// ---- Qualifiers and global names kernel files use -----------------------------
// Device address spaces and entry-point qualifiers mean nothing on a host.
// NOLINTBEGIN(bugprone-reserved-identifier, cppcoreguidelines-macro-usage)
#ifndef __global__
#define __global__
#endif
#ifndef __aicore__
#define __aicore__
#endif
#ifndef __gm__
#define __gm__
#endif
#ifndef __ubuf__
#define __ubuf__
#endif
#ifndef __vector__
#define __vector__
#endif
#ifndef __cube__
#define __cube__
#endif
#ifndef GM_ADDR
#define GM_ADDR uint8_t*
#endif
// NOLINTEND(bugprone-reserved-identifier, cppcoreguidelines-macro-usage)

// Built-in types and enums of CANN's compiler, visible without a namespace.
using half = AscendC::half;
enum pipe_t : int {
  PIPE_S = 0,
  PIPE_V,
  PIPE_M,
  PIPE_MTE1,
  PIPE_MTE2,
  PIPE_MTE3,
  PIPE_ALL,
  PIPE_MTE4,
  PIPE_MTE5,
  PIPE_V2,
  PIPE_FIX,
};
enum event_t : int { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };
enum KernelMetaType : int {
  KERNEL_TYPE_AIV_ONLY,
  KERNEL_TYPE_AIC_ONLY,
  KERNEL_TYPE_MIX_AIV_1_0,
  KERNEL_TYPE_MIX_AIC_1_0,
  KERNEL_TYPE_MIX_AIC_1_1,
  KERNEL_TYPE_MIX_AIC_1_2,
};

// A hint to CANN's compiler; only its argument is checked here.
#define KERNEL_TASK_TYPE_DEFAULT(value) static_cast<void>(value)
#define KERNEL_TASK_TYPE(key, value) static_cast<void>(value)

// `if ASCEND_IS_AIC { ... }`: which kind of core runs the code.
#define ASCEND_IS_AIV (!::AscendC::detail::core_is_aic())
#define ASCEND_IS_AIC (::AscendC::detail::core_is_aic())
#define ASCEND_IS_NOT_AIV (::AscendC::detail::core_is_aic())
#define ASCEND_IS_NOT_AIC (!::AscendC::detail::core_is_aic())

namespace AscendC {

constexpr std::int32_t MIX = 0;
constexpr std::int32_t AIC = 1;
constexpr std::int32_t AIV = 2;

// ---- The core -----------------------------------------------------------------

inline std::int64_t GetBlockIdx() { return detail::block_idx(); }
inline std::int64_t GetBlockNum() { return detail::block_num(); }
inline std::int64_t GetSubBlockIdx() { return 0; }
inline std::int64_t GetSubBlockNum() { return 1; }

// ---- Synchronisation ------------------------------------------------------------
// A core runs its pipelines in program order here, so barriers have nothing
// to wait for. Flags are still paired: a WaitFlag no SetFlag has raised
// would stall the device forever, and is refused.

enum class HardEvent : std::uint8_t {
  MTE2_MTE1,
  MTE1_MTE2,
  MTE1_M,
  M_MTE1,
  MTE2_V,
  V_MTE2,
  MTE3_V,
  V_MTE3,
  M_V,
  V_M,
  V_V,
  MTE3_MTE1,
  MTE1_MTE3,
  MTE1_V,
  MTE2_M,
  M_MTE2,
  V_MTE1,
  M_FIX,
  FIX_M,
  MTE3_MTE2,
  MTE2_MTE3,
  S_V,
  V_S,
  S_MTE2,
  MTE2_S,
  S_MTE3,
  MTE3_S,
  MTE2_FIX,
  FIX_MTE2,
  FIX_S,
  M_S,
  FIX_MTE3,
  MTE1_FIX,
  FIX_MTE1,
  FIX_FIX,
  MAX,
};
using TEventID = std::int8_t;

template <pipe_t pipe>
inline void PipeBarrier() {}

template <HardEvent event>
inline void SetFlag(std::int32_t eventID) {
  detail::set_flag(static_cast<int>(event), eventID);
}

template <HardEvent event>
inline void WaitFlag(std::int32_t eventID) {
  detail::wait_flag(static_cast<int>(event), eventID);
}

// ---- Global memory ------------------------------------------------------------

// A view of global memory. SetGlobalBuffer accepts only memory from
// AscendC::GmAlloc or aclrtMalloc, and a count that stays inside it;
// element access is checked against the count.
template <typename T>
class GlobalTensor {
 public:
  using PrimType = T;

  void SetGlobalBuffer(__gm__ T* buffer, std::uint64_t bufferSize) {
    if (bufferSize > UINT64_MAX / sizeof(T)) {
      detail::kernel_fail("GlobalTensor::SetGlobalBuffer", "bufferSize " + std::to_string(bufferSize) +
                                                               " elements overflows 64-bit bytes");
    }
    detail::check_global_buffer(buffer, bufferSize * sizeof(T), true);
    data_ = buffer;
    size_ = bufferSize;
  }
  void SetGlobalBuffer(__gm__ T* buffer) {
    size_ = detail::check_global_buffer(buffer, 0, false) / sizeof(T);
    data_ = buffer;
  }

  __gm__ T* GetPhyAddr() const { return data_; }
  __gm__ T* GetPhyAddr(std::uint64_t offset) const { return data_ + offset; }
  std::uint64_t GetSize() const { return size_; }
  T GetValue(std::uint64_t offset) const { return data_[checked(offset, "GlobalTensor::GetValue")]; }
  void SetValue(std::uint64_t offset, T value) const { data_[checked(offset, "GlobalTensor::SetValue")] = value; }
  T& operator()(std::uint64_t offset) const { return data_[checked(offset, "GlobalTensor::operator()")]; }
  GlobalTensor operator[](std::uint64_t offset) const {
    GlobalTensor view;
    view.data_ = data_ + offset;
    view.size_ = offset <= size_ ? size_ - offset : 0;
    return view;
  }

 private:
  std::uint64_t checked(std::uint64_t offset, const char* call) const {
    if (offset >= size_) detail::index_fail(call, offset, size_);
    return offset;
  }

  T* data_ = nullptr;
  std::uint64_t size_ = 0;
};

// ---- The unified buffer: pipe, queues, buffers -----------------------------------

template <TPosition src, TPosition dst, std::int32_t depth, auto mask = 0>
class TQueBind;
template <TPosition pos>
class TBuf;

// Carves the core's unified buffer: InitBuffer gives a queue `num` buffers
// of `len` bytes (rounded up to 32), or a TBuf one. The total may not pass
// the chip's UB size. One pipe at a time per core.
class TPipe {
 public:
  TPipe() { detail::pipe_created(this); }
  ~TPipe() { detail::pipe_destroyed(this); }
  TPipe(const TPipe&) = delete;
  TPipe& operator=(const TPipe&) = delete;

  void Init() {}
  template <class Queue>
  bool InitBuffer(Queue& que, std::uint8_t num, std::uint32_t len) {
    detail::pipe_init(this, que.LngradBuffers(), Queue::kPosition, true, Queue::kDepth, num, len);
    return true;
  }
  template <TPosition pos>
  bool InitBuffer(TBuf<pos>& buf, std::uint32_t len) {
    detail::pipe_init(this, buf.LngradBuffers(), pos, false, 0, 1, len);
    return true;
  }
  // Every buffer goes back to the pipe; queues must be initialised again.
  void Reset() { detail::pipe_reset(this); }
  void Destroy() { detail::pipe_reset(this); }

  // Events: one id per kind serves, since flags are counted per (event, id).
  template <HardEvent event>
  TEventID AllocEventID() {
    return 0;
  }
  template <HardEvent event>
  void ReleaseEventID(TEventID /* id */) {}
  TEventID FetchEventID(HardEvent /* event */) { return 0; }
  template <HardEvent event>
  TEventID FetchEventID() {
    return 0;
  }
};

inline TPipe* GetTPipePtr() { return static_cast<TPipe*>(const_cast<void*>(detail::current_pipe())); }

// A queue of LocalTensors between two positions, as the device's: buffers
// go FREE -> AllocTensor -> EnQue -> DeQue -> FreeTensor -> FREE. Refused:
// AllocTensor with every buffer in use (the device would wait forever),
// EnQue beyond `depth`, DeQue of an empty queue, FreeTensor of a free or
// still-enqueued buffer, and buffers still in use when the kernel returns.
template <TPosition src, TPosition dst, std::int32_t depth, auto mask>
class TQueBind {
 public:
  static constexpr TPosition kPosition = src;
  static constexpr std::int32_t kDepth = depth;

  TQueBind() = default;
  ~TQueBind() { detail::queue_destroyed(buffers_); }
  TQueBind(const TQueBind&) = delete;
  TQueBind& operator=(const TQueBind&) = delete;

  template <typename T>
  LocalTensor<T> AllocTensor() {
    return view<T>(detail::queue_alloc(buffers_));
  }
  template <typename T>
  void AllocTensor(LocalTensor<T>& tensor) {
    tensor = AllocTensor<T>();
  }
  template <typename T>
  bool EnQue(const LocalTensor<T>& tensor) {
    detail::queue_enque(buffers_, tensor.GetPhyAddr());
    return true;
  }
  template <typename T>
  LocalTensor<T> DeQue() {
    return view<T>(detail::queue_deque(buffers_));
  }
  template <typename T>
  void DeQue(LocalTensor<T>& tensor) {
    tensor = DeQue<T>();
  }
  template <typename T>
  void FreeTensor(LocalTensor<T>& tensor) {
    detail::queue_free(buffers_, tensor.GetPhyAddr());
  }

  bool VacantInQue() { return queue_count(kEnqueued) < capacity(); }
  bool HasTensorInQue() { return queue_count(kEnqueued) > 0; }
  std::int32_t GetTensorCountInQue() { return static_cast<std::int32_t>(queue_count(kEnqueued)); }
  bool HasIdleBuffer() { return queue_count(detail::LocalBuffers::kFree) > 0; }
  void FreeAllEvent() {}

  detail::LocalBuffers& LngradBuffers() { return buffers_; }

 private:
  static constexpr detail::LocalBuffers::State kEnqueued = detail::LocalBuffers::kEnqueued;

  template <typename T>
  static LocalTensor<T> view(detail::Region r) {
    return LocalTensor<T>(reinterpret_cast<T*>(r.data), static_cast<std::uint32_t>(r.bytes / sizeof(T)));
  }
  std::uint32_t queue_count(detail::LocalBuffers::State s) const { return detail::queue_count(buffers_, s); }
  std::uint32_t capacity() const { return depth > 0 ? static_cast<std::uint32_t>(depth) : buffers_.num; }

  detail::LocalBuffers buffers_;
};

template <TPosition pos, std::int32_t depth, auto mask = 0>
class TQue : public TQueBind<pos, pos, depth, mask> {};

// Scratch in the unified buffer, without a queue's state machine.
template <TPosition pos = TPosition::LCM>
class TBuf {
 public:
  TBuf() = default;
  ~TBuf() { detail::queue_destroyed(buffers_); }
  TBuf(const TBuf&) = delete;
  TBuf& operator=(const TBuf&) = delete;

  template <typename T>
  LocalTensor<T> Get() {
    return view<T>(detail::buf_get(buffers_, 0, buffers_.len, "TBuf::Get"));
  }
  template <typename T>
  LocalTensor<T> Get(std::uint32_t len) {
    return view<T>(detail::buf_get(buffers_, 0, std::uint64_t{len} * sizeof(T), "TBuf::Get"));
  }
  // size elements from byte bufOffset.
  template <typename T>
  LocalTensor<T> GetWithOffset(std::uint32_t size, std::uint32_t bufOffset) {
    return view<T>(detail::buf_get(buffers_, bufOffset, std::uint64_t{size} * sizeof(T), "TBuf::GetWithOffset"));
  }

  detail::LocalBuffers& LngradBuffers() { return buffers_; }

 private:
  template <typename T>
  static LocalTensor<T> view(detail::Region r) {
    return LocalTensor<T>(reinterpret_cast<T*>(r.data), static_cast<std::uint32_t>(r.bytes / sizeof(T)));
  }

  detail::LocalBuffers buffers_;
};

// The unified buffer past the pipe's buffers: what the high-level APIs use
// when no sharedTmpBuffer is passed.
template <typename T, TPosition pos = TPosition::LCM>
bool PopStackBuffer(LocalTensor<T>& popLocal) {
  const detail::Region r = detail::stack_region();
  popLocal = LocalTensor<T>(reinterpret_cast<T*>(r.data), static_cast<std::uint32_t>(r.bytes / sizeof(T)));
  return true;
}

}  // namespace AscendC

// ---- Tiling in kernels --------------------------------------------------------------
// The tiling reaches a kernel as GM_ADDR; these copy it into a struct, after
// checking that the GM block holds that many bytes. GET_TILING_DATA uses the
// class REGISTER_TILING_DATA_CLASS registered (register/tilingdata_base.h).
// The struct arguments are type names, which parentheses would break.
// NOLINTBEGIN(bugprone-macro-parentheses)
#define GET_TILING_DATA(tiling_data, tiling_arg)                  \
  decltype(::optiling::LngradDefaultTilingData()) tiling_data;    \
  ::AscendC::detail::load_tiling(&(tiling_data), sizeof(tiling_data), (tiling_arg), "GET_TILING_DATA")
#define GET_TILING_DATA_WITH_STRUCT(tiling_struct, tiling_data, tiling_arg) \
  tiling_struct tiling_data;                                              \
  ::AscendC::detail::load_tiling(&(tiling_data), sizeof(tiling_data), (tiling_arg), "GET_TILING_DATA_WITH_STRUCT")
#define GET_TILING_DATA_PTR_WITH_STRUCT(tiling_struct, dst_ptr, tiling_ptr)                            \
  ::AscendC::detail::load_tiling(nullptr, sizeof(tiling_struct), (tiling_ptr), "GET_TILING_DATA_PTR_WITH_STRUCT"); \
  const tiling_struct* dst_ptr = reinterpret_cast<const tiling_struct*>(tiling_ptr)
#define TILING_KEY_IS(key) (::AscendC::detail::tiling_key() == static_cast<std::uint64_t>(key))
#define REGISTER_TILING_DEFAULT(tiling_struct)
#define REGISTER_TILING_FOR_TILINGKEY(expression, tiling_struct)
// NOLINTEND(bugprone-macro-parentheses)
