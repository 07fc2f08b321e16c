// Command-line options: "--name value", "--name=value" and "--flag", each at
// most once unless the command lets it repeat, checked against the command's
// list; numbers parsed strictly.
#pragma once

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace lngrad::cli {

// A usage or input error: exit status 2, printed as one line.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  const char* name;  // without the leading "--"
  bool takes_value;
  bool repeatable = false;
};

class Args {
 public:
  // Throws UsageError for an unknown option, one repeated that may not be, a missing value, or
  // more than `max_positionals` positional arguments. "-h"/"--help" anywhere
  // sets help() instead of failing.
  Args(std::string command, const std::vector<std::string>& argv, std::vector<OptionSpec> specs,
       std::size_t max_positionals = 0);

  bool help() const { return help_; }
  bool flag(const std::string& name) const;
  std::optional<std::string> get(const std::string& name) const;  // the first value
  std::vector<std::string> all(const std::string& name) const;    // every value, in order
  std::string required(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

  std::optional<double> number(const std::string& name) const;  // any finite or non-finite double
  std::optional<int> integer(const std::string& name, int min, int max) const;

  [[noreturn]] void fail(const std::string& message) const;  // "lngrad <command>: <message>"

 private:
  const OptionSpec* find(const std::string& name) const;

  std::string command_;
  std::vector<OptionSpec> specs_;
  std::vector<std::pair<std::string, std::string>> values_;  // name -> value ("" for flags)
  std::vector<std::string> positionals_;
  bool help_ = false;
};

}  // namespace lngrad::cli
