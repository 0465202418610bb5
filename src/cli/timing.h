// Median run time of a piece of work.
//
// GPU work is timed between two CUDA events recorded on its stream, one
// pair per run, so host-side launch gaps between runs are not counted and
// a run that synchronizes inside (the cuBLAS loop's size copy) is still
// measured whole. Host work is timed with the steady clock. `run` gets the
// run's index, so callers can rotate among copies of their buffers.
//
// A GPU under load soon runs at its power limit, at a lower clock than it
// starts with: an H200 at 700 W ran cuBLAS bf16 8192^3 at about 1.49 GHz
// of 1.98, and 1.11x slower after 300 ms of it than after 5 calls.
// `warm_ms` keeps running the work for that long before the timed runs, so
// that every figure is taken in the state the GPU sustains; 0 warms up by
// `warmup` runs only.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace gg::cli {

// --warm-ms's default in `groupgemm bench` and `bench-quantize`.
constexpr int kDefaultWarmMs = 300;

struct Repeats {
  int warmup;
  int timed;
  double warm_ms = 0.0;  // GPU work only: at least this long of runs before the timed ones
};

double median_gpu_ms(cudaStream_t stream, Repeats repeats, const std::function<void(int)>& run);
double median_host_ms(Repeats repeats, const std::function<void(int)>& run);

}  // namespace gg::cli
