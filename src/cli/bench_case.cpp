// Benchmark cases: see bench_case.h.
#include "cli/bench_case.h"

#include "cli/operand_scales.h"

namespace gg::cli {

namespace {

constexpr uint64_t kRoutingSeed = 2024;

}  // namespace

Problem bench_problem(const BenchCase& bench_case) {
  const MoePreset& preset = *bench_case.preset;
  Problem problem = model_problem(bench_case.op, routed_rows(preset, bench_case.tokens),
                                  up_projection_n(preset), up_projection_k(preset), preset.experts);
  problem.out_dtype = bench_case.output.dtype;
  problem.beta = bench_case.output.beta;
  problem.per_expert = bench_case.per_expert;
  problem.input_dtype = bench_case.format.dtype;
  problem.input_scaling = bench_case.format.scaling;
  if (is_quantized(bench_case.format)) {
    problem.rhs_layout = GG_LAYOUT_T;
    if (problem.op == GG_OP_RAGGED_K) problem.lhs_layout = GG_LAYOUT_T;
  }
  return problem;
}

bool is_quantized(const InputFormat& format) {
  return format.dtype != GG_DTYPE_BF16 && format.dtype != GG_DTYPE_FP16;
}

std::vector<int64_t> bench_sizes(const BenchCase& bench_case) {
  const MoePreset& preset = *bench_case.preset;
  return route(bench_case.routing, routed_rows(preset, bench_case.tokens), preset.experts,
               kRoutingSeed);
}

BenchRow bench_row(const BenchCase& bench_case) {
  const MoePreset& preset = *bench_case.preset;
  BenchRow row;
  row.preset = preset.name;
  row.tokens = bench_case.tokens;
  row.routing = name_of(kRoutingNames, bench_case.routing);
  row.op = name_of(kModelOpNames, bench_case.op);
  row.groups = preset.experts;
  row.rows = routed_rows(preset, bench_case.tokens);
  row.n = up_projection_n(preset);
  row.k = up_projection_k(preset);
  return row;
}

double counted_bytes(const Problem& problem, const std::vector<int64_t>& sizes) {
  return problem_bytes(problem, sizes) + live_block_scale_bytes(problem, sizes);
}

void set_figures(BenchRow& row, const Problem& problem, const std::vector<int64_t>& sizes,
                 double ms) {
  row.ms = ms;
  row.tflops = problem_flops(problem, row.rows) / (ms * 1e-3) * 1e-12;
  row.gb_per_s = counted_bytes(problem, sizes) / (ms * 1e-3) * 1e-9;
}

}  // namespace gg::cli
