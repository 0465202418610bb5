// Random data for device buffers of any size, without a kernel: 1 MiB of
// host-made random elements is copied once, then the filled prefix is
// copied onto the rest, doubling each time (log2 copies). Timings do not
// depend on the data repeating; they only need finite, varied values.
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include <vector>

#include "cli/device_buffer.h"
#include "groupgemm/groupgemm.h"

namespace gg::cli {

// e2m1: random bytes, each two valid codes.
void fill_random(DeviceBuffer& buffer, gg_dtype dtype, uint64_t seed, cudaStream_t stream);
// `pattern` repeated over the buffer (whose size is a multiple of it).
void fill_pattern(DeviceBuffer& buffer, const std::vector<uint8_t>& pattern, cudaStream_t stream);

}  // namespace gg::cli
