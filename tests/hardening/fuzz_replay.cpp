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

int replay(const std::vector<fs::path>& files) {
  for (const fs::path& f : files) {
    std::ifstream in(f, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replaying %s\n", f.c_str());
    std::fflush(stderr);
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  return static_cast<int>(files.size());
}

const fs::path kRoot = fs::path(LNGRAD_FUZZ_DIR);

TEST(FuzzReplay, SeedCorpus) {
  const auto files = files_in(kRoot / "corpus" / LNGRAD_FUZZ_TARGET);
  ASSERT_FALSE(files.empty()) << "no seed corpus in " << (kRoot / "corpus" / LNGRAD_FUZZ_TARGET);
  EXPECT_EQ(replay(files), static_cast<int>(files.size()));
}

// Inputs that crashed the target once: each must now pass the contract.
TEST(FuzzReplay, CrashRegressions) {
  const auto files = files_in(kRoot / "regressions" / LNGRAD_FUZZ_TARGET);
  EXPECT_EQ(replay(files), static_cast<int>(files.size()));
}

}  // namespace
