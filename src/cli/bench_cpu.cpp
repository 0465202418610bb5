// CPU benchmark: see bench_cpu.h.
#include "cli/bench_cpu.h"

#include "cli/checks.h"
#include "cli/host_data.h"
#include "cli/placed_problem.h"

namespace gg::cli {

BenchRow run_on_reference(const BenchCase& bench_case, Repeats repeats) {
  const Problem problem = bench_problem(bench_case);
  const std::vector<int64_t> sizes = bench_sizes(bench_case);
  BenchRow row = bench_row(bench_case);
  const HostProblem host = make_host_problem(problem, sizes, 1);
  PlacedProblem placed(problem, host, sizes, GG_INDEX_INT32, GG_PATH_REFERENCE);
  const double ms =
      median_host_ms(repeats, [&](int) { check_gg(placed.launch(), "gg_grouped_gemm"); });
  set_figures(row, problem, sizes, ms);
  return row;
}

}  // namespace gg::cli
