// What one run measured, and how it is printed: the table, the CSV and the
// summary against the speed targets.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "lngrad/lngrad.hpp"

namespace lngrad_bench {

struct Measurement {
  bool ran = false;
  std::string na;         // why it did not run
  double median_s = 0.0;  // per call
  double min_s = 0.0;     // the fastest sample: a hint of the noise, in the CSV only
  double spread = 0.0;    // (90th - 10th percentile) / median of the rounds
  double error = 0.0;     // pd_x: max |got - ref| / max |ref| over the sampled rows
  bool wrong = false;     // error above the dtype's tolerance
  std::string detail;     // implementation chosen, when named
};

struct Row {
  std::string shape;
  std::int64_t rows = 0, h = 0;
  lngrad::Dtype dtype = lngrad::Dtype::float32;
  double bytes = 0.0;       // read dy + read x + write pd_x
  bool beyond_llc = false;  // bytes > 3x the last-level cache
  Measurement lngrad, onednn, torch, naive;
  double triad_s = 0.0;
  std::string triad_stores;  // the fastest variant: "cached", "streaming" or "1-thread"
  double triad_spread = 0.0;  // the widest spread of its variants over the same rounds
  // With --runs N > 1: (largest - smallest) / median of the N runs' medians.
  double lngrad_run_range = 0.0, triad_run_range = 0.0;
  double other_load = -1.0;  // cores used by other processes while this row was timed; -1 unknown
  double steal = -1.0;       // cores stolen by the hypervisor meanwhile; -1 unknown
  double timed_s = 0.0;      // how long the row's calibration and rounds took
  double workspace_bytes = 0.0;  // lngrad::grad_workspace_bytes for the row
  std::string plan;              // lngrad::describe_plan for the row
};

// Rows timed while other processes used more than a tenth of the threads'
// cores are marked as unreliable.
bool under_load(const Row& r, int threads);

struct RunInfo {
  std::string cpu, target, triad_isa, onednn_version, torch_version;
  int threads = 1, reps = 0, steady_calls = 0, runs = 1;
  std::string stores = "automatic";  // lngrad's pd_x stores (--stores)
  double llc_bytes = 0.0;        // runtime::reported_last_level_cache_bytes()
  double llc_share_bytes = 0.0;  // runtime::last_level_cache_bytes(): what lngrad counts on
  double tolerance_f32 = 0.0, tolerance_f16 = 0.0, tolerance_bf16 = 0.0;
  double other_load = -1.0, steal = -1.0;  // while rows were timed, in cores; -1 unknown
  bool explain = false;                    // the table shows each row's plan
};

struct SmallShape {
  bool ran = false;
  std::string shape;
  double bytes = 0.0;
  double lngrad_s = 0.0;
  double memory_s = 0.0;  // the call's bytes at the triad's rate beyond the cache: the target's yardstick
  double once_s = 0.0;    // one thread's triad over the call's bytes, hot in cache
};

// A row tail (H not a multiple of 32) against the run's shape of the same
// rows and dtype with H rounded down to one, lngrad alone, the two timed in
// alternating rounds so that the machine's drift between rows cancels.
struct TailPair {
  std::string shape, rounded;  // e.g. "700x10000" and "700x9984"
  lngrad::Dtype dtype = lngrad::Dtype::float32;
  double ratio = 0.0;            // median over the rounds of (H/time) / (H rounded/time rounded)
  double low = 0.0, high = 0.0;  // the rounds' 10th and 90th percentiles
  double cold = 0.0;             // the same, each call after the caches were evicted (0: not run)
};

double gbs(double bytes, double seconds);

void print_header(std::FILE* out, const RunInfo& info);
void print_table(std::FILE* out, const RunInfo& info, const std::vector<Row>& rows);
// Prints the geometric means and the target checks; returns false when some
// contestant's pd_x disagreed with the reference.
bool print_summary(std::FILE* out, const RunInfo& info, const std::vector<Row>& rows, const SmallShape& small,
                   const std::vector<TailPair>& tails);
void write_csv(const std::string& path, const RunInfo& info, const std::vector<Row>& rows, const SmallShape& small);

}  // namespace lngrad_bench
