// One grouped-quantize test case: random input from a setup, the reference
// run on it, and a check of every output element, block scale, fp32 scale
// and amax against quantize_model.h, block by block as the test enumerates
// them from the layout rules. Outputs start as 0xFF bytes: whatever the
// model does not expect written must still hold them afterwards.
#pragma once

#include <stdint.h>

#include <vector>

#include "groupgemm/groupgemm.h"
#include "host_tensor.h"
#include "layout_model.h"

namespace gg::test {

struct QuantizeFormat {
  gg_dtype dtype = GG_DTYPE_E4M3;
  gg_block_scaling block = GG_BLOCK_NONE;
  gg_scale_extent extent = GG_SCALE_TENSOR;
};

struct QuantizeSetup {
  bool stacked = false;  // input [G, N, K]; else ragged [M, K]
  int64_t rows = 0;      // M (ragged) or N (stacked)
  int64_t k = 0;
  std::vector<int64_t> sizes;    // ragged: raw group sizes (G = sizes.size())
  std::vector<int64_t> offsets;  // ragged: empty for the prefix-sum layout
  int32_t groups = 0;            // stacked: G
  gg_dtype input = GG_DTYPE_BF16;
  CodeRange range = CodeRange::kWindow;
  QuantizeFormat format;
  bool rowwise = true;
  bool columnwise = true;
  bool amax = true;
  uint32_t seed = 1;
};

class QuantizeCase {
 public:
  explicit QuantizeCase(const QuantizeSetup& setup);
  QuantizeCase(const QuantizeCase&) = delete;
  QuantizeCase& operator=(const QuantizeCase&) = delete;

  uint32_t run();
  void check() const;

  gg_quantize_desc desc{};
  HostTensor input, rowwise, columnwise;
  std::vector<float> amax;

 private:
  // A block in output coordinates and its scale entry.
  struct Block {
    int32_t matrix;
    int64_t row_begin, row_end, col_begin, col_end;
    int64_t scale_row, scale_col;  // -1 without block scales
  };
  std::vector<Block> blocks(bool columnwise_output, int32_t g) const;
  float input_value(bool columnwise_output, int32_t matrix, int64_t r, int64_t c) const;
  float group_amax(int32_t g) const;
  void check_output(bool columnwise_output, const HostTensor& out) const;

  QuantizeSetup setup_;
  int32_t groups_;
  std::vector<ModelGroup> model_;
  std::vector<uint8_t> sizes_bytes_, offsets_bytes_;
};

}  // namespace gg::test
