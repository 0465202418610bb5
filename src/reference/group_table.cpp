// See group_table.h.
#include "reference/group_table.h"

namespace gg::ref {

GroupTable read_groups(const gg_group_sizes& sizes, int32_t num_groups, int64_t rows,
                       uint32_t* flags) {
  GroupTable table{true, rows, {}};
  table.groups.reserve(static_cast<size_t>(num_groups));
  const bool has_offsets = sizes.offsets != nullptr;
  int64_t previous_end = 0;
  for (int32_t g = 0; g < num_groups; ++g) {
    const int64_t raw_offset = has_offsets ? load_index(sizes.offsets, sizes.type, g) : 0;
    const GroupExtent extent = clamp_group(load_index(sizes.sizes, sizes.type, g), has_offsets,
                                           raw_offset, previous_end, rows, flags);
    table.groups.push_back(extent);
    previous_end = extent.start + extent.size;
  }
  return table;
}

GroupTable stacked_groups(int32_t num_groups, int64_t rows) {
  return GroupTable{
      false, rows, std::vector<GroupExtent>(static_cast<size_t>(num_groups), GroupExtent{0, rows})};
}

int64_t first_block(const GroupTable& table, int32_t g, int64_t block) {
  int64_t blocks = 0;
  for (int32_t h = 0; h < g; ++h)
    blocks += blocks_of(table.groups[static_cast<size_t>(h)].size, block);
  return blocks;
}

Region group_region(int64_t rows, int64_t cols, TokenDim tokens, const GroupExtent& extent) {
  const int64_t end = extent.start + extent.size;
  switch (tokens) {
    case TokenDim::kRows:
      return Region{extent.start, end, 0, cols};
    case TokenDim::kCols:
      return Region{0, rows, extent.start, end};
    case TokenDim::kNone:
      break;
  }
  return Region{0, rows, 0, cols};
}

}  // namespace gg::ref
