// GPU benchmark: see bench_gpu.h.
#include "cli/bench_gpu.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cli/checks.h"
#include "cli/device_buffer.h"
#include "cli/device_fill.h"
#include "cli/elements.h"
#include "cli/operand_scales.h"

namespace gg::cli {

// A case's device data: the sizes, the fp32 scales (ones), and `copies`
// copies of the operands and their block scales (run i uses copy i mod
// copies).
struct GpuBench::Buffers {
  struct Copy {
    DeviceBuffer lhs, rhs, out;
    DeviceBuffer lhs_block_scales, rhs_block_scales;
    DeviceBuffer expert_pointers;  // per-expert problems: into rhs or out
  };
  DeviceBuffer sizes, scales;
  std::vector<Copy> copies;
  std::vector<ProblemData> data;  // copies[i]'s pointers

  const ProblemData& for_run(int run) const { return data[static_cast<size_t>(run) % data.size()]; }
};

namespace {

size_t operand_bytes(const MatrixSet& set, gg_dtype dtype) {
  return static_cast<size_t>(stored_bytes(set.elements(), dtype));
}

// A buffer of `shape`'s block scales, every one of them 1.
DeviceBuffer unit_block_scales(const BlockScaleShape& shape, gg_block_scaling blocks,
                               cudaStream_t stream) {
  if (shape.bytes() == 0) return DeviceBuffer();
  DeviceBuffer buffer(static_cast<size_t>(shape.bytes()));
  fill_pattern(buffer, unit_block_scale(blocks), stream);
  return buffer;
}

// Whether `format`'s product `op` multiplies on fp8 tensor cores (the sm90
// fp8 wgmma kernels) rather than decoding into bf16: fp8 with fp32 tensor,
// group, rowwise or 1x128 / 128x128 block scales, and mxfp8's ragged-M
// products (forward and input gradient; its weight gradient is decoded).
bool fp8_product(const InputFormat& format, ModelOp op) {
  const gg_block_scaling blocks = format.scaling.token_blocks;
  const bool ragged_m = op != ModelOp::kWgrad && op != ModelOp::kRaggedK;
  return is_fp8(format.dtype) &&
         (blocks == GG_BLOCK_NONE || blocks == GG_BLOCK_1X128 || blocks == GG_BLOCK_ROWWISE ||
          (blocks == GG_BLOCK_MX32 && ragged_m));
}

// Whether any product of `format` runs on fp8 tensor cores on `path` and
// `device` (the sm90 kernels, on Hopper), so that the run measures their rate.
bool on_fp8_cores(const InputFormat& format, gg_path path, const CudaDevice& device) {
  return path != GG_PATH_PORTABLE && device.cc_major == 9 &&
         fp8_product(format, ModelOp::kRaggedM);
}

}  // namespace

Fp8Scales GpuBench::fp8_peer_scales(const InputFormat& format) {
  return format.scaling.token_blocks == GG_BLOCK_1X128 ? Fp8Scales::kBlocks : Fp8Scales::kTensor;
}

GpuBench::GpuBench(const CudaDevice& device, Repeats repeats, gg_path path,
                   const InputFormat& format)
    : cublas_(stream_.get()),
      repeats_(repeats),
      path_(path),
      l2_bytes_(device.l2_bytes),
      fp8_cores_(on_fp8_cores(format, path, device)) {
  rates_ = measure_machine_rates(stream_.get(), cublas_, repeats_);
  if (fp8_cores_) {
    rates_.fp8_flops_per_s = measure_fp8_flops_per_s(stream_.get(), lt_.get(), repeats_);
  }
}

GpuBench::Buffers GpuBench::make_buffers(const Problem& problem,
                                         const std::vector<int64_t>& sizes) {
  const cudaStream_t stream = stream_.get();
  const size_t lhs_bytes = operand_bytes(lhs_matrices(problem), problem.input_dtype);
  const size_t rhs_bytes = operand_bytes(rhs_matrices(problem), problem.input_dtype);
  const size_t out_bytes = operand_bytes(out_matrices(problem), problem.out_dtype);
  const BlockScaleShape lhs_shape =
      block_scale_shape(lhs_role(problem), lhs_blocks(problem), problem.groups);
  const BlockScaleShape rhs_shape =
      block_scale_shape(rhs_role(problem), rhs_blocks(problem), problem.groups);
  const double set_bytes = static_cast<double>(lhs_bytes + rhs_bytes + out_bytes) +
                           lhs_shape.bytes() + rhs_shape.bytes();
  const int copies = static_cast<int>(
      std::max(1.0, std::ceil(2.0 * static_cast<double>(l2_bytes_) / std::max(set_bytes, 1.0))));

  Buffers buffers;
  const std::vector<uint8_t> index = index_bytes(sizes, GG_INDEX_INT32);
  buffers.sizes = DeviceBuffer(index.size());
  buffers.sizes.upload(index.data(), index.size());
  const std::vector<float> ones(static_cast<size_t>(problem.groups), 1.0f);
  buffers.scales = DeviceBuffer(ones.size() * sizeof(float));
  buffers.scales.upload(ones.data(), buffers.scales.bytes());
  for (int c = 0; c < copies; ++c) {
    buffers.copies.push_back({DeviceBuffer(lhs_bytes), DeviceBuffer(rhs_bytes),
                              DeviceBuffer(out_bytes),
                              unit_block_scales(lhs_shape, lhs_blocks(problem), stream),
                              unit_block_scales(rhs_shape, rhs_blocks(problem), stream),
                              DeviceBuffer()});
    Buffers::Copy& copy = buffers.copies.back();
    fill_random(copy.lhs, problem.input_dtype, 2 * c + 1, stream);
    fill_random(copy.rhs, problem.input_dtype, 2 * c + 2, stream);
    check_cuda(cudaMemsetAsync(copy.out.data(), 0, out_bytes, stream), "cudaMemsetAsync");
    ProblemData data;
    data.lhs = copy.lhs.data();
    data.rhs = copy.rhs.data();
    data.out = copy.out.data();
    data.sizes = buffers.sizes.data();
    data.index_type = GG_INDEX_INT32;
    data.lhs_block_scales = copy.lhs_block_scales.data();
    data.rhs_block_scales = copy.rhs_block_scales.data();
    data.lhs_scale = static_cast<float*>(buffers.scales.data());
    data.rhs_scale = static_cast<float*>(buffers.scales.data());
    if (problem.per_expert) {
      const std::vector<uint64_t> addresses = expert_addresses(problem, data);
      copy.expert_pointers = DeviceBuffer(addresses.size() * sizeof addresses[0]);
      copy.expert_pointers.upload(addresses.data(), copy.expert_pointers.bytes());
      data.expert_pointers = copy.expert_pointers.data();
    }
    buffers.data.push_back(data);
  }
  return buffers;
}

std::optional<double> GpuBench::time_ours(const Problem& problem, const Buffers& buffers,
                                          BenchRow& row) {
  const cudaStream_t stream = stream_.get();
  std::vector<gg_gemm_desc> descs;
  for (const ProblemData& data : buffers.data)
    descs.push_back(make_desc(problem, data, path_));
  size_t workspace_bytes = 0;
  gg_status status = gg_grouped_gemm_workspace_size(&descs[0], &workspace_bytes);
  if (status != GG_STATUS_SUCCESS) {
    row.error = gg_failure_text(status, "gg_grouped_gemm_workspace_size");
    return std::nullopt;
  }
  DeviceBuffer workspace(workspace_bytes);
  check_cuda(cudaMemsetAsync(workspace.data(), 0, workspace_bytes, stream), "cudaMemsetAsync");
  status = gg_grouped_gemm(&descs[0], workspace.data(), workspace_bytes, stream);
  if (status != GG_STATUS_SUCCESS) {
    row.error = gg_failure_text(status, "gg_grouped_gemm");
    return std::nullopt;
  }
  const double ms = median_gpu_ms(stream, repeats_, [&](int run) {
    const gg_gemm_desc& desc = descs[static_cast<size_t>(run) % descs.size()];
    check_gg(gg_grouped_gemm(&desc, workspace.data(), workspace_bytes, stream), "gg_grouped_gemm");
  });
  uint32_t flags = 0;
  check_gg(gg_check(workspace.data(), path_, stream, &flags), "gg_check");
  if (flags != 0) {
    row.error = "device flags " + std::to_string(flags) + " raised by valid sizes";
    return std::nullopt;
  }
  return ms;
}

BenchRow GpuBench::run(const BenchCase& bench_case) {
  return is_quantized(bench_case.format) ? run_quantized(bench_case) : run_16bit(bench_case);
}

BenchRow GpuBench::run_16bit(const BenchCase& bench_case) {
  const Problem problem = bench_problem(bench_case);
  const std::vector<int64_t> sizes = bench_sizes(bench_case);
  BenchRow row = bench_row(bench_case);
  const Buffers buffers = make_buffers(problem, sizes);
  const cudaStream_t stream = stream_.get();

  // A refusal of ours leaves its figures empty; the baselines still run.
  if (const std::optional<double> ms = time_ours(problem, buffers, row)) {
    set_figures(row, problem, sizes, *ms);
    row.roofline =
        roofline_floor_ms(problem_flops(problem, row.rows), counted_bytes(problem, sizes), rates_) /
        *ms;
  }
  row.dense_ms = median_gpu_ms(
      stream, repeats_, [&](int run) { cublas_.dense(problem, buffers.for_run(run), row.rows); });
  row.loop_ms = median_gpu_ms(stream, repeats_,
                              [&](int run) { cublas_.group_loop(problem, buffers.for_run(run)); });
  if (row.ms) {
    row.x_dense = *row.dense_ms / *row.ms;
    row.x_loop = *row.loop_ms / *row.ms;
  }
  return row;
}

BenchRow GpuBench::run_quantized(const BenchCase& bench_case) {
  // Our bf16 product first, with its cuBLAS peers; its buffers are freed
  // before the quantized ones are made.
  BenchCase bf16_case = bench_case;
  bf16_case.format = {GG_DTYPE_BF16, {}};
  const BenchRow bf16 = run_16bit(bf16_case);

  const Problem problem = bench_problem(bench_case);
  const std::vector<int64_t> sizes = bench_sizes(bench_case);
  BenchRow row = bench_row(bench_case);
  row.dense_ms = bf16.dense_ms;
  row.loop_ms = bf16.loop_ms;
  row.bf16_ms = bf16.ms;
  {
    const Buffers buffers = make_buffers(problem, sizes);
    if (const std::optional<double> ms = time_ours(problem, buffers, row)) {
      set_figures(row, problem, sizes, *ms);
      const double rate = fp8_cores_ && fp8_product(bench_case.format, bench_case.op)
                              ? *rates_.fp8_flops_per_s
                              : rates_.dense_flops_per_s;
      row.roofline = roofline_floor_ms(problem_flops(problem, row.rows),
                                       counted_bytes(problem, sizes), rate, rates_) /
                     *ms;
    }
  }
  try {
    DenseFp8 dense(lt_.get(), stream_.get(), problem, row.rows,
                   fp8_peer_scales(bench_case.format), l2_bytes_);
    row.fp8_dense_ms =
        median_gpu_ms(stream_.get(), repeats_, [&](int run) { dense.run(run); });
  } catch (const Failure& failure) {
    row.fp8_dense_error = std::string("cuBLASLt fp8: ") + failure.what();
  }
  if (row.ms) {
    if (row.dense_ms) row.x_dense = *row.dense_ms / *row.ms;
    if (row.loop_ms) row.x_loop = *row.loop_ms / *row.ms;
    if (row.bf16_ms) row.x_bf16 = *row.bf16_ms / *row.ms;
    if (row.fp8_dense_ms) row.x_fp8_dense = *row.fp8_dense_ms / *row.ms;
  }
  return row;
}

}  // namespace gg::cli
