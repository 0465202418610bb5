// One benchmark case: a preset's up-projection at a token count, under a
// routing, as one of fprop, dgrad, wgrad. Shared by the GPU and the CPU
// benchmark so both measure the same problems and report the same rows.
#pragma once

#include <stdint.h>

#include <vector>

#include "cli/presets.h"
#include "cli/problem.h"
#include "cli/report.h"
#include "cli/routing.h"

namespace gg::cli {

// The output of every case of a run: its element type, and beta (1 with an
// fp32 output: a weight gradient accumulated into a main-grad buffer).
struct Output {
  gg_dtype dtype = GG_DTYPE_BF16;
  double beta = 0.0;
};

struct BenchCase {
  const MoePreset* preset;
  int64_t tokens;
  Routing routing;
  ModelOp op;
  Output output;
  bool per_expert = false;  // the weights (or weight gradients) as G separate matrices
  InputFormat format = {GG_DTYPE_BF16, {}};
};

// Whether `format` is quantized (elements of under 16 bits, with scales).
bool is_quantized(const InputFormat& format);

// The case's operand format, output and weights, alpha 1, no bias; rows =
// tokens * top_k. Quantized operands are K-major, the layout the quantizer's
// copies have and fp8 wgmma reads: the weights [G, N, K] (dgrad: the
// columnwise copy, [G, k, n]), ragged-K's operands their columnwise copies
// [P, M] and [Q, M].
Problem bench_problem(const BenchCase& bench_case);
// Fixed seed: every run and every op of a case sees the same sizes.
std::vector<int64_t> bench_sizes(const BenchCase& bench_case);
// A row with the case's identity filled in and no figures yet.
BenchRow bench_row(const BenchCase& bench_case);
// The bytes a case's roofline counts: problem_bytes, and the block scales
// the sizes make live.
double counted_bytes(const Problem& problem, const std::vector<int64_t>& sizes);
// Fills ms, TFLOP/s and GB/s (of counted_bytes) from the measured time.
void set_figures(BenchRow& row, const Problem& problem, const std::vector<int64_t>& sizes,
                 double ms);

}  // namespace gg::cli
