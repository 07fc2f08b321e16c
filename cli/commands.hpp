// The lngrad subcommands. Each takes the arguments after its name and returns
// the exit status; errors are thrown (UsageError, NpyError, lngrad::Error)
// and turned into one-line messages by main.
#pragma once

#include <string>
#include <vector>

namespace lngrad::cli {

using Argv = std::vector<std::string>;

int cmd_grad(const Argv& args);
int cmd_grad_x(const Argv& args);
int cmd_grad_beta(const Argv& args);
int cmd_forward(const Argv& args);
int cmd_compare(const Argv& args);
int cmd_demo(const Argv& args);
int cmd_bench(const Argv& args);

// Exit statuses, shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitDifferences = 1;  // compare: something outside tolerance
inline constexpr int kExitUsage = 2;        // bad arguments or input files, lngrad::Error
inline constexpr int kExitInternal = 3;     // anything unexpected

// The paragraph on exit statuses, in every --help.
extern const char* const kExitStatusHelp;
// The paragraph on .npy files and --dtype bfloat16.
extern const char* const kNpyHelp;

}  // namespace lngrad::cli
