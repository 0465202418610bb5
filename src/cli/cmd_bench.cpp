// `groupgemm bench`: the MoE presets' up-projections as fprop, dgrad and
// wgrad, under uniform and skewed routing, timed against cuBLAS on the GPU
// (bench_gpu.h). Outputs are bf16 unless --out and --beta say otherwise
// (wgrad with --out fp32 --beta 1 accumulates into an fp32 main-grad
// buffer, as training does). Without a GPU it says why and times the CPU reference on a
// small preset instead, in the same table, and still succeeds: the command
// is usable everywhere. Results go to stdout (a table, or one JSON document
// with --json); the notice and the progress line go to stderr.
#include <algorithm>
#include <cstdio>
#include <new>

#include "cli/args.h"
#include "cli/bench_cpu.h"
#include "cli/bench_gpu.h"
#include "cli/checks.h"
#include "cli/commands.h"
#include "cli/devices.h"
#include "cli/elements.h"
#include "cli/problem.h"
#include "cli/progress.h"

namespace gg::cli {

namespace {

const std::vector<OptionSpec> kBenchOptions = {
    {"preset", true}, {"tokens", true}, {"routing", true}, {"ops", true}, {"out", true},
    {"beta", true},   {"iters", true},  {"json", false},  {"path", true},
    {"weights", true}, {"warm-ms", true}, {"format", true},
};

const std::vector<Name<ModelOp>> kBenchOps = {
    {"fprop", ModelOp::kFprop}, {"dgrad", ModelOp::kDgrad}, {"wgrad", ModelOp::kWgrad}};
const std::vector<Name<Routing>> kBenchRoutings = {{"uniform", Routing::kUniform},
                                                   {"skewed", Routing::kSkewed}};

constexpr int kGpuIters = 50;
constexpr int kCpuIters = 3;
constexpr int64_t kMaxTokens = int64_t{1} << 24;

struct BenchRequest {
  std::vector<const MoePreset*> presets;  // empty: all
  std::vector<int64_t> tokens;            // empty: the mode's default
  std::vector<Routing> routings;
  std::vector<ModelOp> ops;
  Output output;
  bool per_expert = false;
  int iters = 0;  // 0: the mode's default
  int warm_ms = kDefaultWarmMs;
  bool json = false;
  gg_path path = GG_PATH_AUTO;  // our GPU path
  InputFormat format = {GG_DTYPE_BF16, {}};
};

BenchRequest parse_request(const std::vector<std::string>& words) {
  const Options options(words, kBenchOptions);
  BenchRequest request;
  const std::string preset = options.text("preset", "all");
  if (preset != "all") {
    request.presets.push_back(find_preset(preset));
    if (request.presets.back() == nullptr) {
      std::string names;
      for (const MoePreset& known : moe_presets()) names += std::string(" ") + known.name;
      throw UsageError("--preset: unknown preset '" + preset + "'; known:" + names + " all");
    }
  }
  if (options.has("tokens")) {
    for (const std::string& item : options.list("tokens", "")) {
      request.tokens.push_back(parse_integer("tokens", item, 1, kMaxTokens));
    }
  }
  const std::string routing = options.text("routing", "both");
  if (routing == "both") {
    request.routings = {Routing::kUniform, Routing::kSkewed};
  } else {
    request.routings = {parse_name(kBenchRoutings, "routing", routing)};
  }
  for (const std::string& item : options.list("ops", "fprop,dgrad,wgrad")) {
    request.ops.push_back(parse_name(kBenchOps, "ops", item));
  }
  request.output.dtype = options.choice("out", kOutputDtypeNames, GG_DTYPE_BF16);
  request.output.beta = options.real("beta", 0.0);
  request.per_expert = options.choice("weights", kWeightsNames, false);
  request.iters = static_cast<int>(options.integer("iters", 0, 1, 100000));
  request.warm_ms = static_cast<int>(options.integer("warm-ms", kDefaultWarmMs, 0, 60000));
  request.json = options.has("json");
  request.path = options.choice("path", kPathNames, GG_PATH_AUTO);
  if (request.path == GG_PATH_REFERENCE) throw UsageError("--path: the GPU bench times a GPU path");
  request.format = options.choice("format", kInputFormatNames, request.format);
  if (request.per_expert && request.format.scaling.token_blocks != GG_BLOCK_NONE) {
    throw UsageError("--weights per-expert: the block-scaled --format formats take stacked "
                     "weights here (their per-expert block scales would be a second pointer "
                     "array)");
  }
  return request;
}

std::vector<BenchCase> make_cases(const std::vector<const MoePreset*>& presets,
                                  const std::vector<int64_t>& tokens, const BenchRequest& request) {
  std::vector<BenchCase> cases;
  for (const MoePreset* preset : presets) {
    for (const int64_t count : tokens) {
      for (const Routing routing : request.routings) {
        for (const ModelOp op : request.ops) {
          cases.push_back(
              {preset, count, routing, op, request.output, request.per_expert, request.format});
        }
      }
    }
  }
  return cases;
}

Repeats repeats_of(int iters) { return {std::max(1, iters / 10), iters}; }

template <typename RunCase>
void run_cases(const std::vector<BenchCase>& cases, BenchReport& report, RunCase run_case) {
  Progress progress(static_cast<int>(cases.size()));
  for (const BenchCase& bench_case : cases) {
    progress.step(std::string(bench_case.preset->name) + " " + std::to_string(bench_case.tokens) +
                  " " + name_of(kRoutingNames, bench_case.routing) + " " +
                  name_of(kModelOpNames, bench_case.op));
    // A case that fails (out of memory at a large preset, say) is reported
    // in its row; the others still run.
    try {
      report.rows.push_back(run_case(bench_case));
    } catch (const Failure& failure) {
      report.rows.push_back(bench_row(bench_case));
      report.rows.back().error = failure.what();
    } catch (const std::bad_alloc&) {  // an allocation outside allocate_host's checks
      report.rows.push_back(bench_row(bench_case));
      report.rows.back().error = "out of host memory (std::bad_alloc)";
    }
  }
  progress.finish();
}

std::string token_list(const std::vector<int64_t>& tokens) {
  std::string text;
  for (const int64_t count : tokens) text += (text.empty() ? "" : ",") + std::to_string(count);
  return text;
}

}  // namespace

std::string bench_usage() {
  std::string presets;
  for (const MoePreset& preset : moe_presets()) presets += std::string(preset.name) + "|";
  return "usage: groupgemm bench [options]\n"
         "\n"
         "Times each preset's up-projection as fprop, dgrad and wgrad on our GPU path against\n"
         "cuBLAS (a dense GEMM of equal FLOPs, and a loop of per-group GEMMs), with the\n"
         "roofline floor of the GPU it runs on. Without a GPU it times the CPU reference path\n"
         "on the small preset " + std::string(cpu_preset().name) +
         " instead (--preset is then ignored, and says so).\n"
         "\n"
         "  --preset " + presets + "all  (default all)\n"
         "  --tokens N[,N...]    (default " + token_list(default_gpu_tokens()) +
         "; without a GPU " + std::to_string(default_cpu_tokens()) + ")\n"
         "  --routing uniform|skewed|both  (default both)\n"
         "  --ops " + choices_of(kBenchOps) + "[,...]  (default fprop,dgrad,wgrad)\n"
         "  --out " + choices_of(kOutputDtypeNames) + "  (default bf16)  --beta b (default 0)\n"
         "  --weights " + choices_of(kWeightsNames) + "  (default stacked)\n"
         "  --format " + choices_of(kInputFormatNames) + "\n"
         "                       operands (default bf16; as in verify --dtype). A quantized\n"
         "                       format is timed on K-major operands beside our bf16 product\n"
         "                       and cuBLASLt's dense fp8 of equal work (DeepSeek-V3 block\n"
         "                       scales for e4m3-blockwise, tensor scales otherwise)\n"
         "  --path auto|portable|sm90  our GPU path (default auto)\n"
         "  --iters N            timed runs (default " + std::to_string(kGpuIters) +
         "; without a GPU " + std::to_string(kCpuIters) + ")\n"
         "  --warm-ms N          time each GPU figure after N ms of its work (default " +
         std::to_string(kDefaultWarmMs) + ")\n"
         "  --json               one JSON document instead of the table\n"
         "\n"
         "A case that fails (out of memory, say) is reported in its row; the rest still run.\n"
         "\n" + kExitCodesText;
}

int run_bench(const std::vector<std::string>& words) {
  const BenchRequest request = parse_request(words);
  std::string why_not;
  const std::vector<CudaDevice> devices = cuda_devices(&why_not);
  BenchReport report;
  report.output = name_of(kOutputDtypeNames, request.output.dtype);
  report.beta = request.output.beta;
  report.weights = name_of(kWeightsNames, request.per_expert);
  report.format = name_of(kInputFormatNames, request.format);
  report.quantized = is_quantized(request.format);
  if (devices.empty()) {
    // The GPU presets' cases take the reference minutes to hours each.
    const std::string asked =
        request.presets.empty() ? "every preset" : std::string(request.presets[0]->name);
    std::fprintf(stderr,
                 "%s: timing the CPU reference path instead of a GPU path, on the small preset "
                 "%s instead of %s (the reference would take minutes to hours a case of the "
                 "GPU presets)\n",
                 why_not.c_str(), cpu_preset().name, asked.c_str());
    report.mode = "cpu-reference";
    report.device = "none: " + why_not;
    const std::vector<int64_t> tokens =
        request.tokens.empty() ? std::vector<int64_t>{default_cpu_tokens()} : request.tokens;
    const Repeats repeats = repeats_of(request.iters > 0 ? request.iters : kCpuIters);
    run_cases(make_cases({&cpu_preset()}, tokens, request), report,
              [&](const BenchCase& bench_case) { return run_on_reference(bench_case, repeats); });
  } else {
    report.mode = "gpu";
    report.device = devices[0].name;
    report.path = name_of(kPathNames, request.path);
    std::vector<const MoePreset*> presets = request.presets;
    if (presets.empty()) {
      for (const MoePreset& preset : moe_presets()) presets.push_back(&preset);
    }
    const std::vector<int64_t>& tokens =
        request.tokens.empty() ? default_gpu_tokens() : request.tokens;
    Repeats repeats = repeats_of(request.iters > 0 ? request.iters : kGpuIters);
    repeats.warm_ms = request.warm_ms;
    GpuBench bench(devices[0], repeats, request.path, request.format);
    report.rates = bench.rates();
    if (report.quantized) {
      report.fp8_dense = name_of(kFp8ScalesNames, GpuBench::fp8_peer_scales(request.format));
    }
    report.warm_ms = request.warm_ms;
    run_cases(make_cases(presets, tokens, request), report,
              [&](const BenchCase& bench_case) { return bench.run(bench_case); });
  }
  if (request.json) {
    print_json(report, stdout);
  } else {
    print_table(report, stdout);
  }
  return kExitSuccess;
}

}  // namespace gg::cli
