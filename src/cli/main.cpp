// groupgemm: the command-line front end of the library.
//
//   groupgemm info            version, build, CUDA devices, available paths
//   groupgemm verify          one random problem on a path, checked against
//                             the CPU reference
//   groupgemm bench           MoE presets against cuBLAS, with roofline efficiency
//   groupgemm bench-quantize  the grouped quantizer against the copy bandwidth
//
// `groupgemm <command> --help` prints that command's options and defaults.
// Exit codes are listed in commands.h and printed by every usage text.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"

namespace gg::cli {

const char* const kExitCodesText =
    "exit codes:\n"
    "  0  success (verify: PASS)\n"
    "  1  verify: FAIL, wrong results; any command: a library, CUDA or memory error\n"
    "  2  usage error\n"
    "  3  a GPU path cannot run here: no NVIDIA driver/GPU, or a GPU the path does not run on\n"
    "  4  the path does not support the problem (the library says NOT_SUPPORTED)\n";

namespace {

struct Command {
  const char* name;
  int (*run)(const std::vector<std::string>& words);
  std::string (*usage)();
  const char* summary;
};

const std::vector<Command> kCommands = {
    {"info", run_info, info_usage, "version, build, CUDA devices and the paths available here"},
    {"verify", run_verify, verify_usage,
     "run one random problem on a path and check it against the CPU reference"},
    {"bench", run_bench, bench_usage,
     "time MoE expert GEMMs against cuBLAS (the CPU reference without a GPU)"},
    {"bench-quantize", run_bench_quantize, bench_quantize_usage,
     "time the GPU grouped quantizer against the copy bandwidth"},
};

std::string general_usage() {
  std::string text = "usage: groupgemm <command> [options]\n\ncommands:\n";
  for (const Command& command : kCommands) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-15s %s\n", command.name, command.summary);
    text += line;
  }
  return text + "\n'groupgemm <command> --help' lists a command's options and defaults.\n\n" +
         kExitCodesText;
}

const Command* find_command(const std::string& name) {
  for (const Command& command : kCommands) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

bool is_help(const std::string& word) { return word == "--help" || word == "-h"; }

}  // namespace
}  // namespace gg::cli

int main(int argc, char** argv) {
  using namespace gg::cli;
  const std::vector<std::string> words(argv + 1, argv + argc);
  const std::string name = words.empty() ? "" : words[0];
  const std::vector<std::string> options(words.empty() ? words.end() : words.begin() + 1,
                                         words.end());
  const Command* command = find_command(name);
  // "help" and "--help" alone print the commands; "help verify" and
  // "verify --help" print verify's options only.
  if (name == "help" || is_help(name)) {
    const Command* about = options.empty() ? nullptr : find_command(options[0]);
    std::fputs(about != nullptr ? about->usage().c_str() : general_usage().c_str(), stdout);
    return kExitSuccess;
  }
  if (command != nullptr && std::any_of(options.begin(), options.end(), is_help)) {
    std::fputs(command->usage().c_str(), stdout);
    return kExitSuccess;
  }
  try {
    if (command == nullptr) {
      throw UsageError(name.empty() ? "no command given" : "unknown command '" + name + "'");
    }
    return command->run(options);
  } catch (const UsageError& error) {
    std::fprintf(stderr, "groupgemm: %s\n\n%s", error.what(),
                 command != nullptr ? command->usage().c_str() : general_usage().c_str());
    return kExitUsage;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "groupgemm: error: %s\n", error.what());
    return kExitFailure;
  }
}
