// lngrad: the command line over the public API. Dispatches to a subcommand
// and turns every error into one line and an exit status.
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "args.hpp"
#include "commands.hpp"
#include "lngrad/lngrad.hpp"
#include "npy.hpp"

namespace lngrad::cli {

const char* const kExitStatusHelp = R"(Exit status:
  0  success
  1  compare: some tensor outside tolerance, mismatched or missing
  2  usage or input error: bad arguments, an unreadable or malformed .npy
     file, or arguments the library refuses (lngrad::Error)
  3  unexpected internal error
)";

const char* const kNpyHelp = R"(.npy files: format 1.0, 2.0 or 3.0, C order, float64, float32 or float16,
little- or big-endian ('<f8', '>f4', ...). bfloat16 has no NumPy dtype: with
--dtype bfloat16, uint16 arrays ('<u2', '>u2') hold bfloat16 bit patterns (the
upper 16 bits of a float32) - inputs are read so and bfloat16 outputs are
written as '<u2'. Without it uint16 files are refused. Fortran order, object,
structured and other dtypes, malformed headers and data shorter or longer
than the shape are refused with exit status 2. Outputs are written in the
host's byte order under a temporary name and renamed when all are complete.

Raw files: any name not ending in .npy holds bare data (numpy's tofile: C
order, the host's byte order, bfloat16 as 16-bit words), as CANN's samples
write .bin files. --dtype D and --shape S (e.g. 6,10,48) describe them; each
may be repeated as NAME=VALUE for one tensor (--dtype mean=float32), NAME
being the option without '--'. A file whose length is not its shape's size
is refused with exit status 2. --out-format bin writes raw outputs (.bin),
the default when the main input is raw.
)";

namespace {

const char* const kMainHelp = R"(usage: lngrad COMMAND [OPTIONS]   (lngrad COMMAND --help for each)

LayerNorm backward (the Ascend LayerNormGrad operator family) on .npy and raw
.bin files.

Commands:
  grad       pd_x, pd_gamma, pd_beta from dy, x, variance (or rstd), mean, gamma
  grad-x     pd_x and res_for_gamma (seed 002's LayerNormGrad)
  grad-beta  pd_gamma and pd_beta from dy and res_for_gamma (seed 001's
             LayerNormGradBeta)
  forward    y, mean, variance, rstd of LayerNorm forward
  compare    compare two files (.npy or raw) or folders within tolerances
             (golden data)
  demo       the seeds' examples beside their listed values, and a throughput line
  bench      run the benchmark driver lngrad-bench with the given arguments
  version    print the version and the SIMD targets
)";

int dispatch(const std::string& cmd, const Argv& rest) {
  if (cmd == "grad") return cmd_grad(rest);
  if (cmd == "grad-x") return cmd_grad_x(rest);
  if (cmd == "grad-beta") return cmd_grad_beta(rest);
  if (cmd == "forward") return cmd_forward(rest);
  if (cmd == "compare") return cmd_compare(rest);
  if (cmd == "demo") return cmd_demo(rest);
  if (cmd == "bench") return cmd_bench(rest);
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    std::printf("%s\n%s\n%s", kMainHelp, kNpyHelp, kExitStatusHelp);
    return kExitOk;
  }
  if (cmd == "version" || cmd == "--version") {
    std::printf("lngrad %s\nSIMD targets:", version());
    for (const std::string& t : available_targets()) std::printf(" %s", t.c_str());
    std::printf(" (active %s)\n", active_target().c_str());
    return kExitOk;
  }
  throw UsageError("unknown command '" + cmd + "' (see 'lngrad --help')");
}

int fail(int status, const char* message) {
  std::fflush(stdout);
  std::fprintf(stderr, "lngrad: %s\n", message);
  return status;
}

}  // namespace

}  // namespace lngrad::cli

int main(int argc, char** argv) {
  using namespace lngrad::cli;
  if (argc < 2) {
    return fail(kExitUsage, "no command given (see 'lngrad --help')");
  }
  const Argv rest(argv + 2, argv + argc);
  try {
    const int status = dispatch(argv[1], rest);
    if (std::fflush(stdout) != 0) return fail(kExitUsage, "cannot write to standard output");
    return status;
  } catch (const UsageError& e) {
    const char* m = e.what();
    return fail(kExitUsage, std::strncmp(m, "lngrad ", 7) == 0 ? m + 7 : m);
  } catch (const NpyError& e) {
    return fail(kExitUsage, e.what());
  } catch (const lngrad::Error& e) {
    return fail(kExitUsage, e.what());
  } catch (const std::bad_alloc&) {
    return fail(kExitInternal, "out of memory");
  } catch (const std::exception& e) {
    return fail(kExitInternal, (std::string("internal error: ") + e.what()).c_str());
  } catch (...) {
    return fail(kExitInternal, "internal error");
  }
}
