// Device fill: see device_fill.h.
#include "cli/device_fill.h"

#include <algorithm>
#include <vector>

#include "cli/checks.h"
#include "cli/elements.h"
#include "cli/random.h"

namespace gg::cli {

namespace {

constexpr size_t kPatternBytes = size_t{1} << 20;

}  // namespace

void fill_random(DeviceBuffer& buffer, gg_dtype dtype, uint64_t seed, cudaStream_t stream) {
  const size_t width = element_bytes(dtype);
  std::vector<uint8_t> pattern(std::min(kPatternBytes, buffer.bytes()) / width * width);
  Random random(seed);
  for (size_t at = 0; at < pattern.size(); at += width) {
    if (dtype == GG_DTYPE_E2M1) {
      pattern[at] = static_cast<uint8_t>(random.next());
    } else {
      encode_element(dtype, random.symmetric(), &pattern[at]);
    }
  }
  fill_pattern(buffer, pattern, stream);
}

void fill_pattern(DeviceBuffer& buffer, const std::vector<uint8_t>& pattern, cudaStream_t stream) {
  auto* bytes = static_cast<uint8_t*>(buffer.data());
  const size_t first = std::min(pattern.size(), buffer.bytes());
  check_cuda(cudaMemcpyAsync(bytes, pattern.data(), first, cudaMemcpyHostToDevice, stream),
             "cudaMemcpyAsync");
  // The pattern holds whole elements, so every copied span does too.
  for (size_t filled = first; filled > 0 && filled < buffer.bytes(); filled *= 2) {
    const size_t span = std::min(filled, buffer.bytes() - filled);
    check_cuda(cudaMemcpyAsync(bytes + filled, bytes, span, cudaMemcpyDeviceToDevice, stream),
               "cudaMemcpyAsync");
  }
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
}

}  // namespace gg::cli
