// `groupgemm bench-quantize`: the grouped quantizer on MoE activations
// (ragged [tokens, hidden], bf16 unless --input says fp16 or fp32, routed
// over the preset's experts uniformly unless --routing says otherwise),
// rowwise and columnwise in one call, for each requested format. Each case
// reports the median time (after --warm-ms of the same work, as `bench`
// times), the bandwidth of the bytes that must move (the
// input read once; every output byte, block scale, fp32 scale and amax
// written once) and that bandwidth as a fraction of the device-to-device
// copy bandwidth measured at the start of the same run (machine_rates.h).
// Formats whose scale is made from an amax (fp8 tensor or group scale,
// nvfp4) take an amax launch, a second read of the input, which the
// "traffic" column counts (the fraction of copy bandwidth of the bytes
// actually read and written). The per-group amax output is requested only
// with group scales, each made from its group's amax; a tensor scale needs
// the tensor's alone (and without per-group maxima its amax launch, not
// only its quantize launch, takes spans of the groups' rows,
// plan/quantize_plan.h).
// Without a GPU it says why and exits with kExitNoGpu. Unlike `bench`, it
// does not time the CPU reference instead: its figures are fractions of a
// GPU's copy bandwidth, and the reference quantizer, a plain definition of
// the formats, has no such bound to be measured against.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/checks.h"
#include "cli/commands.h"
#include "cli/cuda_stream.h"
#include "cli/device_buffer.h"
#include "cli/device_fill.h"
#include "cli/devices.h"
#include "cli/elements.h"
#include "cli/machine_rates.h"
#include "cli/presets.h"
#include "cli/routing.h"
#include "cli/timing.h"
#include "groupgemm/groupgemm.h"

namespace gg::cli {
namespace {

struct QuantizeFormat {
  const char* name;
  gg_dtype dtype;
  gg_block_scaling block;
  gg_scale_extent extent;
};

const std::vector<QuantizeFormat> kFormats = {
    {"fp8_e4m3_tensor", GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR},
    {"fp8_e4m3_group", GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP},
    {"fp8_e4m3_1x128", GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE},
    {"mxfp8_e4m3", GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE},
    {"nvfp4_tensor", GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR},
    {"nvfp4_group", GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP},
};

const std::vector<OptionSpec> kOptions = {
    {"preset", true}, {"tokens", true}, {"formats", true}, {"input", true},
    {"routing", true}, {"iters", true}, {"warm-ms", true}};

const std::vector<Name<gg_dtype>> kInputTypes = {
    {"bf16", GG_DTYPE_BF16}, {"fp16", GG_DTYPE_FP16}, {"fp32", GG_DTYPE_FP32}};

const QuantizeFormat& find_format(const std::string& name) {
  for (const QuantizeFormat& f : kFormats) {
    if (name == f.name) return f;
  }
  std::string known;
  for (const QuantizeFormat& f : kFormats) known += std::string(" ") + f.name;
  throw UsageError("--formats: unknown format '" + name + "'; known:" + known);
}

// One output of a case: its buffers and its view.
struct Output {
  DeviceBuffer data, block_scales, scale;
  gg_tensor view{};
  size_t bytes = 0;
};

void make_output(const QuantizeFormat& f, int64_t rows, int64_t cols, bool token_cols,
                 int32_t groups, Output* out) {
  const size_t elements = static_cast<size_t>(rows * cols);
  const size_t data_bytes = f.dtype == GG_DTYPE_E2M1 ? elements / 2 : elements;
  out->data = DeviceBuffer(data_bytes);
  out->bytes = data_bytes;
  gg_tensor& t = out->view;
  t.data = out->data.data();
  t.dtype = f.dtype;
  t.rank = 2;
  t.shape[0] = rows;
  t.shape[1] = cols;
  t.block_scaling = f.block;
  t.scale_extent = f.extent;
  if (f.block != GG_BLOCK_NONE) {
    int64_t shape[2] = {0, 0};
    if (gg_block_scale_shape(f.block, rows, cols, 1, token_cols ? 1 : 0, groups, shape) !=
        GG_STATUS_SUCCESS) {
      throw Failure(std::string("gg_block_scale_shape: ") + gg_last_error());
    }
    const size_t bytes =
        static_cast<size_t>(shape[0] * shape[1]) * (f.block == GG_BLOCK_1X128 ? 4 : 1);
    out->block_scales = DeviceBuffer(std::max<size_t>(bytes, 1));
    out->bytes += bytes;
    t.block_scales = out->block_scales.data();
  }
  if (f.extent != GG_SCALE_NONE) {
    const size_t count = f.extent == GG_SCALE_GROUP ? static_cast<size_t>(groups) : 1;
    out->scale = DeviceBuffer(count * sizeof(float));
    out->bytes += count * sizeof(float);
    t.scale = static_cast<float*>(out->scale.data());
  }
}

void run_case(const MoePreset& preset, int64_t tokens, const QuantizeFormat& f, gg_dtype input_type,
              Routing routing, double copy_bytes_per_s, cudaStream_t stream, Repeats repeats) {
  const int64_t k = preset.hidden;
  const int32_t groups = preset.experts;
  DeviceBuffer input(static_cast<size_t>(tokens * k) * element_bytes(input_type));
  fill_random(input, input_type, 7, stream);
  const std::vector<int64_t> routed = route(routing, tokens, groups, 11);
  std::vector<int32_t> sizes(routed.begin(), routed.end());
  DeviceBuffer sizes_device(sizes.size() * sizeof(int32_t));
  sizes_device.upload(sizes.data(), sizes.size() * sizeof(int32_t));
  Output rowwise, columnwise;
  make_output(f, tokens, k, false, groups, &rowwise);
  make_output(f, k, tokens, true, groups, &columnwise);
  const bool amax_scaled = f.extent != GG_SCALE_NONE;
  const bool group_amax = f.extent == GG_SCALE_GROUP;
  DeviceBuffer amax(static_cast<size_t>(groups) * sizeof(float));

  gg_quantize_desc desc{};
  desc.num_groups = groups;
  desc.group_sizes.sizes = sizes_device.data();
  desc.group_sizes.type = GG_INDEX_INT32;
  desc.input.data = input.data();
  desc.input.dtype = input_type;
  desc.input.rank = 2;
  desc.input.shape[0] = tokens;
  desc.input.shape[1] = k;
  desc.rowwise = rowwise.view;
  desc.columnwise = columnwise.view;
  desc.amax = group_amax ? static_cast<float*>(amax.data()) : nullptr;
  desc.path = GG_PATH_AUTO;
  size_t workspace_bytes = 0;
  if (gg_grouped_quantize_workspace_size(&desc, &workspace_bytes) != GG_STATUS_SUCCESS) {
    throw Failure(std::string("gg_grouped_quantize_workspace_size: ") + gg_last_error());
  }
  DeviceBuffer workspace(workspace_bytes);
  check_cuda(cudaMemsetAsync(workspace.data(), 0, workspace_bytes, stream), "cudaMemsetAsync");

  gg_status status = GG_STATUS_SUCCESS;
  const double ms = median_gpu_ms(stream, repeats, [&](int) {
    if (status == GG_STATUS_SUCCESS) {
      status = gg_grouped_quantize(&desc, workspace.data(), workspace_bytes, stream);
    }
  });
  if (status != GG_STATUS_SUCCESS) {
    std::printf("%-16s %8lld  %-16s  error: %s\n", preset.name, static_cast<long long>(tokens),
                f.name, gg_last_error());
    return;
  }
  uint32_t flags = 0;
  gg_check(workspace.data(), GG_PATH_AUTO, stream, &flags);
  const double bytes = static_cast<double>(
      input.bytes() + rowwise.bytes + columnwise.bytes +
      (group_amax ? static_cast<size_t>(groups) * sizeof(float) : 0));
  const double traffic = bytes + (amax_scaled ? static_cast<double>(input.bytes()) : 0.0);
  const double bandwidth = bytes / (ms * 1e-3);
  std::printf("%-16s %8lld  %-16s %9.3f %9.1f %8.3f %8.3f%s\n", preset.name,
              static_cast<long long>(tokens), f.name, ms, bandwidth * 1e-9,
              bandwidth / copy_bytes_per_s, traffic / (ms * 1e-3) / copy_bytes_per_s,
              flags != 0 ? "  (sizes flagged)" : "");
}

const char* const kDefaultPresets = "deepseek-v3,qwen3-30b-a3b";
const char* const kDefaultTokens = "16384,65536,131072";
const char* const kDefaultFormats = "fp8_e4m3_tensor,fp8_e4m3_1x128,mxfp8_e4m3,nvfp4_group";
constexpr int kDefaultIters = 50;

}  // namespace

std::string bench_quantize_usage() {
  std::string presets;
  for (const MoePreset& preset : moe_presets()) presets += std::string(" ") + preset.name;
  std::string formats;
  for (const QuantizeFormat& f : kFormats) formats += std::string(" ") + f.name;
  return std::string("usage: groupgemm bench-quantize [options]\n"
                     "\n"
                     "Times the GPU grouped quantizer (rowwise + columnwise in one call) on MoE\n"
                     "activations, against the device-to-device copy bandwidth. Needs a GPU.\n"
                     "\n"
                     "  --preset NAME[,NAME...]   (default ") +
         kDefaultPresets + ")\n" + "                            presets:" + presets + "\n" +
         "  --tokens N[,N...]         (default " + kDefaultTokens + ")\n" +
         "  --formats F[,F...]        (default " + kDefaultFormats + ")\n" +
         "                            formats:" + formats + "\n" +
         "  --input " + choices_of(kInputTypes) + "     (default bf16)\n" +
         "  --routing " + choices_of(kRoutingNames) + "  (default uniform)\n" +
         "  --iters N                 (default " + std::to_string(kDefaultIters) + ")\n" +
         "  --warm-ms N               time each figure after N ms of its work (default " +
         std::to_string(kDefaultWarmMs) + ")\n\n" + kExitCodesText;
}

int run_bench_quantize(const std::vector<std::string>& words) {
  const Options options(words, kOptions);
  std::vector<const MoePreset*> presets;
  for (const std::string& name : options.list("preset", kDefaultPresets)) {
    const MoePreset* preset = find_preset(name);
    if (preset == nullptr) throw UsageError("--preset: unknown preset '" + name + "'");
    presets.push_back(preset);
  }
  std::vector<int64_t> tokens;
  for (const std::string& item : options.list("tokens", kDefaultTokens)) {
    tokens.push_back(parse_integer("tokens", item, 1, int64_t{1} << 24));
  }
  std::vector<const QuantizeFormat*> formats;
  for (const std::string& name : options.list("formats", kDefaultFormats)) {
    formats.push_back(&find_format(name));
  }
  const gg_dtype input_type = options.choice("input", kInputTypes, GG_DTYPE_BF16);
  const Routing routing = options.choice("routing", kRoutingNames, Routing::kUniform);
  const int iters = static_cast<int>(options.integer("iters", kDefaultIters, 1, 100000));
  // Each figure, the copy rate's too, follows this long of the same work
  // (timing.h), at the clock the GPU sustains under it.
  const int warm_ms = static_cast<int>(options.integer("warm-ms", kDefaultWarmMs, 0, 60000));
  const Repeats repeats{std::max(1, iters / 10), iters, static_cast<double>(warm_ms)};

  std::string why_not;
  const std::vector<CudaDevice> devices = cuda_devices(&why_not);
  if (devices.empty()) {
    std::fprintf(stderr,
                 "bench-quantize times the GPU quantize kernels against the GPU's copy "
                 "bandwidth, and there is no GPU here (%s): nothing to time\n",
                 why_not.c_str());
    return kExitNoGpu;
  }
  CudaStream stream;
  const double copy_bytes_per_s = measure_copy_bytes_per_s(stream.get(), repeats);
  std::printf("device: %s; copy bandwidth %.1f GB/s (bytes read + written)\n",
              devices[0].name.c_str(), copy_bytes_per_s * 1e-9);
  std::printf(
      "grouped quantize, %s input, rowwise + columnwise (+ per-group amax for group scales), "
      "%s routing; each figure timed after %d ms of its work\n",
      name_of(kInputTypes, input_type), name_of(kRoutingNames, routing), warm_ms);
  std::printf("%-16s %8s  %-16s %9s %9s %8s %8s\n", "preset", "tokens", "format", "ms", "GB/s",
              "of copy", "traffic");
  for (const MoePreset* preset : presets) {
    for (const int64_t count : tokens) {
      for (const QuantizeFormat* f : formats) {
        try {
          run_case(*preset, count, *f, input_type, routing, copy_bytes_per_s, stream.get(),
                   repeats);
        } catch (const Failure& failure) {
          std::printf("%-16s %8lld  %-16s  error: %s\n", preset->name,
                      static_cast<long long>(count), f->name, failure.what());
        }
      }
    }
  }
  return kExitSuccess;
}

}  // namespace gg::cli
