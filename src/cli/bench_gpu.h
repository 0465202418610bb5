// The GPU benchmark of one case: our path (GG_PATH_AUTO unless asked), the dense cuBLAS
// GEMM of equal FLOPs and the cuBLAS per-group loop, each the median of
// many runs after warm-up, on the same buffers, plus the roofline
// efficiency against the machine rates measured once at startup.
//
// A case of a quantized format (--format) is timed on quantized operands
// (random codes, block and fp32 scales of 1) in the K-major layouts the
// quantizer writes, beside our bf16 product of the same case (whose
// cuBLAS peers fill the dense and loop columns) and cuBLASLt's dense fp8
// of equal work (dense_fp8.h); its roofline counts the quantized bytes,
// scales included, and the FLOPs at the rate of the tensor cores it
// multiplies on (fp8 for the fp8 wgmma kernels, bf16 for the decoding ones).
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
#include "cli/dense_fp8.h"
#include "cli/devices.h"
#include "cli/machine_rates.h"
#include "cli/timing.h"
#include "groupgemm/groupgemm.h"

namespace gg::cli {

// Runs on the current device (device 0 unless the caller chose another).
class GpuBench {
 public:
  // `format`: the operands of every case; a quantized one measures the
  // fp8 rate too where it multiplies on fp8 tensor cores.
  GpuBench(const CudaDevice& device, Repeats repeats, gg_path path, const InputFormat& format);

  const MachineRates& rates() const { return rates_; }
  // The scales of the cuBLASLt fp8 peer of `format`'s cases.
  static Fp8Scales fp8_peer_scales(const InputFormat& format);
  BenchRow run(const BenchCase& bench_case);

 private:
  struct Buffers;
  // Buffers of `problem` in as many copies as the L2 asks.
  Buffers make_buffers(const Problem& problem, const std::vector<int64_t>& sizes);
  // Median ms of our path over the copies; sets row.error and returns
  // nothing when the library refuses the problem or flags its sizes.
  std::optional<double> time_ours(const Problem& problem, const Buffers& buffers, BenchRow& row);
  BenchRow run_16bit(const BenchCase& bench_case);
  BenchRow run_quantized(const BenchCase& bench_case);

  CudaStream stream_;
  CublasBaselines cublas_;
  LtHandle lt_;
  Repeats repeats_;
  gg_path path_;
  int64_t l2_bytes_;
  bool fp8_cores_;  // a product of the run's format multiplies on fp8 tensor cores
  MachineRates rates_{};
};

}  // namespace gg::cli
