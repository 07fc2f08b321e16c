#include "options.hpp"

#include <charconv>
#include <stdexcept>
#include <string_view>

namespace lngrad_bench {

namespace {

[[noreturn]] void bad(std::string_view option, std::string_view expected, std::string_view given) {
  throw std::invalid_argument(std::string(option) + ": expected " + std::string(expected) + ", got '" +
                              std::string(given) + "'");
}

std::int64_t parse_int(std::string_view option, std::string_view text, std::int64_t lo, std::int64_t hi) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < lo || v > hi) {
    bad(option, "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]", text);
  }
  return v;
}

bool parse_extent(std::string_view text, std::int64_t& v) {
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  return ec == std::errc() && end == text.data() + text.size() && v >= 1 && v < (std::int64_t{1} << 31);
}

ShapeArg parse_shape(std::string_view option, std::string_view text) {
  constexpr const char* kWhat = "a shape ROWSxH of positive integers such as 4096x768";
  const auto x = text.find('x');
  ShapeArg s;
  if (x == std::string_view::npos || !parse_extent(text.substr(0, x), s.rows) ||
      !parse_extent(text.substr(x + 1), s.h)) {
    bad(option, kWhat, text);
  }
  // At most 2^40 elements: far beyond any memory this runs on, and small
  // enough that byte counts never overflow.
  if (s.rows > (std::int64_t{1} << 40) / s.h) bad(option, "a shape of at most 2^40 elements", text);
  return s;
}

lngrad::Dtype parse_dtype(std::string_view option, std::string_view text) {
  if (text == "float32") return lngrad::Dtype::float32;
  if (text == "bfloat16") return lngrad::Dtype::bfloat16;
  if (text == "float16") return lngrad::Dtype::float16;
  bad(option, "float32, bfloat16 or float16", text);
}

template <typename F>
void for_each_item(std::string_view list, F f) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    f(list.substr(0, comma));
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

const char* stores_name(lngrad::Stores stores) {
  switch (stores) {
    case lngrad::Stores::cached: return "cached";
    case lngrad::Stores::streaming: return "streaming";
    case lngrad::Stores::automatic: break;
  }
  return "automatic";
}

std::vector<ShapeArg> default_shapes() {
  return {{4096, 768}, {8192, 1024}, {2048, 4096}, {512, 12288}, {65536, 128}, {16384, 4096}};
}

Options parse_options(int argc, char** argv) {
  Options o;
  bool shapes_given = false, reps_given = false;
  std::vector<ShapeArg> extra;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&]() -> std::string_view {
      if (i + 1 >= argc) bad(arg, "a value after it", "");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      o.help = true;
    } else if (arg == "--threads") {
      o.threads = static_cast<int>(parse_int(arg, value(), 1, 1024));
    } else if (arg == "--reps") {
      o.reps = static_cast<int>(parse_int(arg, value(), 1, 100000));
      reps_given = true;
    } else if (arg == "--runs") {
      o.runs = static_cast<int>(parse_int(arg, value(), 1, 100));
    } else if (arg == "--steady-calls") {
      o.steady_calls = static_cast<int>(parse_int(arg, value(), 0, 1000));
    } else if (arg == "--shapes") {
      shapes_given = true;
      o.shapes.clear();
      const auto list = value();
      if (list.empty()) bad(arg, "a comma-separated list of ROWSxH", list);
      for_each_item(list, [&](std::string_view s) { o.shapes.push_back(parse_shape(arg, s)); });
    } else if (arg == "--dtypes") {
      o.dtypes.clear();
      const auto list = value();
      if (list.empty()) bad(arg, "a comma-separated list of float32, bfloat16, float16", list);
      for_each_item(list, [&](std::string_view s) { o.dtypes.push_back(parse_dtype(arg, s)); });
    } else if (arg == "--csv") {
      o.csv = std::string(value());
      if (o.csv.empty()) bad(arg, "a file name", "");
    } else if (arg == "--wait-quiet") {
      o.quiet_wait_s = static_cast<double>(parse_int(arg, value(), 0, 86400));
    } else if (arg == "--stores") {
      const auto v = value();
      bool known = false;
      for (const auto s : {lngrad::Stores::automatic, lngrad::Stores::cached, lngrad::Stores::streaming}) {
        if (v == stores_name(s)) {
          o.stores = s;
          known = true;
        }
      }
      if (!known) bad(arg, "automatic, cached or streaming", v);
    } else if (arg == "--verbose") {
      o.verbose = true;
    } else if (arg == "--explain") {
      o.explain = true;
    } else if (arg == "--quick") {
      o.quick = true;
    } else if (arg == "--no-torch") {
      o.torch = false;
    } else if (arg == "--no-onednn") {
      o.onednn = false;
    } else if (arg == "--no-naive") {
      o.naive = false;
    } else if (arg == "--no-small") {
      o.small = false;
    } else if (!arg.empty() && arg[0] == '-') {
      bad("argument", "an option listed by --help or a shape ROWSxH", arg);
    } else {
      extra.push_back(parse_shape("shape", arg));
    }
  }
  if (!shapes_given) o.shapes = default_shapes();
  o.shapes.insert(o.shapes.end(), extra.begin(), extra.end());
  if (o.dtypes.empty()) o.dtypes = {lngrad::Dtype::float32, lngrad::Dtype::bfloat16, lngrad::Dtype::float16};
  if (o.quick && !reps_given) o.reps = 3;
  if (o.steady_calls < 0) o.steady_calls = o.quick ? 1 : 3;
  if (o.threads == 0) o.threads = lngrad::default_num_threads();
  return o;
}

const char* usage() {
  return R"(usage: lngrad-bench [options] [ROWSxH ...]

Times LayerNorm backward (pd_x, pd_gamma, pd_beta) in one process on the same
buffers: lngrad, oneDNN, PyTorch (ATen), a naive scalar loop, and a
read-read-write triad over the same bytes as the roofline.

  --threads N        threads for every contestant (default: cores available)
  --reps N           timed rounds; the median is reported (default 15, --quick 3)
  --runs N           time the whole list N times over, one pass after another;
                     each row reports the median of its runs and their range
  --steady-calls N   untimed calls of a contestant before each of its samples
                     (default 3, --quick 1; 0: time it right after the others)
  --shapes A,B,...   replace the default shapes (4096x768,8192x1024,2048x4096,
                     512x12288,65536x128,16384x4096); positional ROWSxH add to them
  --dtypes A,B,...   float32,bfloat16,float16 (default: all three)
  --csv FILE         also write the table as CSV (bench/plot.py charts it)
  --quick            fewer rounds and shorter samples: a smoke check
  --no-torch, --no-onednn, --no-naive
                     leave a contestant out
  --no-small         skip the 4x768 per-call overhead line
  --wait-quiet S     before each shape and dtype, wait up to S seconds until other
                     processes use under a tenth of --threads cores (shared machines)
  --stores MODE      lngrad's pd_x stores: automatic (default), cached or
                     streaming (lngrad::Stores), to compare them on this machine
  --explain          add a plan column: how lngrad runs each row (describe_plan;
                     the CSV always has it)
  --verbose          print every timed sample to stderr
)";
}

}  // namespace lngrad_bench
