// The subcommands. Each takes the words after its name and returns the
// process exit code (below); a usage error is thrown as UsageError.
#pragma once

#include <string>
#include <vector>

namespace gg::cli {

// Exit codes, the same for every subcommand.
constexpr int kExitSuccess = 0;       // success; verify: PASS
constexpr int kExitFailure = 1;       // verify: FAIL (wrong results); or a library, CUDA or
                                      // memory error
constexpr int kExitUsage = 2;         // a usage error
constexpr int kExitNoGpu = 3;         // the work needs a GPU path that cannot run here: no
                                      // NVIDIA driver/GPU, or a GPU the path does not run on
constexpr int kExitNotSupported = 4;  // the path does not implement the problem

// The exit codes as the usage texts list them.
extern const char* const kExitCodesText;

int run_info(const std::vector<std::string>& words);
int run_verify(const std::vector<std::string>& words);
int run_bench(const std::vector<std::string>& words);
int run_bench_quantize(const std::vector<std::string>& words);

// Each subcommand's usage: its options with their defaults and choices.
std::string info_usage();
std::string verify_usage();
std::string bench_usage();
std::string bench_quantize_usage();

}  // namespace gg::cli
