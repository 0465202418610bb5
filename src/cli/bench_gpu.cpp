// GPU benchmark: see bench_gpu.h.
#include "cli/bench_gpu.h"

#include <algorithm>
#include <string>
#include <vector>

#include "cli/checks.h"
#include "cli/device_buffer.h"
#include "cli/device_fill.h"
#include "cli/elements.h"

namespace gg::cli {

// A case's device data: the sizes, and `copies` copies of the operands
// (run i uses copy i mod copies).
struct GpuBench::Buffers {
  struct Copy {
    DeviceBuffer lhs, rhs, out;
    DeviceBuffer expert_pointers;  // per-expert problems: into rhs or out
  };
  DeviceBuffer sizes;
  std::vector<Copy> copies;
  std::vector<ProblemData> data;  // copies[i]'s pointers

  const ProblemData& for_run(int run) const { return data[static_cast<size_t>(run) % data.size()]; }
};

namespace {

size_t operand_bytes(const MatrixSet& set, gg_dtype dtype) {
  return static_cast<size_t>(set.elements()) * element_bytes(dtype);
}

}  // namespace

GpuBench::GpuBench(const CudaDevice& device, Repeats repeats, gg_path path)
    : cublas_(stream_.get()), repeats_(repeats), path_(path), l2_bytes_(device.l2_bytes) {
  rates_ = measure_machine_rates(stream_.get(), cublas_, repeats_);
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
  const Problem problem = bench_problem(bench_case);
  const std::vector<int64_t> sizes = bench_sizes(bench_case);
  BenchRow row = bench_row(bench_case);
  const cudaStream_t stream = stream_.get();

  const size_t lhs_bytes = operand_bytes(lhs_matrices(problem), problem.input_dtype);
  const size_t rhs_bytes = operand_bytes(rhs_matrices(problem), problem.input_dtype);
  const size_t out_bytes = operand_bytes(out_matrices(problem), problem.out_dtype);
  const size_t set_bytes = lhs_bytes + rhs_bytes + out_bytes;
  const size_t copies =
      std::max<size_t>(1, (2 * static_cast<size_t>(l2_bytes_) + set_bytes - 1) / set_bytes);

  Buffers buffers;
  const std::vector<uint8_t> index = index_bytes(sizes, GG_INDEX_INT32);
  buffers.sizes = DeviceBuffer(index.size());
  buffers.sizes.upload(index.data(), index.size());
  for (size_t c = 0; c < copies; ++c) {
    buffers.copies.push_back({DeviceBuffer(lhs_bytes), DeviceBuffer(rhs_bytes),
                              DeviceBuffer(out_bytes), DeviceBuffer()});
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
    if (problem.per_expert) {
      const std::vector<uint64_t> addresses = expert_addresses(problem, data);
      copy.expert_pointers = DeviceBuffer(addresses.size() * sizeof addresses[0]);
      copy.expert_pointers.upload(addresses.data(), copy.expert_pointers.bytes());
      data.expert_pointers = copy.expert_pointers.data();
    }
    buffers.data.push_back(data);
  }

  // A refusal of ours leaves its figures empty; the baselines still run.
  if (const std::optional<double> ms = time_ours(problem, buffers, row)) {
    set_figures(row, problem, sizes, *ms);
    row.roofline =
        roofline_floor_ms(problem_flops(problem, row.rows), problem_bytes(problem, sizes), rates_) /
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

}  // namespace gg::cli
