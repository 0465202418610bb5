// Command-line options of one subcommand.
//
// Each subcommand declares its options up front ("--name value",
// "--name=value", or a bare "--flag"), so a misspelt option is an error
// instead of a silently ignored word. Every malformed or out-of-range value
// throws UsageError, which main turns into exit code 2. Enumerated values go
// through a table of Name<E> entries, the same table that prints them back.
#pragma once

#include <stdint.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace gg::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  const char* name;  // without the leading "--"
  bool takes_value;
};

template <typename E>
struct Name {
  const char* text;
  E value;
};

template <typename E>
const char* name_of(const std::vector<Name<E>>& table, E value) {
  for (const Name<E>& entry : table) {
    if (entry.value == value) return entry.text;
  }
  return "?";
}

// "a|b|c", for messages.
template <typename E>
std::string choices_of(const std::vector<Name<E>>& table) {
  std::string joined;
  for (const Name<E>& entry : table)
    joined += (joined.empty() ? "" : "|") + std::string(entry.text);
  return joined;
}

template <typename E>
E parse_name(const std::vector<Name<E>>& table, const std::string& option,
             const std::string& text) {
  for (const Name<E>& entry : table) {
    if (text == entry.text) return entry.value;
  }
  throw UsageError("--" + option + ": '" + text + "' is not one of " + choices_of(table));
}

class Options {
 public:
  Options(const std::vector<std::string>& words, const std::vector<OptionSpec>& spec);

  bool has(const std::string& name) const { return values_.count(name) != 0; }
  std::string text(const std::string& name, const std::string& fallback) const;
  int64_t integer(const std::string& name, int64_t fallback, int64_t min, int64_t max) const;
  double real(const std::string& name, double fallback) const;
  // A comma-separated list; empty items are an error.
  std::vector<std::string> list(const std::string& name, const std::string& fallback) const;

  template <typename E>
  E choice(const std::string& name, const std::vector<Name<E>>& table, E fallback) const {
    return has(name) ? parse_name(table, name, values_.at(name)) : fallback;
  }

 private:
  std::map<std::string, std::string> values_;  // flags map to ""
};

// Integer in [min, max] parsed from the whole of `text`, for option `name`.
int64_t parse_integer(const std::string& name, const std::string& text, int64_t min, int64_t max);

}  // namespace gg::cli
