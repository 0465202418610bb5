// The rates of the roofline floor, measured at startup on the GPU the
// benchmark runs on (docs/DESIGN.md, "Performance method"): the dense
// cuBLAS bf16 rate on an 8192³ product (TN, cuBLAS's fastest layout), and
// the copy bandwidth of a large device-to-device cudaMemcpyAsync, counting
// bytes read plus written; for fp8 products, cuBLASLt's dense fp8 rate.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <optional>

#include "cli/cublas_baselines.h"
#include "cli/timing.h"

namespace gg::cli {

struct MachineRates {
  double dense_flops_per_s;
  double copy_bytes_per_s;
  // cuBLASLt's dense e4m3 rate on the same product (tensor scales, bf16
  // out): the compute floor of products on fp8 tensor cores. Measured
  // where a benchmark has such products.
  std::optional<double> fp8_flops_per_s;
};

MachineRates measure_machine_rates(cudaStream_t stream, CublasBaselines& cublas, Repeats repeats);

// The fp8 rate above (Hopper; throws Failure where cuBLASLt has no fp8 product).
double measure_fp8_flops_per_s(cudaStream_t stream, cublasLtHandle_t handle, Repeats repeats);

// The copy bandwidth alone, for benchmarks of memory-bound kernels.
double measure_copy_bytes_per_s(cudaStream_t stream, Repeats repeats);

// Least time a problem can take: max(flops / FLOP rate, bytes / bandwidth),
// at the bf16 dense rate, or `flops_per_s` where the product runs on other
// tensor cores.
double roofline_floor_ms(double flops, double bytes, const MachineRates& rates);
double roofline_floor_ms(double flops, double bytes, double flops_per_s,
                         const MachineRates& rates);

}  // namespace gg::cli
