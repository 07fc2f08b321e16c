#include "runtime/row_reduce.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/aligned.hpp"
#include "runtime/thread_pool.hpp"

namespace lngrad::runtime {

namespace {

struct Plan {
  std::int64_t blocks, blocks_per_chunk, chunks, levels;
};

Plan plan_for(std::int64_t rows) {
  Plan p{};
  p.blocks = (rows + kBlockRows - 1) / kBlockRows;
  p.blocks_per_chunk = 1;
  p.levels = 1;
  while (p.blocks_per_chunk * kMaxChunks < p.blocks) {
    p.blocks_per_chunk *= 2;
    ++p.levels;
  }
  p.chunks = (p.blocks + p.blocks_per_chunk - 1) / p.blocks_per_chunk;
  return p;
}

// A fixed-capacity stack: the pairwise levels never exceed 64.
template <typename T>
class SmallStack {
 public:
  void push_back(T v) { items_[size_++] = v; }
  void pop_back() { --size_; }
  T& back() { return items_[size_ - 1]; }
  std::size_t size() const { return size_; }

 private:
  T items_[66] = {};
  std::size_t size_ = 0;
};

// Per-thread scratch: one buffer per pairwise level plus one being filled.
std::int64_t buffers_per_worker(const Plan& p) { return p.levels + 1; }

template <typename A>
LineVector<A>& workspace() {
  static thread_local LineVector<A> buffer;
  return buffer;
}

}  // namespace

std::int64_t reduce_workspace_bytes(std::int64_t rows, std::int64_t h, int threads, std::int64_t acc_size) {
  const Plan p = plan_for(rows);
  return (p.chunks + threads * buffers_per_worker(p)) * 2 * line_padded(h, acc_size) * acc_size;
}

template <typename A>
void reduce_rows(std::int64_t rows, std::int64_t h, int threads, RowsFn<A> fn, AddFn<A> add,
                 A* sum_gamma, A* sum_beta) {
  const Plan p = plan_for(rows);
  if (p.blocks == 1) {  // one block's sums are the result: no buffers, no copies
    fn(0, rows, [&](A** gamma, A** beta) {
      *gamma = sum_gamma;
      *beta = sum_beta;
    });
    return;
  }
  threads = static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), p.chunks));
  const std::int64_t half = line_padded<A>(h);  // every buffer's halves start on a line
  const std::int64_t width = 2 * half;          // [gamma sums | beta sums]
  const std::int64_t per_worker = buffers_per_worker(p);
  LineVector<A>& ws = workspace<A>();
  ws.resize(static_cast<std::size_t>((p.chunks + threads * per_worker) * width));
  A* chunk_sums = ws.data();
  A* scratch = ws.data() + p.chunks * width;

  parallel_for(p.chunks, threads, [&](std::int64_t chunk, int worker) {
    A* mine = scratch + worker * per_worker * width;
    SmallStack<A*> free_buffers, stack;
    for (std::int64_t i = 0; i < per_worker; ++i) free_buffers.push_back(mine + i * width);
    const std::int64_t first = chunk * p.blocks_per_chunk;
    const std::int64_t last = std::min(first + p.blocks_per_chunk, p.blocks);
    std::int64_t summed = 0;  // blocks of the chunk whose sums are complete
    A* cur = nullptr;         // the buffer of the block being summed
    // Binary-counter merge: equal-sized neighbours combine (left += right).
    auto complete = [&] {
      for (std::int64_t n = summed; n & 1; n >>= 1) {
        A* left = stack.back();
        stack.pop_back();
        add(left, cur, width);
        free_buffers.push_back(cur);
        cur = left;
      }
      stack.push_back(cur);
      ++summed;
    };
    // One call for the whole chunk; blocks are summed in order either way.
    fn(first * kBlockRows, std::min(last * kBlockRows, rows), [&](A** gamma, A** beta) {
      if (cur != nullptr) complete();
      cur = free_buffers.back();
      free_buffers.pop_back();
      *gamma = cur;
      *beta = cur + half;
    });
    complete();
    // A short last chunk leaves several subtrees: fold them, smallest first.
    while (stack.size() > 1) {
      A* right = stack.back();
      stack.pop_back();
      add(stack.back(), right, width);
    }
    if (p.chunks == 1) {  // the whole sum: no combining step
      std::memcpy(sum_gamma, stack.back(), sizeof(A) * static_cast<std::size_t>(h));
      std::memcpy(sum_beta, stack.back() + half, sizeof(A) * static_cast<std::size_t>(h));
    } else {
      std::memcpy(chunk_sums + chunk * width, stack.back(), sizeof(A) * static_cast<std::size_t>(width));
    }
  });
  if (p.chunks == 1) return;

  // Combine the chunks pairwise; columns are independent, so split them.
  constexpr std::int64_t kColumnsPerTask = 4096;
  const std::int64_t column_tasks = (width + kColumnsPerTask - 1) / kColumnsPerTask;
  parallel_for(column_tasks, p.chunks > 1 ? threads : 1, [&](std::int64_t task, int) {
    const std::int64_t c0 = task * kColumnsPerTask;
    const std::int64_t n = std::min(kColumnsPerTask, width - c0);
    for (std::int64_t step = 1; step < p.chunks; step *= 2) {
      for (std::int64_t i = 0; i + step < p.chunks; i += 2 * step) {
        add(chunk_sums + i * width + c0, chunk_sums + (i + step) * width + c0, n);
      }
    }
  });
  std::memcpy(sum_gamma, chunk_sums, sizeof(A) * static_cast<std::size_t>(h));
  std::memcpy(sum_beta, chunk_sums + half, sizeof(A) * static_cast<std::size_t>(h));
}

template void reduce_rows<float>(std::int64_t, std::int64_t, int, RowsFn<float>, AddFn<float>, float*,
                                 float*);
template void reduce_rows<double>(std::int64_t, std::int64_t, int, RowsFn<double>, AddFn<double>,
                                  double*, double*);

void for_rows(std::int64_t rows, std::int64_t h, int threads,
              FunctionRef<void(std::int64_t, std::int64_t)> fn) {
  // Tasks of about 64K elements, at least 4 per thread for balance.
  std::int64_t rows_per_task = std::max<std::int64_t>(1, (1 << 16) / h);
  rows_per_task = std::min(rows_per_task, std::max<std::int64_t>(1, rows / (std::int64_t{4} * std::max(threads, 1))));
  const std::int64_t tasks = (rows + rows_per_task - 1) / rows_per_task;
  parallel_for(tasks, threads, [&](std::int64_t task, int) {
    const std::int64_t r0 = task * rows_per_task;
    fn(r0, std::min(r0 + rows_per_task, rows));
  });
}

}  // namespace lngrad::runtime
