// Benchmark results and their two printed forms: an aligned text table
// (missing figures as "-") and one JSON document (missing figures as null).
#pragma once

#include <stdint.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/machine_rates.h"

namespace gg::cli {

struct BenchRow {
  std::string preset;
  int64_t tokens = 0;
  std::string routing;
  std::string op;
  int32_t groups = 0;
  int64_t rows = 0;  // routed rows, tokens * top_k
  int64_t n = 0;     // model dims of the up-projection: Y[rows, n] = X[rows, k] W[g]^T
  int64_t k = 0;
  std::optional<double> ms, tflops, gb_per_s;
  std::optional<double> dense_ms, loop_ms;
  std::optional<double> x_dense;   // dense_ms / ms: 1 is the speed of one dense GEMM of equal FLOPs
  std::optional<double> x_loop;    // loop_ms / ms: the speed-up over the per-group loop
  std::optional<double> roofline;  // floor / ms
  std::string error;               // why ms is missing
  // A quantized format's GPU run (--format): our bf16 product of the same
  // case and cuBLASLt's dense fp8 of equal work, and each over ms.
  std::optional<double> bf16_ms, x_bf16;
  std::optional<double> fp8_dense_ms, x_fp8_dense;
  std::string fp8_dense_error;  // why fp8_dense_ms is missing
};

struct BenchReport {
  std::string mode;  // "gpu" or "cpu-reference"
  std::string device;
  std::string path = "reference";  // the path timed as ours
  std::string output = "bf16";     // every case's output type, and its beta
  double beta = 0.0;
  std::string weights = "stacked";  // or "per-expert": G separate matrices
  std::optional<MachineRates> rates;
  int warm_ms = 0;  // GPU: how long each figure's work ran before it was timed
  std::string format = "bf16";  // every case's operand format (--format)
  bool quantized = false;       // K-major quantized operands
  std::string fp8_dense;        // GPU, quantized: the cuBLASLt fp8 peer's scales (rows carry
                                // the bf16 and fp8 peers)
  std::vector<BenchRow> rows;
};

// What every row's n and k mean, for both outputs.
extern const char* const kShapeRule;

void print_table(const BenchReport& report, std::FILE* stream);
void print_json(const BenchReport& report, std::FILE* stream);

}  // namespace gg::cli
