// See layout_model.h.
#include "layout_model.h"

#include <string.h>

#include <algorithm>

namespace gg::test {

std::vector<ModelGroup> model_groups(const std::vector<int64_t>& sizes,
                                     const std::vector<int64_t>& offsets, int64_t m) {
  std::vector<ModelGroup> groups;
  int64_t end = 0;
  for (size_t g = 0; g < sizes.size(); ++g) {
    const int64_t start = offsets.empty() ? end : std::min(std::max<int64_t>(offsets[g], 0), m);
    const int64_t size = std::min(std::max<int64_t>(sizes[g], 0), m - start);
    groups.push_back(ModelGroup{start, size});
    end = start + size;
  }
  return groups;
}

int64_t model_block_elements(gg_block_scaling scaling) {
  switch (scaling) {
    case GG_BLOCK_MX32:
      return 32;
    case GG_BLOCK_NV16:
      return 16;
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
      return 128;
    case GG_BLOCK_ROWWISE:
      return 0;
    case GG_BLOCK_NONE:
      break;
  }
  return 1;
}

int64_t model_first_block(const std::vector<ModelGroup>& groups, size_t g, int64_t block) {
  int64_t blocks = 0;
  for (size_t h = 0; h < g; ++h) blocks += ceil_div(groups[h].size, block);
  return blocks;
}

int64_t model_block_capacity(int64_t m, int64_t block, int64_t groups) {
  return m / block + std::min(groups, m);
}

std::vector<uint8_t> index_array(const std::vector<int64_t>& values, gg_index_type type) {
  const size_t width = type == GG_INDEX_INT32 ? 4 : 8;
  std::vector<uint8_t> bytes(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == GG_INDEX_INT32) {
      const int32_t v = static_cast<int32_t>(values[i]);
      memcpy(bytes.data() + i * width, &v, width);
    } else {
      memcpy(bytes.data() + i * width, &values[i], width);
    }
  }
  return bytes;
}

}  // namespace gg::test
