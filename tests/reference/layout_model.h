// The layout rules of groupgemm.h as the tests state them, written
// independently of src/common/groups.h: group extents after clamping, block
// sizes, and the device-side index arrays the descriptors point at.
#pragma once

#include <stdint.h>

#include <vector>

#include "groupgemm/groupgemm.h"

namespace gg::test {

// A clamped group: rows [start, start + size).
struct ModelGroup {
  int64_t start, size;
};

// Group extents: negative sizes count 0, offsets are pulled into [0, M], and
// a group is cut where it would pass row M; without offsets each group
// starts where the previous one ended.
std::vector<ModelGroup> model_groups(const std::vector<int64_t>& sizes,
                                     const std::vector<int64_t>& offsets, int64_t m);

// Elements per scale block (1 for GG_BLOCK_NONE; 0 for GG_BLOCK_ROWWISE,
// whose block is the whole dimension, or along the tokens the whole group).
int64_t model_block_elements(gg_block_scaling scaling);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Token blocks of `block` elements restart at every group start: group g's
// first block comes after all blocks of the earlier groups.
int64_t model_first_block(const std::vector<ModelGroup>& groups, size_t g, int64_t block);
// Blocks along M tokens for any sizes: every full block plus at most one
// partial block per group.
int64_t model_block_capacity(int64_t m, int64_t block, int64_t groups);

// `values` as an int32 or int64 array.
std::vector<uint8_t> index_array(const std::vector<int64_t>& values, gg_index_type type);

}  // namespace gg::test
