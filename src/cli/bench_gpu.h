// The GPU benchmark of one case: our path (GG_PATH_AUTO unless asked), the dense cuBLAS
// GEMM of equal FLOPs and the cuBLAS per-group loop, each the median of
// many runs after warm-up, on the same buffers, plus the roofline
// efficiency against the machine rates measured once at startup.
//
// Buffers come in as many copies as it takes to exceed twice the L2 cache,
// and run i uses copy i mod copies, so small problems are timed from memory
// rather than from the cache (large ones need one copy).
#pragma once

#include <cuda_runtime_api.h>

#include <optional>

#include "cli/bench_case.h"
#include "cli/cublas_baselines.h"
#include "cli/cuda_stream.h"
#include "cli/devices.h"
#include "cli/machine_rates.h"
#include "cli/timing.h"
#include "groupgemm/groupgemm.h"

namespace gg::cli {

// Runs on the current device (device 0 unless the caller chose another).
class GpuBench {
 public:
  GpuBench(const CudaDevice& device, Repeats repeats, gg_path path);

  const MachineRates& rates() const { return rates_; }
  BenchRow run(const BenchCase& bench_case);

 private:
  struct Buffers;
  // Median ms of our path over the copies; sets row.error and returns
  // nothing when the library refuses the problem or flags its sizes.
  std::optional<double> time_ours(const Problem& problem, const Buffers& buffers, BenchRow& row);

  CudaStream stream_;
  CublasBaselines cublas_;
  Repeats repeats_;
  gg_path path_;
  int64_t l2_bytes_;
  MachineRates rates_{};
};

}  // namespace gg::cli
