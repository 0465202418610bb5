// The subcommands. Each takes the words after its name and returns the
// process exit code: 0 success (verify: PASS), 1 failure (verify: FAIL, or
// a library/CUDA error), 2 usage error (thrown as UsageError).
#pragma once

#include <string>
#include <vector>

namespace gg::cli {

int run_info(const std::vector<std::string>& words);
int run_verify(const std::vector<std::string>& words);
int run_bench(const std::vector<std::string>& words);
int run_bench_quantize(const std::vector<std::string>& words);

}  // namespace gg::cli
