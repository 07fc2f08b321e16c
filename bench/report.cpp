#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <stdexcept>

namespace lngrad_bench {

namespace {

// The speed targets (docs/PERFORMANCE.md, Open gaps).
constexpr double kBf16BeyondLlcTriad = 0.58;  // the prototype's measured ceiling on Zen 5
constexpr double kF32BeyondLlcTriad = 0.65;
constexpr double kGeomeanOneDnnF32 = 1.8;
constexpr double kGeomeanOneDnnBf16 = 1.5;
constexpr double kTailRate = 0.9;     // at most 10% below the nearest multiple of 32
constexpr double kWideSpread = 0.25;  // (p90 - p10) / median
constexpr double kSmallRatio = 2.0;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

double speedup(const Measurement& peer, const Measurement& ours) {
  return peer.ran && ours.ran ? peer.median_s / ours.median_s : 0.0;
}

std::string speedup_cell(const Measurement& peer, const Measurement& ours) {
  if (!peer.ran) return "n/a";
  if (!ours.ran) return "-";
  return fmt("%.2fx", speedup(peer, ours));
}

std::string csv_num(double v, bool present) { return present ? fmt("%.6g", v) : std::string(); }

std::string csv_quote(const std::string& s) {
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

const Measurement& by_name(const Row& r, const std::string& name) {
  if (name == "lngrad") return r.lngrad;
  if (name == "oneDNN") return r.onednn;
  if (name == "torch") return r.torch;
  return r.naive;
}

const char* const kNames[] = {"lngrad", "oneDNN", "torch", "naive"};

}  // namespace

bool under_load(const Row& r, int threads) { return r.other_load > 0.1 * threads; }

double gbs(double bytes, double seconds) { return seconds > 0 ? bytes / seconds * 1e-9 : 0.0; }

void print_header(std::FILE* out, const RunInfo& info) {
  std::fprintf(out, "lngrad-bench: LayerNorm backward, pd_x + pd_gamma + pd_beta, epsilon 1e-5\n");
  std::fprintf(out, "cpu: %s\n", info.cpu.c_str());
  std::string llc = fmt("%.0f MiB", info.llc_bytes / 1048576.0);
  if (info.llc_share_bytes < info.llc_bytes) llc += fmt(" (lngrad counts on %.0f)", info.llc_share_bytes / 1048576.0);
  std::fprintf(out, "lngrad target: %s   threads: %d   last-level cache: %s   rounds: %d (median), %d untimed calls before each sample%s%s\n",
               info.target.c_str(), info.threads, llc.c_str(), info.reps, info.steady_calls,
               info.runs > 1 ? fmt("; %.0f runs (median)", info.runs).c_str() : "",
               info.stores == "automatic" ? "" : ("   pd_x stores: " + info.stores).c_str());
  std::fprintf(
      out,
      "peers: oneDNN %s, PyTorch %s; triad: %s, %d threads (fastest of cached stores, streaming stores, 1 thread)\n",
      info.onednn_version.c_str(), info.torch_version.c_str(), info.triad_isa.c_str(), info.threads);
  std::fprintf(out, "GB/s counts read dy + read x + write pd_x for every contestant, so ratios are time ratios.\n\n");
}

void print_table(std::FILE* out, const RunInfo& info, const std::vector<Row>& rows) {
  auto run_cell = [](const Row& r) {
    const std::string v = r.lngrad.ran ? fmt("%.0f%%", r.lngrad_run_range * 100) : "n/a";
    return std::string(v.size() < 8 ? 8 - v.size() : 0, ' ') + v;
  };
  const bool runs = info.runs > 1;
  std::fprintf(out, "%-12s %-9s %10s %8s %8s %7s %9s %9s %10s %12s %8s %9s %7s%s%s\n", "shape", "dtype", "lngrad ms", "GB/s",
               "triad", "/triad", "vs oneDNN", "vs torch", "naive ms", "Melem/s/core", "work KiB", "agree", "spread",
               runs ? "    runs" : "", info.explain ? "  plan" : "");
  std::map<std::string, std::set<std::string>> reasons;  // "name dtype" -> why n/a
  for (const Row& r : rows) {
    const Measurement& l = r.lngrad;
    double worst = 0.0;
    std::string wrong;
    for (const char* n : kNames) {
      const Measurement& m = by_name(r, n);
      if (!m.ran) {
        if (!m.na.empty()) reasons[std::string(n) + " " + lngrad::dtype_name(r.dtype)].insert(m.na);
        continue;
      }
      worst = std::max(worst, m.error);
      if (m.wrong) wrong += std::string(wrong.empty() ? "" : ",") + n;
    }
    std::fprintf(
        out, "%-12s %-9s %10s %8s %8.1f %7s %9s %9s %10s %12s %8.0f %9s %7s%s%s\n",
        (r.shape + (under_load(r, info.threads) ? " !" : "")).c_str(), lngrad::dtype_name(r.dtype),
        l.ran ? fmt("%.3f", l.median_s * 1e3).c_str() : "n/a",
        l.ran ? fmt("%.1f", gbs(r.bytes, l.median_s)).c_str() : "n/a", gbs(r.bytes, r.triad_s),
        l.ran ? fmt("%.2f", r.triad_s / l.median_s).c_str() : "n/a", speedup_cell(r.onednn, l).c_str(),
        speedup_cell(r.torch, l).c_str(), r.naive.ran ? fmt("%.2f", r.naive.median_s * 1e3).c_str() : "n/a",
        l.ran ? fmt("%.0f", static_cast<double>(r.rows * r.h) / l.median_s / info.threads * 1e-6).c_str() : "n/a",
        r.workspace_bytes / 1024.0, wrong.empty() ? fmt("%.1e", worst).c_str() : ("WRONG:" + wrong).c_str(),
        l.ran ? fmt("%.0f%%", l.spread * 100).c_str() : "n/a",
        runs ? run_cell(r).c_str() : "",
        info.explain ? ("  " + r.plan).c_str() : "");
  }
  std::fprintf(
      out,
      "\ntriad: GB/s of a[i] = b[i] + s*c[i] over the same bytes. /triad: lngrad's share of it.\n"
      "vs X: X's time / lngrad's time. Melem/s/core: rows*H per second per thread.\n"
      "work KiB: the scratch lngrad keeps for the shape (grad_workspace_bytes; no rows x H temporary).\n"
      "!: other processes used over a tenth of the threads' cores while the row was timed (unreliable).\n"
      "spread: lngrad's 90th minus 10th percentile time over its rounds, relative to the median\n"
      "(each sample after --steady-calls untimed calls; the CSV has the triad's as triad_spread).\n"
      "runs (--runs N > 1): the largest minus the smallest of lngrad's N run medians, relative to their median;\n"
      "every time in the table is the median of the runs.\n"
      "plan (--explain): how lngrad ran the row, as lngrad::describe_plan reports it (docs/TUNING.md).\n"
      "agree: worst max|pd_x - ref| over 8 sampled rows against the float64 reference, relative to the largest\n"
      "|pd_x| or |dy*gamma*rstd| there (tolerance %.0e float32, %.0e float16, %.0e bfloat16).\n",
      info.tolerance_f32, info.tolerance_f16, info.tolerance_bf16);
  for (const auto& [who, why] : reasons) {
    for (const auto& w : why) std::fprintf(out, "n/a %s: %s\n", who.c_str(), w.c_str());
  }
}

bool print_summary(std::FILE* out, const RunInfo& info, const std::vector<Row>& rows, const SmallShape& small,
                   const std::vector<TailPair>& tails) {
  std::fprintf(out, "\nGeometric-mean speed-up of lngrad over the shapes run:\n");
  std::map<lngrad::Dtype, std::pair<double, double>> geo;  // dtype -> (vs oneDNN, vs torch); 0 when none
  std::vector<lngrad::Dtype> dtypes;
  for (const Row& r : rows) {
    if (std::find(dtypes.begin(), dtypes.end(), r.dtype) == dtypes.end()) dtypes.push_back(r.dtype);
  }
  for (lngrad::Dtype d : dtypes) {
    double log_o = 0, log_t = 0;
    int n_o = 0, n_t = 0, n = 0;
    for (const Row& r : rows) {
      if (r.dtype != d) continue;
      ++n;
      if (const double s = speedup(r.onednn, r.lngrad); s > 0) log_o += std::log(s), ++n_o;
      if (const double s = speedup(r.torch, r.lngrad); s > 0) log_t += std::log(s), ++n_t;
    }
    const double g_o = n_o ? std::exp(log_o / n_o) : 0.0, g_t = n_t ? std::exp(log_t / n_t) : 0.0;
    geo[d] = {g_o, g_t};
    std::fprintf(out, "  %-9s vs oneDNN %s (%d of %d shapes)   vs torch %s (%d of %d shapes)\n", lngrad::dtype_name(d),
                 n_o ? fmt("%.2fx", g_o).c_str() : "n/a  ", n_o, n, n_t ? fmt("%.2fx", g_t).c_str() : "n/a  ", n_t, n);
  }

  if (info.other_load >= 0) {
    const auto loaded =
        std::count_if(rows.begin(), rows.end(), [&](const Row& r) { return under_load(r, info.threads); });
    std::fprintf(out,
                 "\nMachine load: other processes used %.2f cores on average while rows were timed (hypervisor "
                 "steal %.2f);\n  %d of %d rows were timed under load (marked !)%s\n",
                 info.other_load, info.steal, static_cast<int>(loaded), static_cast<int>(rows.size()),
                 loaded ? ": rerun them on a quiet machine (or with --wait-quiet) before drawing conclusions." : ".");
  }
  std::fprintf(out, "\nTargets (the kernels' speed targets; docs/PERFORMANCE.md):\n");
  auto verdict = [&](bool pass, const std::string& what) {
    std::fprintf(out, "  [%s] %s\n", pass ? "PASS" : "FAIL", what.c_str());
  };
  auto name_of = [](const Row& r) { return r.shape + " " + lngrad::dtype_name(r.dtype); };
  // Beyond the LLC: bfloat16 16384x4096 and every float32 shape past 3x the LLC.
  for (const Row& r : rows) {
    if (!r.lngrad.ran) continue;
    const double f = r.triad_s / r.lngrad.median_s;
    if (r.dtype == lngrad::Dtype::bfloat16 && r.rows == 16384 && r.h == 4096) {
      verdict(f >= kBf16BeyondLlcTriad, fmt(">= %.2f of the triad, ", kBf16BeyondLlcTriad) + name_of(r) + fmt(": %.2f", f));
    }
    if (r.dtype == lngrad::Dtype::float32 && r.beyond_llc) {
      verdict(f >= kF32BeyondLlcTriad, fmt(">= %.2f of the triad, ", kF32BeyondLlcTriad) + name_of(r) + fmt(": %.2f", f));
    }
  }
  // Against the peers: geometric means over oneDNN, and no shape slower than a peer.
  for (const auto& [d, target] : {std::pair{lngrad::Dtype::float32, kGeomeanOneDnnF32},
                                  std::pair{lngrad::Dtype::bfloat16, kGeomeanOneDnnBf16}}) {
    if (geo.count(d) && geo[d].first > 0) {
      verdict(geo[d].first >= target, std::string(lngrad::dtype_name(d)) + fmt(" geomean vs oneDNN >= %.1fx: ", target) +
                                          fmt("%.2fx", geo[d].first));
    }
  }
  {
    std::string slower;
    int compared = 0;
    for (const Row& r : rows) {
      for (const auto* peer : {&r.onednn, &r.torch}) {
        const double s = speedup(*peer, r.lngrad);
        if (s <= 0) continue;
        ++compared;
        if (s < 1.0) slower += (slower.empty() ? "" : ", ") + name_of(r) + " vs " + (peer == &r.onednn ? "oneDNN" : "torch") + fmt(" %.2fx", s);
      }
    }
    if (compared) verdict(slower.empty(), "no shape and dtype slower than a peer" + (slower.empty() ? std::string() : ": " + slower));
  }
  // Row tails, each against its rounded shape in alternating rounds (main.cpp).
  for (const TailPair& t : tails) {
    verdict(t.ratio >= kTailRate, t.shape + " " + lngrad::dtype_name(t.dtype) +
                                      fmt(" at >= %.2f the element rate of ", kTailRate) + t.rounded +
                                      fmt(": %.2f", t.ratio) + fmt(" (rounds %.2f", t.low) + fmt("-%.2f, alternating", t.high) +
                                      (t.cold > 0 ? fmt("; from memory %.2f)", t.cold) : std::string(")")));
  }
  // Stable: each row's spread over its rounds, and with --runs the range of
  // its run medians. Where the triad, over its own buffers in the same rounds
  // or runs, moved as widely, the machine moved under both (docs/PERFORMANCE.md,
  // run-to-run swings): named, not judged.
  auto judge_steadiness = [&](const std::string& what, auto ours, auto triad, const char* machine_note) {
    std::string wide, machine;
    for (const Row& r : rows) {
      if (!r.lngrad.ran || ours(r) <= kWideSpread) continue;
      std::string& list = triad(r) > kWideSpread ? machine : wide;
      list += (list.empty() ? "" : ", ") + name_of(r) + fmt(" %.0f%%", ours(r) * 100);
      if (&list == &machine) list += fmt(" (triad %.0f%%)", triad(r) * 100);
    }
    std::fprintf(out, "  [%s] %s %.0f%%%s\n", wide.empty() ? "PASS" : "FAIL", what.c_str(), kWideSpread * 100,
                 wide.empty() ? "" : (": " + wide).c_str());
    if (!machine.empty()) std::fprintf(out, "         not judged, %s: %s\n", machine_note, machine.c_str());
  };
  judge_steadiness(
      "spread over the rounds <=", [](const Row& r) { return r.lngrad.spread; },
      [](const Row& r) { return r.triad_spread; }, "the triad spread as widely in the same rounds");
  if (info.runs > 1) {
    judge_steadiness(
        "median across " + std::to_string(info.runs) + " runs within", [](const Row& r) { return r.lngrad_run_range; },
        [](const Row& r) { return r.triad_run_range; }, "the triad's medians ranged as widely");
  }
  std::fprintf(out,
               "  [----] not judged here: hot (64x768 and 16x4096, one thread) >= 1.2x the kernels of 48bf311 (bench/ab.sh); 700x10000 and\n"
               "         the LLC shapes against the prototype (../shared/perf-probe); see docs/PERFORMANCE.md\n");
  // Per-call overhead on a small shape, against moving its bytes once at the
  // memory rate (against an in-cache triad, 2x is out of reach for any
  // LayerNorm backward: reading each row twice already doubles its loads).
  if (small.ran) {
    const double ratio = small.lngrad_s / small.memory_s;
    verdict(ratio <= kSmallRatio,
            small.shape + fmt(" float32 call %.2f us", small.lngrad_s * 1e6) +
                fmt(" vs moving its bytes once at the memory rate %.2f us", small.memory_s * 1e6) +
                fmt(": %.2fx", ratio) + fmt(" (<= %.0fx)", kSmallRatio));
    std::fprintf(out, "         (one thread's triad over the same bytes hot in cache: %.2f us, %.1fx)\n",
                 small.once_s * 1e6, small.lngrad_s / small.once_s);
  }

  std::string wrong;
  for (const Row& r : rows) {
    for (const char* n : kNames) {
      const Measurement& m = by_name(r, n);
      if (m.ran && m.wrong)
        wrong += "\n  " + std::string(n) + " " + r.shape + " " + lngrad::dtype_name(r.dtype) + fmt(": %.2e", m.error);
    }
  }
  if (wrong.empty()) {
    std::fprintf(out, "\nAgreement: every contestant's pd_x is within tolerance of the float64 reference.\n");
  } else {
    std::fprintf(out, "\nAgreement: WRONG results (timings of these are meaningless):%s\n", wrong.c_str());
  }
  return wrong.empty();
}

void write_csv(const std::string& path, const RunInfo& info, const std::vector<Row>& rows, const SmallShape& small) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("--csv: cannot open '" + path + "' for writing");
  // '#' lines carry the run's context (bench/plot.py puts it in the title).
  f << "# cpu: " << info.cpu << "\n# target: " << info.target << "\n# threads: " << info.threads
    << "\n# llc_mib: " << fmt("%.0f", info.llc_bytes / 1048576.0)
    << "\n# llc_share_mib: " << fmt("%.0f", info.llc_share_bytes / 1048576.0)
    << "\n# reps: " << info.reps << "\n# runs: " << info.runs << "\n# steady_calls: " << info.steady_calls << "\n# onednn: " << info.onednn_version << "\n# torch: " << info.torch_version
    << "\n# triad_isa: " << info.triad_isa << "\n# other_load_cores: " << fmt("%.2f", info.other_load)
    << "\n# steal_cores: " << fmt("%.2f", info.steal) << "\n# pd_x_stores: " << info.stores << "\n";
  if (small.ran) {
    f << "# small_shape: " << small.shape << " float32 lngrad_us " << fmt("%.3f", small.lngrad_s * 1e6)
      << " once_at_memory_rate_us " << fmt("%.3f", small.memory_s * 1e6) << " once_in_cache_us "
      << fmt("%.3f", small.once_s * 1e6) << "\n";
  }
  f << "shape,rows,h,dtype,bytes,beyond_llc_x3,triad_ms,triad_gbs,triad_stores";
  for (const char* n : kNames) f << ',' << n << "_ms," << n << "_min_ms," << n << "_gbs," << n << "_error";
  f << ",lngrad_of_triad,speedup_onednn,speedup_torch,lngrad_melem_s_core,other_load_cores,onednn_impl,notes,lngrad_workspace_bytes,lngrad_spread,triad_spread,lngrad_run_range,triad_run_range,lngrad_plan\n";
  for (const Row& r : rows) {
    f << r.shape << ',' << r.rows << ',' << r.h << ',' << lngrad::dtype_name(r.dtype) << ',' << fmt("%.0f", r.bytes)
      << ',' << (r.beyond_llc ? 1 : 0) << ',' << csv_num(r.triad_s * 1e3, true) << ','
      << csv_num(gbs(r.bytes, r.triad_s), true) << ',' << r.triad_stores;
    std::string notes;
    for (const char* n : kNames) {
      const Measurement& m = by_name(r, n);
      f << ',' << csv_num(m.median_s * 1e3, m.ran) << ',' << csv_num(m.min_s * 1e3, m.ran) << ','
        << csv_num(gbs(r.bytes, m.median_s), m.ran) << ',' << csv_num(m.error, m.ran);
      if (!m.ran && !m.na.empty()) notes += (notes.empty() ? "" : "; ") + std::string(n) + ": " + m.na;
      if (m.wrong) notes += (notes.empty() ? "" : "; ") + std::string(n) + ": WRONG";
    }
    const double s_o = speedup(r.onednn, r.lngrad), s_t = speedup(r.torch, r.lngrad);
    f << ',' << csv_num(r.triad_s / r.lngrad.median_s, r.lngrad.ran) << ',' << csv_num(s_o, s_o > 0) << ','
      << csv_num(s_t, s_t > 0) << ','
      << csv_num(static_cast<double>(r.rows * r.h) / r.lngrad.median_s / info.threads * 1e-6, r.lngrad.ran) << ','
      << csv_num(r.other_load, r.other_load >= 0) << ',' << csv_quote(r.onednn.detail) << ',' << csv_quote(notes)
      << ',' << fmt("%.0f", r.workspace_bytes) << ',' << csv_num(r.lngrad.spread, r.lngrad.ran) << ','
      << csv_num(r.triad_spread, r.triad_s > 0) << ',' << csv_num(r.lngrad_run_range, r.lngrad.ran && info.runs > 1)
      << ',' << csv_num(r.triad_run_range, info.runs > 1) << ',' << csv_quote(r.plan) << '\n';
  }
  if (!f) throw std::runtime_error("--csv: writing '" + path + "' failed");
}

}  // namespace lngrad_bench
