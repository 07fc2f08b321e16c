// Replays a fuzz target (LNGRAD_FUZZ_TARGET) on its seed corpus and on every
// input that once crashed it (fuzz/corpus/<target>/, fuzz/regressions/<target>/),
// with whatever compiler and sanitizers this build uses. A contract violation
// aborts; the file being replayed is printed first so the failure names it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> files_in(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.is_regular_file()) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs the target on every file, each read whole (a file that cannot be read
// fails the test rather than replaying nothing).
void replay(const fs::path& dir) {
  const std::vector<fs::path> files = files_in(dir);
  ASSERT_FALSE(files.empty()) << "nothing to replay in " << dir;
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    ASSERT_TRUE(in) << "cannot open " << f;
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_EQ(bytes.size(), fs::file_size(f)) << "short read of " << f;
    std::fprintf(stderr, "replaying %s\n", f.c_str());
    std::fflush(stderr);
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
}

const fs::path kRoot = fs::path(LNGRAD_FUZZ_DIR);

TEST(FuzzReplay, SeedCorpus) { replay(kRoot / "corpus" / LNGRAD_FUZZ_TARGET); }

// Inputs that crashed the target once: each must now pass the contract.
// Registered only for targets with such inputs (CMake checks the folder).
#ifdef LNGRAD_FUZZ_HAS_REGRESSIONS
TEST(FuzzReplay, CrashRegressions) { replay(kRoot / "regressions" / LNGRAD_FUZZ_TARGET); }
#endif

}  // namespace
