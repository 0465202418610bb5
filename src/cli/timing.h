// Median run time of a piece of work.
//
// GPU work is timed between two CUDA events recorded on its stream, one
// pair per run, so host-side launch gaps between runs are not counted and
// a run that synchronizes inside (the cuBLAS loop's size copy) is still
// measured whole. Host work is timed with the steady clock. `run` gets the
// run's index, so callers can rotate among copies of their buffers.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>

namespace gg::cli {

struct Repeats {
  int warmup;
  int timed;
};

double median_gpu_ms(cudaStream_t stream, Repeats repeats, const std::function<void(int)>& run);
double median_host_ms(Repeats repeats, const std::function<void(int)>& run);

}  // namespace gg::cli
