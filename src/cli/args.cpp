// Option parsing: see args.h.
#include "cli/args.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace gg::cli {

namespace {

const OptionSpec* find_spec(const std::vector<OptionSpec>& spec, const std::string& name) {
  for (const OptionSpec& option : spec) {
    if (name == option.name) return &option;
  }
  return nullptr;
}

}  // namespace

Options::Options(const std::vector<std::string>& words, const std::vector<OptionSpec>& spec) {
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& word = words[i];
    if (word.size() < 3 || word.compare(0, 2, "--") != 0) {
      throw UsageError("unexpected argument '" + word + "'");
    }
    const size_t equals = word.find('=');
    const std::string name =
        word.substr(2, equals == std::string::npos ? std::string::npos : equals - 2);
    const OptionSpec* option = find_spec(spec, name);
    if (option == nullptr) throw UsageError("unknown option --" + name);
    if (has(name)) throw UsageError("--" + name + " given twice");
    if (!option->takes_value) {
      if (equals != std::string::npos) throw UsageError("--" + name + " takes no value");
      values_[name] = "";
    } else if (equals != std::string::npos) {
      values_[name] = word.substr(equals + 1);
    } else if (i + 1 < words.size()) {
      values_[name] = words[++i];
    } else {
      throw UsageError("--" + name + " needs a value");
    }
  }
}

std::string Options::text(const std::string& name, const std::string& fallback) const {
  return has(name) ? values_.at(name) : fallback;
}

int64_t parse_integer(const std::string& name, const std::string& text, int64_t min, int64_t max) {
  errno = 0;
  char* end = nullptr;
  const long long value = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno == ERANGE) {
    throw UsageError("--" + name + ": '" + text + "' is not an integer");
  }
  if (value < min || value > max) {
    throw UsageError("--" + name + ": " + text + " is outside [" + std::to_string(min) + ", " +
                     std::to_string(max) + "]");
  }
  return value;
}

int64_t Options::integer(const std::string& name, int64_t fallback, int64_t min,
                         int64_t max) const {
  return has(name) ? parse_integer(name, values_.at(name), min, max) : fallback;
}

double Options::real(const std::string& name, double fallback) const {
  if (!has(name)) return fallback;
  const std::string& value = values_.at(name);
  char* end = nullptr;
  const double parsed = std::strtod(value.c_str(), &end);
  if (value.empty() || *end != '\0' || !std::isfinite(parsed)) {
    throw UsageError("--" + name + ": '" + value + "' is not a finite number");
  }
  return parsed;
}

std::vector<std::string> Options::list(const std::string& name, const std::string& fallback) const {
  const std::string joined = text(name, fallback);
  std::vector<std::string> items;
  size_t begin = 0;
  while (true) {
    const size_t comma = joined.find(',', begin);
    const std::string item =
        joined.substr(begin, comma == std::string::npos ? std::string::npos : comma - begin);
    if (item.empty()) throw UsageError("--" + name + ": empty item in '" + joined + "'");
    items.push_back(item);
    if (comma == std::string::npos) return items;
    begin = comma + 1;
  }
}

}  // namespace gg::cli
