// The two rates of the roofline floor, measured at startup on the GPU the
// benchmark runs on (docs/DESIGN.md, "Performance method"): the dense
// cuBLAS bf16 rate on an 8192³ product (TN, cuBLAS's fastest layout), and
// the copy bandwidth of a large device-to-device cudaMemcpyAsync, counting
// bytes read plus written.
#pragma once

#include <cuda_runtime_api.h>

#include "cli/cublas_baselines.h"
#include "cli/timing.h"

namespace gg::cli {

struct MachineRates {
  double dense_flops_per_s;
  double copy_bytes_per_s;
};

MachineRates measure_machine_rates(cudaStream_t stream, CublasBaselines& cublas, Repeats repeats);

// The copy bandwidth alone, for benchmarks of memory-bound kernels.
double measure_copy_bytes_per_s(cudaStream_t stream, Repeats repeats);

// Least time a problem can take: max(flops / dense rate, bytes / bandwidth).
double roofline_floor_ms(double flops, double bytes, const MachineRates& rates);

}  // namespace gg::cli
