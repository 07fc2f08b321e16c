// lngrad-bench: LayerNorm backward timed against oneDNN, PyTorch, a naive
// loop and the memory roofline, in one process on the same buffers.
//
// Per shape and dtype: inputs are generated once (fixed seed) with statistics
// from lngrad::layer_norm, the output is preallocated and every page touched;
// each contestant's pd_x is checked against the float64 reference on sampled
// rows; then, after a warm-up, the contestants are timed in alternating
// rounds (the starting contestant rotates each round), each sample after a
// few untimed calls of its own, and the median per contestant is reported.
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <dnnl.hpp>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bench.hpp"
#include "lngrad/half.hpp"
#include "options.hpp"
#include "reference.hpp"
#include "report.hpp"
#include "runtime/thread_pool.hpp"
#include "triad.hpp"

namespace lngrad_bench {

namespace {

using Clock = std::chrono::steady_clock;
// Set by SIGINT or SIGTERM: stop timing after the current row (main).
volatile sig_atomic_t g_stop_requested = 0;
void request_stop(int /* signal */) { g_stop_requested = 1; }

// pd_x tolerances for the agreement check, in units of Check::scale.
// float32: float32 sums over up to 12288 terms stay near 2e-7 here, so 1e-4
// exposes a wrong term or an unwritten row. 16-bit: storing pd_x alone costs
// up to half an ulp, 2^-8 relative for bfloat16 (8 significant bits) and
// 2^-11 for float16; PyTorch also rounds mean and rstd to bfloat16, adding up
// to about as much again per statistic. Each bound leaves room for that and
// still catches a missing term (errors of order 1/sqrt(H) and up).
constexpr double kTolF32 = 1e-4;
constexpr double kTolF16 = 2e-3;
constexpr double kTolBF16 = 2e-2;

double tolerance(lngrad::Dtype d) {
  switch (d) {
    case lngrad::Dtype::float16: return kTolF16;
    case lngrad::Dtype::bfloat16: return kTolBF16;
    default: return kTolF32;
  }
}

// A fast, fixed-seed generator (splitmix64) so that large shapes fill in
// well under a second.
class Random {
 public:
  explicit Random(std::uint64_t seed) : state_(seed) {}
  // Uniform in [-1, 1).
  float uniform() {
    std::uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return static_cast<float>(z >> 40) * 0x1p-23f - 1.0f;
  }

 private:
  std::uint64_t state_;
};

float load(lngrad::Dtype d, const void* p, std::size_t i) {
  switch (d) {
    case lngrad::Dtype::float32: return static_cast<const float*>(p)[i];
    case lngrad::Dtype::bfloat16: return lngrad::bfloat16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case lngrad::Dtype::float16: return lngrad::float16_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case lngrad::Dtype::float64: break;
  }
  return std::numeric_limits<float>::quiet_NaN();
}

void store(lngrad::Dtype d, void* p, std::size_t i, float v) {
  switch (d) {
    case lngrad::Dtype::float32: static_cast<float*>(p)[i] = v; return;
    case lngrad::Dtype::bfloat16: static_cast<std::uint16_t*>(p)[i] = lngrad::float_to_bfloat16(v); return;
    case lngrad::Dtype::float16: static_cast<std::uint16_t*>(p)[i] = lngrad::float_to_float16(v); return;
    case lngrad::Dtype::float64: return;
  }
}

// The buffers of one problem. Rows get different offsets and spreads so the
// statistics differ per row (a kernel mixing rows up shows in the check).
struct Inputs {
  Buffer dy, x, pd_x;
  std::vector<float> mean, variance, rstd, gamma, beta;
  Problem problem;

  Inputs(std::int64_t rows, std::int64_t h, lngrad::Dtype dtype, int threads) {
    const std::size_t n = static_cast<std::size_t>(rows) * static_cast<std::size_t>(h);
    const std::size_t es = lngrad::dtype_size(dtype);
    dy = Buffer(n * es);
    x = Buffer(n * es);
    pd_x = Buffer(n * es);
    mean.resize(rows);
    variance.resize(rows);
    rstd.resize(rows);
    gamma.resize(h);
    beta.assign(h, 0.0f);
    Random rng(0x1A7E5EEDull + static_cast<std::uint64_t>(rows) * 31 + static_cast<std::uint64_t>(h));
    for (auto& g : gamma) g = 1.0f + 0.5f * rng.uniform();
    for (std::int64_t r = 0; r < rows; ++r) {
      const float offset = 0.5f * rng.uniform(), spread = 1.25f + 0.75f * rng.uniform();
      for (std::int64_t j = 0; j < h; ++j) {
        const std::size_t i = static_cast<std::size_t>(r * h + j);
        store(dtype, x.data(), i, offset + spread * rng.uniform());
        store(dtype, dy.data(), i, rng.uniform());
      }
    }
    problem.rows = rows;
    problem.h = h;
    problem.dtype = dtype;
    problem.epsilon = 1e-5;
    problem.threads = threads;
    // The forward pass gives consistent statistics and, writing y into pd_x,
    // touches the output's pages before anything is timed.
    lngrad::ForwardOptions fo;
    fo.epsilon = problem.epsilon;
    fo.num_threads = threads;
    const lngrad::Shape data{rows, h}, stat{rows}, param{h};
    lngrad::layer_norm({x.data(), dtype, data}, lngrad::ConstTensorView{gamma.data(), lngrad::Dtype::float32, param},
                       lngrad::ConstTensorView{beta.data(), lngrad::Dtype::float32, param}, {pd_x.data(), dtype, data},
                       {mean.data(), lngrad::Dtype::float32, stat}, {variance.data(), lngrad::Dtype::float32, stat},
                       {rstd.data(), lngrad::Dtype::float32, stat}, fo);
    problem.dy = dy.data();
    problem.x = x.data();
    problem.mean = mean.data();
    problem.variance = variance.data();
    problem.rstd = rstd.data();
    problem.gamma = gamma.data();
    problem.beta = beta.data();
    problem.pd_x = pd_x.data();
  }
};

// pd_x of up to 8 rows, spread over the tensor, from the float64 reference.
struct Check {
  std::vector<std::int64_t> rows;
  std::vector<double> ref;  // rows.size() * h
  // The error unit: the largest |pd_x| or |dy*gamma*rstd| (the leading term,
  // which the row sums cancel: when H is 1 every pd_x is 0 and only the terms
  // set the size of a rounding error).
  double scale = 0.0;

  explicit Check(const Problem& p) {
    const std::int64_t k = std::min<std::int64_t>(p.rows, 8);
    for (std::int64_t i = 0; i < k; ++i) rows.push_back(k == 1 ? 0 : i * (p.rows - 1) / (k - 1));
    lngrad::reference::GradInputs in;
    in.rows = k;
    in.h = p.h;
    in.epsilon = p.epsilon;
    in.gamma.assign(p.gamma, p.gamma + p.h);
    for (std::int64_t r : rows) {
      for (std::int64_t j = 0; j < p.h; ++j) {
        const std::size_t i = static_cast<std::size_t>(r * p.h + j);
        in.dy.push_back(load(p.dtype, p.dy, i));
        in.x.push_back(load(p.dtype, p.x, i));
      }
      in.mean.push_back(p.mean[r]);
      in.variance.push_back(p.variance[r]);
    }
    ref = lngrad::reference::layer_norm_grad(in).pd_x;
    for (double v : ref) scale = std::max(scale, std::abs(v));
    for (std::int64_t k = 0; k < in.rows; ++k) {
      const double rstd = 1.0 / std::sqrt(in.variance[k] + in.epsilon);
      for (std::int64_t j = 0; j < p.h; ++j) {
        scale = std::max(scale, std::abs(in.dy[k * p.h + j] * in.gamma[j]) * rstd);
      }
    }
  }

  // max |got - ref| / scale; NaN (an unwritten or broken element) gives +inf.
  double error(const Problem& p, const void* got) const {
    double worst = 0.0;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      for (std::int64_t j = 0; j < p.h; ++j) {
        const double g = load(p.dtype, got, static_cast<std::size_t>(rows[k] * p.h + j));
        const double d = std::abs(g - ref[k * p.h + j]);
        if (!(d <= worst)) worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
      }
    }
    return scale > 0 ? worst / scale : worst;
  }
};

// One timed thing: a contestant or a triad variant.
struct Entry {
  Entry(std::string n, std::function<void()> c) : name(std::move(n)), call(std::move(c)) {}
  std::string name;
  std::function<void()> call;
  int inner = 1;  // calls per sample, so a sample lasts long enough to time
  std::vector<double> samples;
};

double time_calls(const std::function<void()>& call, int n) {
  const auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) call();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The q-quantile of the samples, linearly interpolated.
double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Warm-up (at least two calls, up to warm_s), then the calls per sample.
void calibrate(Entry& e, double warm_s, double sample_s) {
  double best = std::numeric_limits<double>::infinity(), spent = 0.0;
  for (int i = 0; i < 2 || (spent < warm_s && i < 1000); ++i) {
    const double t = time_calls(e.call, 1);
    best = std::min(best, t);
    spent += t;
  }
  e.inner = static_cast<int>(std::clamp(std::ceil(sample_s / std::max(best, 1e-9)), 1.0, 1e6));
}

double process_cpu_s() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Busy-waits until no other thread of the process uses the CPU. OpenMP
// workers (oneDNN's, PyTorch's) spin for about 5 ms after each parallel
// region by default; on few cores that spin would be charged to whichever
// contestant runs next. Waiting busy rather than asleep keeps the core from
// idling, which on a virtual machine slows the next call.
void settle() {
  constexpr double kWindow = 0.0005;
  for (int i = 0; i < 100; ++i) {
    const double c0 = process_cpu_s();
    const auto t0 = Clock::now();
    double wall = 0.0;
    while ((wall = std::chrono::duration<double>(Clock::now() - t0).count()) < kWindow) {
    }
    if (process_cpu_s() - c0 - wall < 0.1 * kWindow) return;
  }
}

// CPU seconds the whole machine spent busy (and stolen by the hypervisor),
// from /proc/stat: with the process's own CPU time this tells how much other
// processes competed with the measurement.
struct MachineCpu {
  double busy_s = 0.0, steal_s = 0.0;
  bool known = false;
};

MachineCpu machine_cpu() {
  MachineCpu m;
  std::ifstream f("/proc/stat");
  std::string cpu;
  double user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  if (f >> cpu >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal && cpu == "cpu") {
    const double tick = 1.0 / static_cast<double>(sysconf(_SC_CLK_TCK));
    m.busy_s = (user + nice + system + irq + softirq) * tick;
    m.steal_s = steal * tick;
    m.known = true;
  }
  return m;
}

// Cores' worth of CPU used by other processes (and stolen) over an interval.
class LoadMeter {
 public:
  LoadMeter() : m0_(machine_cpu()), p0_(process_cpu_s()), t0_(Clock::now()) {}
  double seconds() const { return std::chrono::duration<double>(Clock::now() - t0_).count(); }
  // Returns {other processes, steal} in cores, or {-1, -1} when unknown.
  std::pair<double, double> read() const {
    const MachineCpu m1 = machine_cpu();
    const double wall = std::chrono::duration<double>(Clock::now() - t0_).count();
    if (!m0_.known || !m1.known || wall <= 0) return {-1.0, -1.0};
    const double other = (m1.busy_s - m0_.busy_s) - (process_cpu_s() - p0_);
    return {std::max(0.0, other / wall), (m1.steal_s - m0_.steal_s) / wall};
  }

 private:
  MachineCpu m0_;
  double p0_;
  Clock::time_point t0_;
};

// Each entry's calls per sample, after a warm-up.
void calibrate_all(std::vector<Entry>& entries, bool quick) {
  const double warm_s = quick ? 0.005 : 0.05, sample_s = quick ? 0.0005 : 0.002;
  for (Entry& e : entries) {
    settle();
    calibrate(e, warm_s, sample_s);
  }
}

// Rounds of one sample per entry. Each sample follows steady_calls untimed
// calls of its own: a shape that fits the LLC otherwise starts from whatever
// the entry before it left there (the first three calls after another data
// set took 3.0x, 2.2x and 1.4x a steady call; bench/README.md, Method).
void time_rounds(std::vector<Entry>& entries, int reps, int steady_calls, bool verbose) {
  const std::size_t k = entries.size();
  for (int r = 0; r < reps; ++r) {
    for (std::size_t i = 0; i < k; ++i) {
      Entry& e = entries[(i + static_cast<std::size_t>(r)) % k];
      settle();
      for (int c = 0; c < steady_calls; ++c) e.call();
      e.samples.push_back(time_calls(e.call, e.inner) / e.inner);
      if (verbose)
        std::fprintf(stderr, "  %-16s %8.3f us (mean of %d calls)\n", e.name.c_str(), e.samples.back() * 1e6, e.inner);
    }
  }
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  }
  return "unknown";
}

// The triad's three arrays: the same byte count as dy, x and pd_x.
struct TriadArrays {
  Buffer a, b, c;
  std::size_t n = 0;
  explicit TriadArrays(std::size_t bytes_each) : n((bytes_each + 3) / 4) {
    a = Buffer(n * 4);
    b = Buffer(n * 4);
    c = Buffer(n * 4);
    for (std::size_t i = 0; i < n; ++i) {
      a.as<float>()[i] = 0.0f;
      b.as<float>()[i] = 1.0f;
      c.as<float>()[i] = 2.0f;
    }
  }
};

struct Contestants {
  std::unique_ptr<Contestant> lngrad, onednn, torch, naive;
};

Row measure(const Options& o, const ShapeArg& shape, lngrad::Dtype dtype, Contestants& cs, TriadPool& pool,
            double llc) {
  Inputs in(shape.rows, shape.h, dtype, o.threads);
  const Problem& p = in.problem;
  Row row;
  row.shape = shape.str();
  row.rows = shape.rows;
  row.h = shape.h;
  row.dtype = dtype;
  row.bytes = static_cast<double>(p.traffic_bytes());
  row.beyond_llc = row.bytes > 3 * llc;
  row.workspace_bytes = static_cast<double>(lngrad::grad_workspace_bytes(shape.rows, shape.h, dtype, o.threads));
  row.plan = lngrad::describe_plan(lngrad::Op::layer_norm_grad, shape.rows, shape.h, dtype, o.threads, o.stores);

  const Check check(p);
  const double tol = tolerance(dtype);
  std::vector<Entry> entries;
  auto enter = [&](Contestant* c, Measurement& m, const char* disabled) {
    if (!c) {
      m.na = disabled;
      return;
    }
    m.na = c->prepare(p);
    if (!m.na.empty()) return;
    // Poison pd_x (all-ones bits are NaN in every dtype) so an unwritten
    // element fails the check.
    std::memset(in.pd_x.data(), 0xFF, in.pd_x.bytes());
    c->run();
    m.error = check.error(p, c->pd_x());
    m.wrong = !(m.error <= tol);
    m.detail = c->detail();
    m.ran = true;
    entries.emplace_back(c->name(), [c] { c->run(); });
  };
  enter(cs.lngrad.get(), row.lngrad, "");
  enter(cs.onednn.get(), row.onednn, "left out (--no-onednn)");
  enter(cs.torch.get(), row.torch, o.torch ? "built without libtorch" : "left out (--no-torch)");
  enter(cs.naive.get(), row.naive, "left out (--no-naive)");

  TriadArrays t(p.elements() * p.element_bytes());
  entries.emplace_back("triad-cached", [&] {
    pool.run(t.a.as<float>(), t.b.as<float>(), t.c.as<float>(), 3.0f, t.n, TriadStores::cached);
  });
  entries.emplace_back("triad-streaming", [&] {
    pool.run(t.a.as<float>(), t.b.as<float>(), t.c.as<float>(), 3.0f, t.n, TriadStores::streaming);
  });
  if (pool.threads() > 1) {  // on small shapes one thread can beat the split
    entries.emplace_back("triad-1-thread", [&] {
      triad_range(t.a.as<float>(), t.b.as<float>(), t.c.as<float>(), 3.0f, 0, t.n, TriadStores::cached);
    });
  }

  const LoadMeter load;
  calibrate_all(entries, o.quick);
  time_rounds(entries, o.reps, o.steady_calls, o.verbose);
  std::tie(row.other_load, row.steal) = load.read();
  row.timed_s = load.seconds();

  for (const Entry& e : entries) {
    const double m = median(e.samples);
    const double spread = m > 0 ? (quantile(e.samples, 0.9) - quantile(e.samples, 0.1)) / m : 0.0;
    Measurement* who = e.name == "lngrad"   ? &row.lngrad
                       : e.name == "oneDNN" ? &row.onednn
                       : e.name == "torch"  ? &row.torch
                       : e.name == "naive"  ? &row.naive
                                            : nullptr;
    if (who) {
      who->median_s = m;
      who->min_s = *std::min_element(e.samples.begin(), e.samples.end());
      who->spread = spread;
    }
    if (e.name.rfind("triad-", 0) != 0) continue;
    // A host's hiccup may hit one variant's samples and not another's.
    row.triad_spread = std::max(row.triad_spread, spread);
    if (row.triad_s == 0.0 || m < row.triad_s) {
      row.triad_s = m;
      row.triad_stores = e.name.substr(6);
    }
  }
  return row;
}

// One row from its runs (--runs): each contestant's median of the runs'
// medians, the widest error, the median within-run spread; how far the runs'
// medians lie apart, for lngrad and the triad.
Row combine_runs(const std::vector<Row>& runs) {
  Row row = runs.front();
  auto range = [](std::vector<double> v) {
    const double m = median(v);
    return m > 0 ? (*std::max_element(v.begin(), v.end()) - *std::min_element(v.begin(), v.end())) / m : 0.0;
  };
  for (Measurement Row::*who : {&Row::lngrad, &Row::onednn, &Row::torch, &Row::naive}) {
    Measurement& m = row.*who;
    if (!m.ran) continue;
    std::vector<double> medians, spreads;
    for (const Row& r : runs) {
      const Measurement& one = r.*who;
      medians.push_back(one.median_s);
      spreads.push_back(one.spread);
      m.min_s = std::min(m.min_s, one.min_s);
      m.error = std::max(m.error, one.error);
      m.wrong = m.wrong || one.wrong;
    }
    m.median_s = median(medians);
    m.spread = median(spreads);
    if (who == &Row::lngrad) row.lngrad_run_range = range(medians);
  }
  std::vector<double> triads;
  row.timed_s = 0.0;
  for (const Row& r : runs) {
    triads.push_back(r.triad_s);
    row.triad_spread = std::max(row.triad_spread, r.triad_spread);
    row.other_load = std::max(row.other_load, r.other_load);
    row.steal = std::max(row.steal, r.steal);
    row.timed_s += r.timed_s;
  }
  row.triad_s = median(triads);
  row.triad_run_range = range(triads);
  return row;
}

// The tail's element rate over the rounded shape's, from their call times.
double rate_ratio(std::int64_t h_tail, double t_tail, std::int64_t h_rounded, double t_rounded) {
  return (static_cast<double>(h_tail) / t_tail) / (static_cast<double>(h_rounded) / t_rounded);
}

// The tail's element rate against the rounded shape's, one call each per
// round, every call after writing a buffer of twice the last-level cache: the
// rows then come from memory for both shapes alike. Timed on the same buffers
// call after call, shapes near the cache's size are partly read from it, and
// how much can differ between the two (bench/README.md).
double cold_ratio(const std::vector<Entry>& pair, std::int64_t h_tail, std::int64_t h_rounded, int reps, double llc) {
  std::vector<unsigned char> evict(static_cast<std::size_t>(2 * llc));
  std::vector<double> ratios;
  unsigned char fill = 0;
  for (int r = 0; r < reps; ++r) {
    double t[2] = {};
    for (std::size_t i = 0; i < 2; ++i) {
      std::memset(evict.data(), ++fill, evict.size());
      t[i] = time_calls(pair[i].call, 1);
    }
    ratios.push_back(rate_ratio(h_tail, t[0], h_rounded, t[1]));
  }
  return median(ratios);
}

// Each row tail of the run (H not a multiple of 32) against the run's shape
// with H rounded down to one, same rows and dtype: lngrad alone on both, in
// alternating rounds, each round's ratio of element rates. Timed one shape
// after the other, as the table's rows are, the ratio swung 0.75-1.44 between
// runs on a noisy VM.
std::vector<TailPair> measure_tails(const Options& o, const std::vector<Row>& rows, double llc_bytes) {
  std::vector<TailPair> tails;
  for (const Row& r : rows) {
    if (r.h % 32 == 0 || !r.lngrad.ran) continue;
    for (const Row& q : rows) {
      if (q.rows != r.rows || q.dtype != r.dtype || q.h != r.h / 32 * 32 || !q.lngrad.ran) continue;
      std::fprintf(stderr, "[tails] %s against %s %s ...", r.shape.c_str(), q.shape.c_str(), lngrad::dtype_name(r.dtype));
      const Inputs tail(r.rows, r.h, r.dtype, o.threads), rounded(q.rows, q.h, q.dtype, o.threads);
      const std::unique_ptr<Contestant> on_tail = make_lngrad(o.stores), on_rounded = make_lngrad(o.stores);
      if (!on_tail->prepare(tail.problem).empty() || !on_rounded->prepare(rounded.problem).empty()) continue;
      std::vector<Entry> entries;
      entries.emplace_back("tail", [&] { on_tail->run(); });
      entries.emplace_back("rounded", [&] { on_rounded->run(); });
      calibrate_all(entries, o.quick);
      time_rounds(entries, o.reps, o.steady_calls, o.verbose);
      std::vector<double> ratios;
      for (std::size_t i = 0; i < entries[0].samples.size(); ++i) {
        ratios.push_back(rate_ratio(r.h, entries[0].samples[i], q.h, entries[1].samples[i]));
      }
      tails.push_back({r.shape, q.shape, r.dtype, median(ratios), quantile(ratios, 0.1), quantile(ratios, 0.9),
                       cold_ratio(entries, r.h, q.h, o.reps, llc_bytes)});
      std::fprintf(stderr, " %.2f, from memory %.2f\n", tails.back().ratio, tails.back().cold);
    }
  }
  return tails;
}

// Per-call cost on a tiny shape (hundreds of calls per sample, data hot in
// cache) against the time to move its bytes once: at the memory triad's rate
// (the yardstick of the target, measured here on arrays 4x the last-level
// cache) and, for reference, one thread's triad over the same bytes in cache.
SmallShape measure_small(const Options& o, Contestant& lngrad_c, TriadPool& pool, double llc) {
  SmallShape s;
  s.shape = "4x768";
  Inputs in(4, 768, lngrad::Dtype::float32, o.threads);
  if (!lngrad_c.prepare(in.problem).empty()) return s;
  s.bytes = static_cast<double>(in.problem.traffic_bytes());
  TriadArrays t(in.problem.elements() * 4);
  std::vector<Entry> entries;
  entries.emplace_back("lngrad", [&] { lngrad_c.run(); });
  for (TriadStores st : {TriadStores::cached, TriadStores::streaming}) {
    entries.emplace_back(
        "once", [&t, st] { triad_range(t.a.as<float>(), t.b.as<float>(), t.c.as<float>(), 3.0f, 0, t.n, st); });
  }
  const double big_bytes = 4.0 * llc;
  TriadArrays big(static_cast<std::size_t>(big_bytes / 3.0));
  for (TriadStores st : {TriadStores::cached, TriadStores::streaming}) {
    entries.emplace_back("memory", [&big, &pool, st] {
      pool.run(big.a.as<float>(), big.b.as<float>(), big.c.as<float>(), 3.0f, big.n, st);
    });
  }
  for (Entry& e : entries) {
    settle();
    calibrate(e, 0.01, o.quick ? 0.0005 : 0.002);
  }
  time_rounds(entries, std::max(o.reps, 5), o.steady_calls, o.verbose);
  s.lngrad_s = median(entries[0].samples);
  s.once_s = std::min(median(entries[1].samples), median(entries[2].samples));
  const double memory_s = std::min(median(entries[3].samples), median(entries[4].samples));
  s.memory_s = s.bytes * memory_s / (3.0 * static_cast<double>(big.n) * 4.0);
  s.ran = true;
  return s;
}

int run(const Options& o) {
  RunInfo info;
  info.cpu = cpu_model();
  info.target = lngrad::active_target();
  info.triad_isa = triad_isa();
  info.threads = o.threads;
  info.reps = o.reps;
  info.steady_calls = o.steady_calls;
  info.runs = o.runs;
  info.stores = stores_name(o.stores);
  info.explain = o.explain;
  // The hardware's figure sets which shapes count as beyond the LLC (the
  // stricter reading where a VM reports its host's L3); lngrad's own share
  // decides its streamed stores and is printed beside it.
  info.llc_bytes = static_cast<double>(lngrad::runtime::reported_last_level_cache_bytes());
  info.llc_share_bytes = static_cast<double>(lngrad::runtime::last_level_cache_bytes());
  info.tolerance_f32 = kTolF32;
  info.tolerance_f16 = kTolF16;
  info.tolerance_bf16 = kTolBF16;
  const dnnl_version_t* dv = dnnl_version();
  info.onednn_version = std::to_string(dv->major) + "." + std::to_string(dv->minor) + "." + std::to_string(dv->patch);
#ifdef LNGRAD_BENCH_HAVE_TORCH
  info.torch_version = LNGRAD_BENCH_TORCH_VERSION;
#else
  info.torch_version = "(not built: libtorch not found)";
#endif
  // dy, x, pd_x and the triad's three arrays, plus PyTorch's outputs (two
  // generations alive while a call replaces the last result): 8 tensors.
  const double memory = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  for (const ShapeArg& s : o.shapes) {
    const double need = 8.0 * static_cast<double>(s.rows) * static_cast<double>(s.h) * 4.0;
    if (memory > 0 && need > 0.8 * memory) {
      throw std::invalid_argument("shape " + s.str() + ": expected one that fits in memory (needs about " +
                                  std::to_string(static_cast<long long>(need / 1073741824.0 + 0.5)) +
                                  " GiB, the machine has " +
                                  std::to_string(static_cast<long long>(memory / 1073741824.0)) + " GiB)");
    }
  }
  if (!o.csv.empty() && !std::ofstream(o.csv)) {  // fail before the run, not after it
    throw std::invalid_argument("--csv: cannot open '" + o.csv + "' for writing");
  }
  print_header(stdout, info);
  std::fflush(stdout);

  Contestants cs;
  cs.lngrad = make_lngrad(o.stores);
  if (o.onednn) cs.onednn = make_onednn();
#ifdef LNGRAD_BENCH_HAVE_TORCH
  if (o.torch) cs.torch = make_torch();
#endif
  if (o.naive) cs.naive = make_naive();
  TriadPool pool(o.threads);

  // Before each row, optionally wait for other processes to leave the cores.
  auto wait_for_quiet = [&] {
    const auto deadline = Clock::now() + std::chrono::duration<double>(o.quiet_wait_s);
    double other = 0.0;
    while (Clock::now() < deadline) {
      const LoadMeter probe;
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
      other = probe.read().first;
      if (other >= 0 && other < 0.1 * o.threads) return;
    }
    std::fprintf(stderr, " (still %.1f cores busy after %.0f s) ", other, o.quiet_wait_s);
  };
  const std::size_t total = o.shapes.size() * o.dtypes.size();
  std::vector<std::vector<Row>> runs(total);  // each row's runs
  const auto start = Clock::now();
  // SIGINT or SIGTERM (a timeout) ends the timing after the current row and
  // reports what was measured, rather than losing a long run's results.
  struct sigaction on_stop {};
  on_stop.sa_handler = request_stop;
  sigaction(SIGINT, &on_stop, nullptr);
  sigaction(SIGTERM, &on_stop, nullptr);
  for (int run = 0; run < o.runs && !g_stop_requested; ++run) {  // whole passes, so that a row's runs lie apart in time
    std::size_t done = 0;
    for (const ShapeArg& shape : o.shapes) {
      for (lngrad::Dtype d : o.dtypes) {
        if (g_stop_requested) break;
        std::string which = std::to_string(done + 1) + "/" + std::to_string(total);
        if (o.runs > 1) which = "run " + std::to_string(run + 1) + " " + which;
        std::fprintf(stderr, "[%5s] %-12s %-9s ...%s", which.c_str(), shape.str().c_str(), lngrad::dtype_name(d),
                     o.verbose ? "\n" : "");
        std::fflush(stderr);
        if (o.quiet_wait_s > 0) wait_for_quiet();
        const auto t0 = Clock::now();
        runs[done].push_back(measure(o, shape, d, cs, pool, info.llc_bytes));
        const Row& r = runs[done].back();
        std::fprintf(stderr, " lngrad %.3f ms = %.2f of triad%s%s; other load %.1f cores (%.1f s)\n",
                     r.lngrad.median_s * 1e3, r.lngrad.ran ? r.triad_s / r.lngrad.median_s : 0.0,
                     r.onednn.detail.empty() ? "" : "; oneDNN impl ", r.onednn.detail.c_str(), r.other_load,
                     std::chrono::duration<double>(Clock::now() - t0).count());
        ++done;
      }
    }
  }
  std::vector<Row> rows;
  for (const std::vector<Row>& r : runs) {
    if (!r.empty()) rows.push_back(combine_runs(r));
  }
  const bool stopped = g_stop_requested != 0;
  if (stopped) {
    std::fprintf(stderr, "stopped by a signal: the report covers the %zu of %zu rows measured%s\n", rows.size(), total,
                 o.runs > 1 ? " (the last pass's rows with one run fewer)" : "");
    signal(SIGINT, SIG_DFL);  // a second signal ends the program
    signal(SIGTERM, SIG_DFL);
  }
  const std::vector<TailPair> tails = stopped ? std::vector<TailPair>{} : measure_tails(o, rows, info.llc_bytes);
  SmallShape small;
  if (o.small && !stopped) {
    std::fprintf(stderr, "[small] 4x768 float32 per-call cost ...");
    small = measure_small(o, *cs.lngrad, pool, info.llc_bytes);
    std::fprintf(stderr, " done\n");
  }
  std::fprintf(stderr, "total %.1f s\n", std::chrono::duration<double>(Clock::now() - start).count());
  // The load while rows were timed (waits for a quiet machine excluded).
  double weight = 0.0, other = 0.0, steal = 0.0;
  for (const Row& r : rows) {
    if (r.other_load < 0) continue;
    weight += r.timed_s;
    other += r.other_load * r.timed_s;
    steal += r.steal * r.timed_s;
  }
  if (weight > 0) {
    info.other_load = other / weight;
    info.steal = steal / weight;
  }

  print_table(stdout, info, rows);
  const bool agree = print_summary(stdout, info, rows, small, tails);
  if (!o.csv.empty()) {
    write_csv(o.csv, info, rows, small);
    std::printf("\nCSV written to %s\n", o.csv.c_str());
  }
  return agree ? 0 : 2;
}

}  // namespace

}  // namespace lngrad_bench

int main(int argc, char** argv) {
  try {
    const lngrad_bench::Options o = lngrad_bench::parse_options(argc, argv);
    if (o.help) {
      std::fputs(lngrad_bench::usage(), stdout);
      return 0;
    }
    return lngrad_bench::run(o);
  } catch (const lngrad::Error& e) {
    std::fprintf(stderr, "lngrad-bench: lngrad rejected a call: %s\n", e.what());
    return 1;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "lngrad-bench: %s\n(--help lists the options)\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "lngrad-bench: %s\n", e.what());
    return 1;
  }
}
