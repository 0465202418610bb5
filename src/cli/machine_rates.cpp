// Machine rates: see machine_rates.h.
#include "cli/machine_rates.h"

#include <algorithm>

#include "cli/checks.h"
#include "cli/dense_fp8.h"
#include "cli/device_buffer.h"
#include "cli/device_fill.h"
#include "cli/elements.h"

namespace gg::cli {

namespace {

constexpr int64_t kDenseSize = 8192;
constexpr size_t kCopyBytes = size_t{1} << 30;

double dense_flops_per_s(cudaStream_t stream, CublasBaselines& cublas, Repeats repeats) {
  const Problem problem = model_problem(ModelOp::kFprop, kDenseSize, kDenseSize, kDenseSize, 1);
  const size_t matrix_bytes =
      static_cast<size_t>(kDenseSize * kDenseSize) * element_bytes(GG_DTYPE_BF16);
  DeviceBuffer lhs(matrix_bytes), rhs(matrix_bytes), out(matrix_bytes);
  fill_random(lhs, GG_DTYPE_BF16, 1, stream);
  fill_random(rhs, GG_DTYPE_BF16, 2, stream);
  ProblemData data;
  data.lhs = lhs.data();
  data.rhs = rhs.data();
  data.out = out.data();
  const double ms =
      median_gpu_ms(stream, repeats, [&](int) { cublas.dense(problem, data, kDenseSize); });
  return problem_flops(problem, kDenseSize) / (ms * 1e-3);
}

}  // namespace

double measure_copy_bytes_per_s(cudaStream_t stream, Repeats repeats) {
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  const size_t bytes = std::min(kCopyBytes, free_bytes / 4);
  DeviceBuffer source(bytes), destination(bytes);
  check_cuda(cudaMemsetAsync(source.data(), 0, bytes, stream), "cudaMemsetAsync");
  const double ms = median_gpu_ms(stream, repeats, [&](int) {
    check_cuda(
        cudaMemcpyAsync(destination.data(), source.data(), bytes, cudaMemcpyDeviceToDevice, stream),
        "cudaMemcpyAsync");
  });
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3);
}

MachineRates measure_machine_rates(cudaStream_t stream, CublasBaselines& cublas, Repeats repeats) {
  return {dense_flops_per_s(stream, cublas, repeats), measure_copy_bytes_per_s(stream, repeats),
          std::nullopt};
}

double measure_fp8_flops_per_s(cudaStream_t stream, cublasLtHandle_t handle, Repeats repeats) {
  const Problem problem = model_problem(ModelOp::kFprop, kDenseSize, kDenseSize, kDenseSize, 1);
  DenseFp8 dense(handle, stream, problem, kDenseSize, Fp8Scales::kTensor, 0);  // one copy
  const double ms = median_gpu_ms(stream, repeats, [&](int run) { dense.run(run); });
  return dense.flops() / (ms * 1e-3);
}

double roofline_floor_ms(double flops, double bytes, double flops_per_s,
                         const MachineRates& rates) {
  return 1e3 * std::max(flops / flops_per_s, bytes / rates.copy_bytes_per_s);
}

double roofline_floor_ms(double flops, double bytes, const MachineRates& rates) {
  return roofline_floor_ms(flops, bytes, rates.dense_flops_per_s, rates);
}

}  // namespace gg::cli
