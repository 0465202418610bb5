// groupgemm: the command-line front end of the library.
//
//   groupgemm info      version, build, CUDA devices, available paths
//   groupgemm verify    one random problem on a path, checked against the
//                       CPU reference (exit 0 PASS, 1 FAIL)
//   groupgemm bench     MoE presets against cuBLAS, with roofline efficiency
//
// Usage errors exit with 2 and a message; library and CUDA failures with 1.
#include <algorithm>
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"

namespace {

const char* const kUsage =
    "usage: groupgemm <command> [options]\n"
    "\n"
    "commands:\n"
    "  info     version, build, CUDA devices and the paths available here\n"
    "  verify   run one random problem on a path and check it against the CPU reference\n"
    "             --op fprop|dgrad|wgrad|ragged-m|ragged-k  --dtype bf16|fp16|e4m3|e5m2\n"
    "             --out bf16|fp16|fp32  --m|--tokens N  --n N  --k N  --groups G\n"
    "             --routing uniform|skewed|random|padded|one-hot|empty  --path "
    "auto|portable|sm90|reference\n"
    "             [--rhs-layout nk|kn|n|t] (ragged-m, ragged-k)  [--lhs-layout n|t] (ragged-k)\n"
    "             [--alpha a] [--beta b] [--bias] [--seed s] [--tail R] [--index int32|int64]\n"
    "             [--weights stacked|per-expert] (per-expert: rhs or out as G pointers)\n"
    "  bench    time MoE expert GEMMs against cuBLAS (the CPU reference without a GPU)\n"
    "             [--preset NAME|all] [--tokens N[,N...]] [--routing uniform|skewed|both]\n"
    "             [--ops fprop,dgrad,wgrad] [--out bf16|fp16|fp32] [--beta b] [--iters N]\n"
    "             [--json] [--path auto|portable|sm90] [--weights stacked|per-expert]\n"
    "             [--warm-ms N] (time each GPU figure after N ms of its work: 300)\n"
    "  bench-quantize  time the grouped quantizer (rowwise + columnwise) against the copy\n"
    "             bandwidth  [--preset NAME[,NAME...]] [--tokens N[,N...]]\n"
    "             [--formats fp8_e4m3_tensor,fp8_e4m3_group,fp8_e4m3_1x128,mxfp8_e4m3,\n"
    "             nvfp4_tensor,nvfp4_group]\n"
    "             [--input bf16|fp16|fp32] [--routing uniform|skewed|random|padded|one-hot|empty]\n"
    "             [--iters N] [--warm-ms N] (as bench's: 300)\n"
    "\n"
    "exit codes: 0 success/PASS, 1 failure/FAIL, 2 usage error\n";

}  // namespace

int main(int argc, char** argv) {
  const std::vector<std::string> words(argv + 1, argv + argc);
  const std::string command = words.empty() ? "" : words[0];
  const std::vector<std::string> options(words.empty() ? words.end() : words.begin() + 1,
                                         words.end());
  const bool wants_help =
      command == "help" || std::find_if(words.begin(), words.end(), [](const std::string& word) {
                             return word == "--help" || word == "-h";
                           }) != words.end();
  if (wants_help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  try {
    if (command == "info") return gg::cli::run_info(options);
    if (command == "verify") return gg::cli::run_verify(options);
    if (command == "bench") return gg::cli::run_bench(options);
    if (command == "bench-quantize") return gg::cli::run_bench_quantize(options);
    throw gg::cli::UsageError(command.empty() ? "no command given"
                                              : "unknown command '" + command + "'");
  } catch (const gg::cli::UsageError& error) {
    std::fprintf(stderr, "groupgemm: %s\n\n%s", error.what(), kUsage);
    return 2;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "groupgemm: error: %s\n", error.what());
    return 1;
  }
}
