#include "args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace lngrad::cli {

Args::Args(std::string command, const std::vector<std::string>& argv, std::vector<OptionSpec> specs,
           std::size_t max_positionals)
    : command_(std::move(command)), specs_(std::move(specs)) {
  bool options_done = false;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (!options_done && (a == "-h" || a == "--help")) {
      help_ = true;
      continue;
    }
    if (!options_done && a == "--") {
      options_done = true;
      continue;
    }
    if (options_done || a.size() < 2 || a[0] != '-') {
      if (positionals_.size() == max_positionals) {
        fail(max_positionals == 0 ? "unexpected argument '" + a + "'"
                                  : "too many arguments ('" + a + "' is one more than " +
                                        std::to_string(max_positionals) + ")");
      }
      positionals_.push_back(a);
      continue;
    }
    if (a.rfind("--", 0) != 0) fail("unknown option '" + a + "'");
    std::string name = a.substr(2), value;
    const std::size_t eq = name.find('=');
    const bool inline_value = eq != std::string::npos;
    if (inline_value) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    const OptionSpec* spec = find(name);
    if (spec == nullptr) fail("unknown option '--" + name + "'");
    for (const auto& [seen, v] : values_) {
      if (seen == name && !spec->repeatable) fail("option '--" + name + "' given twice");
    }
    if (spec->takes_value && !inline_value) {
      if (i + 1 >= argv.size()) fail("option '--" + name + "' needs a value");
      value = argv[++i];
    } else if (!spec->takes_value && inline_value) {
      fail("option '--" + name + "' takes no value");
    }
    values_.emplace_back(name, value);
  }
}

const OptionSpec* Args::find(const std::string& name) const {
  for (const OptionSpec& s : specs_) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

void Args::fail(const std::string& message) const {
  throw UsageError("lngrad " + command_ + ": " + message + " (see 'lngrad " + command_ + " --help')");
}

bool Args::flag(const std::string& name) const { return get(name).has_value(); }

std::optional<std::string> Args::get(const std::string& name) const {
  for (const auto& [n, v] : values_) {
    if (n == name) return v;
  }
  return std::nullopt;
}

std::vector<std::string> Args::all(const std::string& name) const {
  std::vector<std::string> found;
  for (const auto& [n, v] : values_) {
    if (n == name) found.push_back(v);
  }
  return found;
}

std::string Args::required(const std::string& name) const {
  auto v = get(name);
  if (!v) fail("missing required option '--" + name + "'");
  if (v->empty()) fail("option '--" + name + "' needs a non-empty value");
  return *v;
}

std::optional<double> Args::number(const std::string& name) const {
  auto v = get(name);
  if (!v) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double d = std::strtod(v->c_str(), &end);
  if (v->empty() || end != v->c_str() + v->size() || errno == ERANGE) {
    fail("option '--" + name + "': expected a number, given '" + *v + "'");
  }
  return d;
}

std::optional<int> Args::integer(const std::string& name, int min, int max) const {
  auto v = get(name);
  if (!v) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const long n = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || end != v->c_str() + v->size() || errno == ERANGE || n < min || n > max) {
    fail("option '--" + name + "': expected an integer from " + std::to_string(min) + " to " + std::to_string(max) +
         ", given '" + *v + "'");
  }
  return static_cast<int>(n);
}

}  // namespace lngrad::cli
