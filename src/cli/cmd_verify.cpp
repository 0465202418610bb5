// `groupgemm verify`: one seeded random problem, run on the chosen path and
// checked against the CPU reference path — or, when the path under test is
// the reference itself, against the CLI's own fp64 product.
//
// Besides the error metrics (error_metrics.h) it checks what a path must
// not do: read ragged rows past sum(sizes) or the old output when beta is 0
// (both poisoned with NaN, host_data.h), write output rows past sum(sizes)
// (compared byte for byte), or raise device-side flags for valid sizes.
// PASS needs all of it.
#include <algorithm>
#include <cstdio>

#include "cli/args.h"
#include "cli/checks.h"
#include "cli/commands.h"
#include "cli/devices.h"
#include "cli/elements.h"
#include "cli/error_metrics.h"
#include "cli/host_data.h"
#include "cli/host_product.h"
#include "cli/placed_problem.h"
#include "cli/routing.h"

namespace gg::cli {

namespace {

const std::vector<OptionSpec> kVerifyOptions = {
    {"op", true},      {"dtype", true},      {"out", true},        {"m", true},
    {"tokens", true},  {"n", true},          {"k", true},          {"groups", true},
    {"routing", true}, {"lhs-layout", true}, {"rhs-layout", true}, {"path", true},
    {"alpha", true},   {"beta", true},       {"bias", false},      {"seed", true},
    {"tail", true},    {"index", true},      {"weights", true},
};

const std::vector<Name<gg_index_type>> kIndexNames = {{"int32", GG_INDEX_INT32},
                                                      {"int64", GG_INDEX_INT64}};

constexpr int64_t kMaxDim = int64_t{1} << 24;
constexpr int32_t kMaxGroups = 1 << 20;
// Defaults: a problem every path runs in well under a second.
constexpr int64_t kDefaultRows = 1000;
constexpr int64_t kDefaultTail = 16;
constexpr int64_t kDefaultN = 256;
constexpr int64_t kDefaultK = 512;
constexpr int32_t kDefaultGroups = 8;
constexpr uint64_t kDefaultSeed = 1;
constexpr size_t kSizesPrinted = 64;  // more groups are summarized

struct VerifyRequest {
  ModelOp op;
  Problem problem;
  int64_t routed;
  Routing routing;
  gg_path path;
  gg_index_type index_type;
  uint64_t seed;
};

VerifyRequest parse_request(const std::vector<std::string>& words) {
  const Options options(words, kVerifyOptions);
  if (options.has("m") && options.has("tokens")) throw UsageError("give --m or --tokens, not both");
  VerifyRequest request;
  request.op = options.choice("op", kModelOpNames, ModelOp::kFprop);
  request.routed =
      options.integer(options.has("tokens") ? "tokens" : "m", kDefaultRows, 0, kMaxDim);
  const int64_t tail = options.integer("tail", kDefaultTail, 0, kMaxDim);
  const int64_t n = options.integer("n", kDefaultN, 1, kMaxDim);
  const int64_t k = options.integer("k", kDefaultK, 1, kMaxDim);
  const auto groups =
      static_cast<int32_t>(options.integer("groups", kDefaultGroups, 1, kMaxGroups));
  request.routing = options.choice("routing", kRoutingNames, Routing::kRandom);
  request.path = options.choice("path", kPathNames, GG_PATH_AUTO);
  request.index_type = options.choice("index", kIndexNames, GG_INDEX_INT32);
  request.seed = static_cast<uint64_t>(options.integer("seed", kDefaultSeed, 0, INT64_MAX));
  if (request.index_type == GG_INDEX_INT32 && request.routed + tail > INT32_MAX) {
    throw UsageError("--index int32 cannot count more than 2^31 - 1 rows");
  }

  Problem& problem = request.problem;
  problem = model_problem(request.op, request.routed + tail, n, k, groups);
  const InputFormat format =
      options.choice("dtype", kInputFormatNames, kInputFormatNames[0].value);
  problem.input_dtype = format.dtype;
  problem.input_scaling = format.scaling;
  problem.out_dtype = options.choice("out", kOutputDtypeNames, GG_DTYPE_BF16);
  problem.alpha = options.real("alpha", 1.0);
  problem.beta = options.real("beta", 0.0);
  problem.bias = options.has("bias");
  problem.per_expert = options.choice("weights", kWeightsNames, false);
  const bool block_scaled = format.scaling.token_blocks != GG_BLOCK_NONE;
  if (problem.per_expert && block_scaled) {
    throw UsageError("--weights per-expert: the block-scaled --dtype formats take stacked weights "
                     "here (their per-expert block scales would be a second pointer array)");
  }
  // fprop, dgrad and wgrad fix their layouts; ragged-M's lhs is always [M, K].
  if (options.has("rhs-layout") && request.op != ModelOp::kRaggedM &&
      request.op != ModelOp::kRaggedK) {
    throw UsageError("--rhs-layout applies to --op ragged-m and ragged-k only");
  }
  if (options.has("lhs-layout") && request.op != ModelOp::kRaggedK) {
    throw UsageError("--lhs-layout applies to --op ragged-k only");
  }
  problem.lhs_layout = options.choice("lhs-layout", kLayoutNames, problem.lhs_layout);
  problem.rhs_layout = options.choice("rhs-layout", kLayoutNames, problem.rhs_layout);
  if (problem.bias && problem.op != GG_OP_RAGGED_M)
    throw UsageError("--bias applies to ragged-M ops only");
  return request;
}

void print_problem(const VerifyRequest& request, const std::vector<int64_t>& sizes) {
  const Problem& problem = request.problem;
  const bool ragged_m = problem.op == GG_OP_RAGGED_M;
  std::printf("problem   %s (%s), G=%d, %lld of %lld rows routed (%s, seed %llu)\n",
              name_of(kModelOpNames, request.op), ragged_m ? "ragged-M" : "ragged-K",
              problem.groups, static_cast<long long>(request.routed),
              static_cast<long long>(problem.rows), name_of(kRoutingNames, request.routing),
              static_cast<unsigned long long>(request.seed));
  std::printf(
      "          %s %lld, %s %lld, lhs %s, rhs %s, %s -> %s, alpha %g, beta %g, %s, %s weights\n",
      ragged_m ? "K" : "P", static_cast<long long>(problem.lhs_cols), ragged_m ? "N" : "Q",
      static_cast<long long>(problem.rhs_cols), problem.lhs_layout == GG_LAYOUT_N ? "n" : "t",
      problem.rhs_layout == GG_LAYOUT_N ? "n" : "t",
      name_of(kInputFormatNames, InputFormat{problem.input_dtype, problem.input_scaling}),
      name_of(kOutputDtypeNames, problem.out_dtype), problem.alpha, problem.beta,
      problem.bias ? "bias" : "no bias", name_of(kWeightsNames, problem.per_expert));
  if (sizes.size() <= kSizesPrinted) {
    std::printf("sizes    ");
    for (const int64_t size : sizes) std::printf(" %lld", static_cast<long long>(size));
    std::printf("\n");
  } else {
    const auto [smallest, largest] = std::minmax_element(sizes.begin(), sizes.end());
    std::printf("sizes     min %lld, max %lld, %lld empty\n", static_cast<long long>(*smallest),
                static_cast<long long>(*largest),
                static_cast<long long>(std::count(sizes.begin(), sizes.end(), int64_t{0})));
  }
}

// The output of one run of the problem on `path`, and its device flags.
std::vector<uint8_t> run_on(const VerifyRequest& request, const HostProblem& host,
                            const std::vector<int64_t>& sizes, gg_path path, uint32_t* flags) {
  PlacedProblem placed(request.problem, host, sizes, request.index_type, path);
  check_gg(placed.launch(), "gg_grouped_gemm");
  std::vector<uint8_t> out = placed.output();
  *flags = placed.take_device_flags();
  return out;
}

// Whether `path` runs here; if not, says why (no FAIL: nothing was checked).
bool path_is_available(gg_path path) {
  std::string why_not;
  if (cuda_devices(&why_not).empty()) {
    std::printf("path %s is not available here: %s\n", name_of(kPathNames, path), why_not.c_str());
  } else {
    int available = 0;
    check_gg(gg_path_available(path, 0, &available), "gg_path_available");
    if (available != 0) return true;
    std::printf("path %s is not available here: %s\n", name_of(kPathNames, path), gg_last_error());
  }
  std::printf("(--path reference runs the check on the CPU)\n");
  return false;
}

int verify(const VerifyRequest& request) {
  const Problem& problem = request.problem;
  const std::vector<int64_t> sizes =
      route(request.routing, request.routed, problem.groups, request.seed);
  const HostProblem host = make_host_problem(problem, sizes, request.seed + 1);
  print_problem(request, sizes);
  if (request.path != GG_PATH_REFERENCE && !path_is_available(request.path)) return kExitNoGpu;

  uint32_t flags = 0;
  uint32_t oracle_flags = 0;
  std::vector<double> expected;
  if (request.path == GG_PATH_REFERENCE) {
    expected = fp64_product(problem, sizes, host);
  } else {
    expected =
        decode_output(problem, run_on(request, host, sizes, GG_PATH_REFERENCE, &oracle_flags));
  }
  const std::vector<uint8_t> out_bytes = run_on(request, host, sizes, request.path, &flags);
  const std::vector<double> actual = decode_output(problem, out_bytes);
  std::printf("path      %s, checked against %s\n", name_of(kPathNames, request.path),
              request.path == GG_PATH_REFERENCE ? "the CLI's fp64 product" : "the reference path");

  // Ragged-M: rows [0, routed) are live and the rest must stay as they were;
  // ragged-K: every group's output is live.
  const bool ragged_m = problem.op == GG_OP_RAGGED_M;
  const auto live =
      static_cast<int64_t>(ragged_m ? request.routed * problem.rhs_cols : actual.size());
  const int64_t contraction =
      ragged_m ? problem.lhs_cols : *std::max_element(sizes.begin(), sizes.end());
  // fp8 operands on a GPU path may meet the fp8 tensor cores' narrower adder.
  const bool fp8_tensor_cores = is_fp8(problem.input_dtype) && request.path != GG_PATH_REFERENCE;
  const Tolerance tolerance = output_tolerance(problem.out_dtype, contraction, fp8_tensor_cores);
  std::vector<double> magnitudes;
  if (fp8_tensor_cores) magnitudes = fp64_magnitudes(problem, sizes, host);
  const ErrorMetrics metrics = compare_outputs(actual, expected, live, tolerance,
                                               fp8_tensor_cores ? &magnitudes : nullptr);
  const size_t live_bytes = static_cast<size_t>(live) * element_bytes(problem.out_dtype);
  const auto tail = static_cast<std::ptrdiff_t>(live_bytes);
  const bool tail_untouched =
      std::equal(out_bytes.begin() + tail, out_bytes.end(), host.out.bytes.begin() + tail);

  std::printf("max abs err      %.4g\n", metrics.max_abs);
  std::printf("max rel err      %.4g\n", metrics.max_rel);
  std::printf("rel L2 err       %.4g\n", metrics.rel_l2);
  std::printf("over tolerance   %lld of %lld (|err| <= %.3g * |expected| + %.3g * rms expected",
              static_cast<long long>(metrics.over_tolerance),
              static_cast<long long>(metrics.compared), tolerance.relative, tolerance.of_rms);
  if (fp8_tensor_cores) {
    std::printf(" + %.3g * sum|a||b|: fp8 tensor cores' accumulation", tolerance.of_magnitude);
  }
  std::printf(")\n");
  if (ragged_m) {
    std::printf("tail rows        %lld rows past sum(sizes) %s\n",
                static_cast<long long>(problem.rows - request.routed),
                tail_untouched ? "untouched" : "MODIFIED");
  } else {
    std::printf("tail rows        none in a ragged-K output\n");
  }
  if (request.path == GG_PATH_REFERENCE) {
    std::printf("device flags     %#x\n", flags);
  } else {
    std::printf("device flags     %#x (reference path: %#x)\n", flags, oracle_flags);
  }
  const bool pass =
      metrics.over_tolerance == 0 && tail_untouched && flags == 0 && oracle_flags == 0;
  std::printf("%s\n", pass ? "PASS" : "FAIL");
  return pass ? kExitSuccess : kExitFailure;
}

}  // namespace

std::string verify_usage() {
  const auto number = [](int64_t value) { return std::to_string(value); };
  return "usage: groupgemm verify [options]\n"
         "\n"
         "Runs one seeded random problem on a path and checks it against the CPU reference\n"
         "path; the reference path itself is checked against an fp64 product of the tool's\n"
         "own. PASS needs every output within tolerance, rows past sum(sizes) untouched,\n"
         "and no device flags.\n"
         "\n"
         "  --op " + choices_of(kModelOpNames) + "  (default fprop)\n"
         "      fprop, dgrad: ragged-M; wgrad: ragged-K; ragged-m, ragged-k: any layouts\n"
         "  --dtype " + choices_of(kInputFormatNames) + "\n"
         "      operands (default bf16): e4m3, e5m2 with a tensor scale; e4m3-group a scale\n"
         "      per group; e4m3-rowwise a scale per stored row; e4m3-blockwise 1x128 block\n"
         "      scales (128x128 on ragged-M weights); mxfp8, mxfp4; nvfp4 with a tensor\n"
         "      scale, nvfp4-group with one per group. The GPU paths that do not implement\n"
         "      a format say so (exit 4).\n"
         "  --out " + choices_of(kOutputDtypeNames) + "  output (default bf16)\n"
         "  --m N | --tokens N   routed rows (default " + number(kDefaultRows) + ")\n"
         "  --tail R             rows past them, which must stay untouched (default " +
         number(kDefaultTail) + ")\n"
         "  --n N                (default " + number(kDefaultN) + ")\n"
         "  --k N                (default " + number(kDefaultK) + ")\n"
         "  --groups G           experts (default " + number(kDefaultGroups) + ")\n"
         "  --routing " + choices_of(kRoutingNames) + "  (default random)\n"
         "  --path " + choices_of(kPathNames) + "  (default auto)\n"
         "  --rhs-layout nk|kn|n|t   ragged-m, ragged-k only (default: nk for ragged-m, n for\n"
         "                           ragged-k)\n"
         "  --lhs-layout n|t         ragged-k only (default n)\n"
         "  --alpha a (default 1)  --beta b (default 0)  --bias (ragged-M ops)\n"
         "  --seed s (default " + number(static_cast<int64_t>(kDefaultSeed)) + ")  --index " +
         choices_of(kIndexNames) + " (default int32)\n"
         "  --weights " + choices_of(kWeightsNames) +
         "  (default stacked; per-expert: the rhs, or the\n"
         "                           ragged-K output, as G separate matrices)\n"
         "\n" + kExitCodesText;
}

int run_verify(const std::vector<std::string>& words) {
  const VerifyRequest request = parse_request(words);
  try {
    return verify(request);
  } catch (const LibraryFailure& failure) {
    // Not a wrong result: the path refused the problem, or found no GPU.
    if (failure.status == GG_STATUS_NOT_SUPPORTED) {
      std::printf("path %s: %s\nNOT SUPPORTED\n", name_of(kPathNames, request.path),
                  failure.what());
      return kExitNotSupported;
    }
    if (failure.status == GG_STATUS_NO_DEVICE) {
      std::printf("path %s cannot run here: %s\n", name_of(kPathNames, request.path),
                  failure.what());
      return kExitNoGpu;
    }
    throw;
  }
}

}  // namespace gg::cli
