// One grouped-quantize case on a GPU path, checked against the CPU reference.
//
// The input, sizes and offsets are drawn on the host; every output buffer
// (data, block scales, fp32 scales, amax) starts as the same poison bytes on
// the host and on the device, one of two bytes taken in turn. The reference
// runs through the C API on the host copies, the GPU path on guarded device
// buffers; afterwards every byte of every output must be equal — written
// bytes bit for bit, and the bytes the reference leaves alone still poison —
// and every guard band intact. A mismatch reports the buffer, the first
// differing byte offset (with its element coordinates), got and want, and
// how many bytes differ.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdint.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/format_spec.h"
#include "gpu/guarded_buffer.h"
#include "groupgemm/groupgemm.h"

namespace gg::test {

// Every output format the quantizer writes: fp8 e4m3/e5m2 with a tensor or
// group scale, 1x128, mxfp8 e4m3/e5m2, nvfp4 with a tensor or group scale
// (128x128 is for stacked weights only: stacked_formats()).
std::vector<QuantizeFormatSpec> ragged_formats();
std::vector<QuantizeFormatSpec> stacked_formats();

// What the input holds: uniform values whose magnitude varies by row and
// column over many binades, or the same with zeros, fp32 subnormals or tiny
// values, NaN, +-inf and -0 mixed in.
enum class QuantizeValues { kSpread, kSpecials };

struct QuantizeSpec {
  bool stacked = false;
  int64_t rows = 0;  // M (ragged) or N (stacked)
  int64_t k = 0;
  std::vector<int64_t> sizes;    // ragged: raw sizes, G = sizes.size()
  std::vector<int64_t> offsets;  // ragged: empty for the prefix-sum layout
  int32_t groups = 0;            // stacked: G
  gg_index_type index_type = GG_INDEX_INT32;
  gg_dtype input = GG_DTYPE_BF16;
  QuantizeValues values = QuantizeValues::kSpread;
  bool rowwise = true;
  bool columnwise = true;
  QuantizeFormatSpec rowwise_format;
  QuantizeFormatSpec columnwise_format;
  bool amax = true;
  uint64_t seed = 1;
};

class QuantizeGpuCase {
 public:
  QuantizeGpuCase(const QuantizeSpec& spec, gg_path path);
  ~QuantizeGpuCase();
  QuantizeGpuCase(const QuantizeGpuCase&) = delete;
  QuantizeGpuCase& operator=(const QuantizeGpuCase&) = delete;

  std::string label() const;

  // Poisons every output on the host and the device, and the workspace
  // past its flags, with the other of the two poison bytes (0xA5, 0x5A)
  // than the last call: run a case twice to check every byte under both.
  void poison_outputs();
  // Enqueues the GPU call; false (with the status and message) on failure.
  ::testing::AssertionResult launch(cudaStream_t stream);
  // Runs the reference on the host copies (after poison_outputs), waits for
  // the stream, and compares everything; flags through gg_check.
  void expect_matches_reference(cudaStream_t stream);
  // New raw sizes (same G) and fresh input data, uploaded; outputs poisoned.
  void resize(const std::vector<int64_t>& sizes, uint64_t seed);

 private:
  struct Buffer;
  Buffer& add(const std::string& name, size_t bytes);
  void fill_input(uint64_t seed);
  void build_descriptors();

  QuantizeSpec spec_;
  gg_path path_;
  int32_t groups_;
  std::vector<std::unique_ptr<Buffer>> buffers_;
  Buffer* input_ = nullptr;
  Buffer* sizes_ = nullptr;
  Buffer* offsets_ = nullptr;
  std::vector<Buffer*> outputs_;  // poisoned and compared
  std::unique_ptr<GuardedBuffer> workspace_;
  size_t workspace_bytes_ = 0;
  gg_quantize_desc host_desc_{};
  gg_quantize_desc device_desc_{};
  uint8_t poison_ = 0;  // the byte the outputs hold before a run
};

// Sizes of G groups: the tile and block edges {0, 1, 31, 33, 127, 128, 129}
// and a few others, cycled.
std::vector<int64_t> edge_sizes(int32_t groups);

}  // namespace gg::test
