// The portable kernel's shared-memory and register index math
// (operand_layout.h, mma_layout.h) against the PTX definitions of the
// instructions that use it. The test copies a
// slice of a matrix chunk by chunk into a simulated stage, as cp.async does
// (only `valid` elements read, the rest of the 16 bytes zero-filled), then
// emulates ldmatrix .x4 (and .x4.trans) from its definition, and requires
// every fragment element to be the operand element the fragment contract
// names: lane t, register j holds outer 8 (j & 1) + t/4 and depths
// 8 (j >> 1) + 2 (t%4) + {0, 1} of the 16 x 16 block — or zero where that
// element is outside the operand. It also checks that no copy reads outside
// the operand's rows and ends, and that ldmatrix phases are free of bank
// conflicts. Last, the chain copy -> ldmatrix -> mma.sync -> accumulator
// position must compute the product of the two operands.
#include "kernels/portable/operand_layout.h"

#include <gtest/gtest.h>
#include <stdint.h>

#include <array>
#include <random>
#include <set>
#include <vector>

#include "kernels/portable/mma_layout.h"

namespace gg::portable {
namespace {

constexpr uint16_t kPoison = 0xdead;  // stage contents no copy wrote

// Distinct nonzero 16-bit code of operand element (outer, depth); `salt`
// tells two operands apart.
uint16_t code_of(int64_t outer, int64_t depth, int salt = 0) {
  return static_cast<uint16_t>(1 + (outer * 131 + depth * 7 + salt * 4099) % 65000);
}

// A matrix of codes with `rows` memory rows of `row_stride` elements; it holds
// exactly the elements [0, outer_end) x [0, depth_end), the rest of each row
// is padding that no copy may read.
struct Matrix {
  Major major;
  OperandExtent extent;
  std::vector<uint16_t> memory;

  Matrix(Major m, const OperandExtent& e, int salt = 0) : major(m), extent(e) {
    const int64_t rows = m == Major::kDepth ? e.outer_end : e.depth_end;
    memory.assign(static_cast<size_t>(rows * e.row_stride), kPoison);
    for (int64_t outer = 0; outer < e.outer_end; ++outer) {
      for (int64_t depth = 0; depth < e.depth_end; ++depth) {
        memory[offset(outer, depth)] = code_of(outer, depth, salt);
      }
    }
  }
  int64_t offset(int64_t outer, int64_t depth) const {
    return major == Major::kDepth ? outer * extent.row_stride + depth
                                  : depth * extent.row_stride + outer;
  }
  // Inverse of offset(): which element a memory index holds, if any.
  bool element_at(int64_t index, int64_t* outer, int64_t* depth) const {
    const int64_t row = index / extent.row_stride;
    const int64_t column = index % extent.row_stride;
    *outer = major == Major::kDepth ? row : column;
    *depth = major == Major::kDepth ? column : row;
    return *outer < extent.outer_end && *depth < extent.depth_end;
  }
};

// All copies of one slice; fails the test on any out-of-operand read.
template <class Layout>
std::vector<uint16_t> copy_slice(const Matrix& m, int64_t depth0) {
  std::vector<uint16_t> stage(Layout::kRows * Layout::kPitch, kPoison);
  std::set<int> written;
  for (int chunk = 0; chunk < Layout::kChunks; ++chunk) {
    const ChunkCopy c = Layout::chunk_copy(m.extent, depth0, chunk);
    EXPECT_GE(c.valid, 0);
    EXPECT_LE(c.valid, Layout::kChunk);
    EXPECT_EQ(c.stage_element % Layout::kChunk, 0) << "16-byte aligned destination";
    for (int i = 0; i < Layout::kChunk; ++i) {
      EXPECT_TRUE(written.insert(c.stage_element + i).second) << "stage element written twice";
      uint16_t value = 0;
      if (i < c.valid) {
        int64_t outer = 0;
        int64_t depth = 0;
        const int64_t index = c.source_offset + i;
        EXPECT_TRUE(index >= 0 && m.element_at(index, &outer, &depth))
            << "chunk " << chunk << " reads outside the operand at " << index;
        if (index < 0 || index >= static_cast<int64_t>(m.memory.size())) continue;
        value = m.memory[index];
      }
      stage[c.stage_element + i] = value;
    }
    if (c.valid > 0) {
      EXPECT_EQ(c.source_offset % Layout::kChunk, 0) << "16-byte aligned source";
    }
  }
  return stage;
}

// ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16, from the PTX ISA: lanes
// 8j .. 8j+7 address the 8 rows of matrix j; without .trans lane t receives
// row t/4, elements 2(t%4) and 2(t%4)+1 of each matrix; with .trans it
// receives element t/4 of rows 2(t%4) and 2(t%4)+1.
std::vector<std::array<uint32_t, 4>> emulate_ldmatrix(const std::vector<uint16_t>& stage,
                                                      const int (&row_of_lane)[32], bool trans) {
  std::vector<std::array<uint32_t, 4>> regs(32);
  for (int t = 0; t < 32; ++t) {
    for (int j = 0; j < 4; ++j) {
      uint32_t low;
      uint32_t high;
      if (!trans) {
        const int row = row_of_lane[8 * j + t / 4];
        low = stage[row + 2 * (t % 4)];
        high = stage[row + 2 * (t % 4) + 1];
      } else {
        low = stage[row_of_lane[8 * j + 2 * (t % 4)] + t / 4];
        high = stage[row_of_lane[8 * j + 2 * (t % 4) + 1] + t / 4];
      }
      regs[t][j] = low | high << 16;
    }
  }
  return regs;
}

// Checks every 16 x 16 block of the slice at depth0. `masked`: after
// mask_depth_before, so depths before depth_begin must read as zero too.
template <int kOuter, int kDepth, Major kMajor>
void check_fragments(const Matrix& m, int64_t depth0, bool masked) {
  using Layout = OperandLayout<kOuter, kDepth, kMajor, 2>;
  const std::vector<uint16_t> stage = copy_slice<Layout>(m, depth0);
  const OperandExtent& e = m.extent;
  for (int outer0 = 0; outer0 < kOuter; outer0 += 16) {
    for (int block_depth = 0; block_depth < kDepth; block_depth += 16) {
      int row_of_lane[32];
      for (int lane = 0; lane < 32; ++lane) {
        row_of_lane[lane] = Layout::fragment_row(outer0, block_depth, lane);
      }
      // One phase per matrix: its 8 rows in 8 distinct 16-byte bank quads.
      for (int j = 0; j < 4; ++j) {
        std::set<int> quads;
        for (int r = 0; r < 8; ++r) quads.insert(row_of_lane[8 * j + r] * 2 / 16 % 8);
        EXPECT_EQ(quads.size(), 8u) << "bank conflict in matrix " << j;
      }
      std::vector<std::array<uint32_t, 4>> regs =
          emulate_ldmatrix(stage, row_of_lane, !Layout::kDepthMajor);
      for (int t = 0; t < 32; ++t) {
        uint32_t r[4] = {regs[t][0], regs[t][1], regs[t][2], regs[t][3]};
        if (masked) mask_depth_before(r, depth0 + block_depth, e.depth_begin, t);
        for (int j = 0; j < 4; ++j) {
          for (int h = 0; h < 2; ++h) {
            const int64_t outer = e.outer_begin + outer0 + 8 * (j & 1) + t / 4;
            const int64_t depth = depth0 + block_depth + 8 * (j >> 1) + 2 * (t % 4) + h;
            // Depth-contiguous chunks bring in the elements before
            // depth_begin; the mask removes them.
            const bool before_begin = depth < e.depth_begin;
            const bool kept = (masked || !Layout::kDepthMajor) ? !before_begin : depth >= 0;
            const bool inside = outer < e.outer_end && depth < e.depth_end && kept;
            const uint16_t want = inside ? code_of(outer, depth) : 0;
            const uint16_t got = static_cast<uint16_t>(r[j] >> (16 * h));
            ASSERT_EQ(got, want) << "lane " << t << " reg " << j << " half " << h << " outer "
                                 << outer << " depth " << depth << " (block " << outer0 << ", "
                                 << block_depth << ", slice " << depth0 << ")";
          }
        }
      }
    }
  }
}

template <int kOuter, Major kMajor>
void check_extents() {
  constexpr int kDepth = 32;
  constexpr int kChunk = 8;
  std::mt19937_64 rng(kOuter * 2 + static_cast<int>(kMajor));
  for (int trial = 0; trial < 60; ++trial) {
    // A tile at outer_begin (a multiple of the tile), cut anywhere by
    // outer_end; a depth range starting anywhere; slices from the chunk below
    // depth_begin, as the kernel takes them.
    const int64_t outer_begin = kOuter * static_cast<int64_t>(rng() % 3);
    const int64_t outer_end = outer_begin + 1 + static_cast<int64_t>(rng() % (kOuter + 20));
    const int64_t depth_begin = static_cast<int64_t>(rng() % 70);
    const int64_t depth_end = depth_begin + static_cast<int64_t>(rng() % 90);
    const int64_t contiguous = kMajor == Major::kDepth ? depth_end : outer_end;
    const int64_t row_stride = (contiguous + 7) / 8 * 8 + 8 * static_cast<int64_t>(rng() % 2);
    const Matrix m(kMajor,
                   OperandExtent{row_stride, outer_begin, outer_end, depth_begin, depth_end});
    const int64_t first = depth_begin - depth_begin % kChunk;
    SCOPED_TRACE(testing::Message()
                 << "outer [" << outer_begin << ", " << outer_end << ") depth [" << depth_begin
                 << ", " << depth_end << ") stride " << row_stride);
    for (int64_t depth0 = first; depth0 < depth_end; depth0 += kDepth) {
      check_fragments<kOuter, kDepth, kMajor>(m, depth0, false);
      check_fragments<kOuter, kDepth, kMajor>(m, depth0, true);
    }
  }
}

TEST(OperandLayout, DepthMajor128) { check_extents<128, Major::kDepth>(); }
TEST(OperandLayout, OuterMajor128) { check_extents<128, Major::kOuter>(); }
TEST(OperandLayout, DepthMajor64) { check_extents<64, Major::kDepth>(); }
TEST(OperandLayout, OuterMajor64) { check_extents<64, Major::kOuter>(); }

using Registers = std::vector<std::array<uint32_t, 4>>;  // per lane

// mma.sync.aligned.m16n8k16.row.col with integer products, from the PTX ISA
// fragment tables (g = lane / 4, c = lane % 4; half h of a register holds
// the element with the higher column or depth when h = 1):
//   A register r: row g + 8 (r % 2), column 2c + h + 8 (r / 2);
//   B register r: depth 2c + h + 8 r, column g;
//   D element e:  row g + 8 (e / 2), column 2c + e % 2.
std::vector<std::array<int64_t, 4>> emulate_mma(const Registers& a, const Registers& b) {
  int64_t A[16][16];
  int64_t B[16][8];
  auto half_of = [](uint32_t reg, int h) {
    return static_cast<int64_t>((reg >> (16 * h)) & 0xffff);
  };
  for (int lane = 0; lane < 32; ++lane) {
    const int g = lane / 4;
    const int c = lane % 4;
    for (int h = 0; h < 2; ++h) {
      for (int r = 0; r < 4; ++r)
        A[g + 8 * (r % 2)][2 * c + h + 8 * (r / 2)] = half_of(a[lane][r], h);
      for (int r = 0; r < 2; ++r) B[2 * c + h + 8 * r][g] = half_of(b[lane][r], h);
    }
  }
  std::vector<std::array<int64_t, 4>> d(32);
  for (int lane = 0; lane < 32; ++lane) {
    for (int e = 0; e < 4; ++e) {
      const int row = lane / 4 + 8 * (e / 2);
      const int col = 2 * (lane % 4) + e % 2;
      int64_t sum = 0;
      for (int k = 0; k < 16; ++k) sum += A[row][k] * B[k][col];
      d[lane][e] = sum;
    }
  }
  return d;
}

// The kernel's compute step for 32 x 32 operands, every 16 x 16 lhs block
// against every 16 x 16 rhs block at both 16-deep steps of a 32-deep slice.
template <Major kLhsMajor, Major kRhsMajor>
void check_mma_chain() {
  constexpr int kSize = 32;
  using LhsLayout = OperandLayout<kSize, kSize, kLhsMajor, 2>;
  using RhsLayout = OperandLayout<kSize, kSize, kRhsMajor, 2>;
  const OperandExtent full{kSize + 8, 0, kSize, 0, kSize};
  const Matrix lhs(kLhsMajor, full, 1);
  const Matrix rhs(kRhsMajor, full, 2);
  const std::vector<uint16_t> lhs_stage = copy_slice<LhsLayout>(lhs, 0);
  const std::vector<uint16_t> rhs_stage = copy_slice<RhsLayout>(rhs, 0);
  auto load = [](const std::vector<uint16_t>& stage, auto layout, int outer0, int depth0) {
    int rows[32];
    for (int lane = 0; lane < 32; ++lane) {
      rows[lane] = decltype(layout)::fragment_row(outer0, depth0, lane);
    }
    return emulate_ldmatrix(stage, rows, !decltype(layout)::kDepthMajor);
  };
  for (int i = 0; i < kSize; i += 16) {
    for (int j = 0; j < kSize; j += 16) {
      for (int k = 0; k < kSize; k += 16) {
        const Registers a = load(lhs_stage, LhsLayout{}, i, k);
        const Registers b = load(rhs_stage, RhsLayout{}, j, k);
        for (int column_half = 0; column_half < 2; ++column_half) {
          Registers b_operand(32);
          for (int lane = 0; lane < 32; ++lane) {
            b_operand[lane] = {b[lane][rhs_register(column_half, 0)],
                               b[lane][rhs_register(column_half, 1)], 0, 0};
          }
          const std::vector<std::array<int64_t, 4>> d = emulate_mma(a, b_operand);
          for (int lane = 0; lane < 32; ++lane) {
            for (int e = 0; e < 4; ++e) {
              const int row = i + accumulator_row(lane, e);
              const int col = j + 8 * column_half + accumulator_col(lane, e);
              int64_t want = 0;
              for (int depth = k; depth < k + 16; ++depth) {
                want += int64_t{code_of(row, depth, 1)} * code_of(col, depth, 2);
              }
              ASSERT_EQ(d[lane][e], want) << "lane " << lane << " accumulator " << e
                                          << " of block (" << i << ", " << j << ", " << k << ")";
            }
          }
        }
      }
    }
  }
}

TEST(MmaChain, LhsDepthMajorRhsDepthMajor) { check_mma_chain<Major::kDepth, Major::kDepth>(); }
TEST(MmaChain, LhsDepthMajorRhsOuterMajor) { check_mma_chain<Major::kDepth, Major::kOuter>(); }
TEST(MmaChain, LhsOuterMajorRhsDepthMajor) { check_mma_chain<Major::kOuter, Major::kDepth>(); }
TEST(MmaChain, LhsOuterMajorRhsOuterMajor) { check_mma_chain<Major::kOuter, Major::kOuter>(); }

TEST(OperandLayout, KeepMaskHalves) {
  EXPECT_EQ(keep_mask(10, 10), 0xffffffffu);
  EXPECT_EQ(keep_mask(9, 10), 0xffff0000u);
  EXPECT_EQ(keep_mask(8, 10), 0u);
  EXPECT_EQ(keep_mask(-4, 0), 0u);
}

}  // namespace
}  // namespace gg::portable
