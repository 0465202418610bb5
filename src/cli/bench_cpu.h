// The benchmark without a GPU: times the CPU reference path on a case, so
// `bench` still shows the table's shape and the reference's own speed. The
// GPU-only columns (cuBLAS baselines, roofline) stay empty.
#pragma once

#include "cli/bench_case.h"
#include "cli/timing.h"

namespace gg::cli {

BenchRow run_on_reference(const BenchCase& bench_case, Repeats repeats);

}  // namespace gg::cli
