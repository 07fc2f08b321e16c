// bench: runs the benchmark driver lngrad-bench, found beside this executable
// (installed), in ../bench/ (build tree) or on PATH, with the same arguments.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <unistd.h>
#include <vector>

#include "args.hpp"
#include "commands.hpp"

namespace lngrad::cli {

namespace {

namespace fs = std::filesystem;

constexpr const char* kBenchName = "lngrad-bench";

bool executable(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

std::vector<fs::path> candidates() {
  std::vector<fs::path> out;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back(self.parent_path() / kBenchName);
    out.push_back(self.parent_path().parent_path() / "bench" / kBenchName);
  }
  if (const char* path = std::getenv("PATH")) {
    std::string list = path;
    std::size_t begin = 0;
    while (begin <= list.size()) {
      const std::size_t end = std::min(list.find(':', begin), list.size());
      if (end > begin) out.push_back(fs::path(list.substr(begin, end - begin)) / kBenchName);
      begin = end + 1;
    }
  }
  return out;
}

}  // namespace

int cmd_bench(const Argv& args) {
  for (const fs::path& p : candidates()) {
    if (!executable(p)) continue;
    std::vector<std::string> strings{p.string()};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& s : strings) argv.push_back(s.data());
    argv.push_back(nullptr);
    std::fflush(stdout);
    ::execv(p.c_str(), argv.data());
    throw UsageError("lngrad bench: cannot run " + p.string() + ": " + std::strerror(errno));
  }
  throw UsageError(std::string("lngrad bench: the benchmark driver ") + kBenchName +
                   " was not found beside lngrad, in ../bench/ (build tree) or on PATH; build it with "
                   "-DLNGRAD_BUILD_BENCH=ON");
}

}  // namespace lngrad::cli
