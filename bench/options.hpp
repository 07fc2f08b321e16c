// Command line of lngrad-bench.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lngrad/lngrad.hpp"

namespace lngrad_bench {

struct ShapeArg {
  std::int64_t rows = 0, h = 0;
  std::string str() const { return std::to_string(rows) + "x" + std::to_string(h); }
};

struct Options {
  int threads = 0;  // 0 until parsed: lngrad::default_num_threads()
  int reps = 15;
  // Untimed calls of a contestant right before each of its samples, so every
  // sample starts from the contestant's own data in the caches and its
  // threads awake, whichever contestant ran before (-1 until parsed: 3, or 1
  // with --quick).
  int steady_calls = -1;
  int runs = 1;  // passes over the whole list, each row's medians combined (--runs)
  std::vector<ShapeArg> shapes;
  std::vector<lngrad::Dtype> dtypes;
  std::string csv;
  bool quick = false;
  bool torch = true, onednn = true, naive = true, small = true;
  double quiet_wait_s = 0.0;  // --wait-quiet
  lngrad::Stores stores = lngrad::Stores::automatic;  // lngrad's pd_x stores
  bool verbose = false;
  bool explain = false;  // a plan column: lngrad::describe_plan for each row
  bool help = false;
};

// "automatic", "cached" or "streaming", as --stores takes them.
const char* stores_name(lngrad::Stores stores);

// The default shapes, in order.
std::vector<ShapeArg> default_shapes();

// Parses argv; throws std::invalid_argument naming the option, what it
// expects and what was given.
Options parse_options(int argc, char** argv);

const char* usage();

}  // namespace lngrad_bench
