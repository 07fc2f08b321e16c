// Runs row kernels over all rows on the thread pool. Column sums (pd_gamma,
// pd_beta) are formed in an order fixed by (rows, h) alone, never by the
// thread count: rows are summed in blocks of kBlockRows, blocks are combined
// pairwise inside chunks of a power-of-two number of blocks, and the chunks
// pairwise again. Rounding error grows with kBlockRows + log2(rows), and the
// result is bit-identical for any number of threads.
#pragma once

#include <cstdint>

#include "runtime/function_ref.hpp"

namespace lngrad::runtime {

// 32 rows per block: each block costs a fresh partial-sum buffer and a
// pairwise merge (fewer, larger blocks are faster: docs/TUNING.md), while 32
// in-order additions stay far below the bounds the tests derive from this
// constant.
inline constexpr std::int64_t kBlockRows = 32;
inline constexpr std::int64_t kMaxChunks = 32;

// fn(row_begin, row_end, next) sums rows [row_begin, row_end) block by block,
// kBlockRows rows each from row_begin (the last may be shorter): before a
// block's first row it calls next(&gamma, &beta) for the buffers (h elements
// each) it WRITES that block's column sums to, rows added in order. The next
// call to next, or fn's return, says the block before is complete. One fn
// call over many blocks lets a kernel run on across block boundaries.
// add(dst, src, n) is dst += src.
template <typename A>
using NextBlockFn = FunctionRef<void(A**, A**)>;
template <typename A>
using RowsFn = FunctionRef<void(std::int64_t, std::int64_t, NextBlockFn<A>)>;
template <typename A>
using AddFn = void (*)(A*, const A*, std::int64_t);

// On return sum_gamma and sum_beta (h elements each) hold the column sums.
template <typename A>
void reduce_rows(std::int64_t rows, std::int64_t h, int threads, RowsFn<A> fn, AddFn<A> add,
                 A* sum_gamma, A* sum_beta);

// fn(row_begin, row_end) over all rows, for kernels without column sums.
void for_rows(std::int64_t rows, std::int64_t h, int threads,
              FunctionRef<void(std::int64_t, std::int64_t)> fn);

// Bytes of workspace reduce_rows uses for this problem (for reports).
std::int64_t reduce_workspace_bytes(std::int64_t rows, std::int64_t h, int threads, std::int64_t acc_size);

}  // namespace lngrad::runtime
