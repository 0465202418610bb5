// The portable kernels' decode of quantized operands (operand_decode.h) and
// their scale addressing (quant_operand.h, BlockScaleIndex), on the CPU,
// against the reference.
//
// Decode: every element code times every scale code of each block-scaled
// format (256 e4m3 or e5m2 x 256 e8m0; 16 e2m1 x 256 e8m0 and x 256 ue4m3;
// fp8 without block scales) gives the bf16 whose value is the reference's
// element x block scale, exactly wherever that product lies in bf16's normal
// range, infinite above it, within one bf16 subnormal step below it, and
// NaN for a NaN code.
//
// Addressing: for descriptors of both ops and every operand layout, each
// element of each group reads the block-scale entry (MX, NV) or the rowwise
// scale at the byte address the reference's block_scales_of and
// for_each_block give it, with ragged group starts (empty groups, sizes that
// are not block multiples, a sum below the capacity) — and its element index
// is the reference's.
#include "kernels/portable/operand_decode.h"

#include <gtest/gtest.h>
#include <math.h>
#include <stdint.h>

#include <vector>

#include "formats/codecs.h"
#include "kernels/portable/quant_operand.h"
#include "kernels/sm90/step_scales.h"
#include "kernels/tile_scheduler.h"
#include "reference/block_scales.h"
#include "reference/group_table.h"
#include "reference/matrix_view.h"

namespace gg::portable {
namespace {

// The reference's value of one block-scale code.
double reference_scale(gg_block_scaling scaling, uint8_t code) {
  uint8_t bytes[1] = {code};
  return ref::block_scale_value(ref::BlockScales{scaling, bytes, 1, 1, 0, 0, 1}, 0);
}

// Checks decode_to_bf16 for one element code and scale code; returns
// whether the product was exact.
bool check_decode(gg_dtype dtype, gg_block_scaling scaling, uint8_t code, uint8_t scale_code) {
  alignas(4) uint8_t element_byte[4] = {code, 0, 0, 0};
  const double element = fmt::decode(dtype, element_byte, 0);
  // A rowwise scale multiplies the accumulator, not the element.
  const double product =
      element * reference_scale(scaling == GG_BLOCK_ROWWISE ? GG_BLOCK_NONE : scaling, scale_code);
  const float got = fmt::bf16_to_float(decode_to_bf16(dtype, code, scaling, scale_code));
  SCOPED_TRACE(testing::Message() << "dtype " << dtype << " scaling " << scaling << " code "
                                  << int{code} << " scale " << int{scale_code});
  if (isnan(product)) {
    EXPECT_TRUE(isnan(got));
    return false;
  }
  const double bf16_max = fmt::dtype_max(GG_DTYPE_BF16);
  if (fabs(product) > bf16_max) {
    EXPECT_TRUE(isinf(got) && signbit(got) == signbit(product)) << got;
    return false;
  }
  if (product == 0.0 || fabs(product) >= ldexp(1.0, -126)) {
    EXPECT_EQ(got, product);
    EXPECT_EQ(signbit(got), signbit(product));
    return true;
  }
  EXPECT_LE(fabs(got - product), ldexp(1.0, -133)) << got << " vs " << product;
  return false;
}

// check_decode over every element code of `dtype` x every scale code;
// returns how many products were exact.
int check_every_code(gg_dtype dtype, gg_block_scaling scaling) {
  const int codes = dtype == GG_DTYPE_E2M1 ? 16 : 256;
  int exact = 0;
  for (int code = 0; code < codes; ++code) {
    for (int scale = 0; scale < 256; ++scale) {
      exact += check_decode(dtype, scaling, static_cast<uint8_t>(code),
                            static_cast<uint8_t>(scale));
    }
  }
  return exact;
}

TEST(OperandDecode, Fp8TimesE8m0IsExactInBf16Range) {
  for (gg_dtype dtype : {GG_DTYPE_E4M3, GG_DTYPE_E5M2}) {
    // Most products are exact: the rest are NaN codes or scales far from 1.
    EXPECT_GT(check_every_code(dtype, GG_BLOCK_MX32), 256 * 200) << dtype;
  }
}

TEST(OperandDecode, E2m1TimesEveryScaleCode) {
  check_every_code(GG_DTYPE_E2M1, GG_BLOCK_MX32);
  // ue4m3 scales (at most 448, at least 2^-9) keep every product in range
  // but the NaN codes 0x7f and 0xff.
  EXPECT_EQ(check_every_code(GG_DTYPE_E2M1, GG_BLOCK_NV16), 16 * 254);
}

TEST(OperandDecode, Fp8WithoutBlockScalesDecodesItself) {
  for (gg_dtype dtype : {GG_DTYPE_E4M3, GG_DTYPE_E5M2}) {
    for (gg_block_scaling scaling : {GG_BLOCK_NONE, GG_BLOCK_ROWWISE}) {
      for (int code = 0; code < 256; ++code) {
        check_decode(dtype, scaling, static_cast<uint8_t>(code), 0);
      }
    }
  }
}

TEST(OperandDecode, Fp32ScaleOfEachExtent) {
  float scales[3] = {0.5f, -3.0f, 1e-30f};
  QuantOperand q;
  EXPECT_EQ(fp32_scale(q, 2), 1.0f);
  q.scale = scales;
  q.extent = GG_SCALE_TENSOR;
  EXPECT_EQ(fp32_scale(q, 2), 0.5f);
  q.extent = GG_SCALE_GROUP;
  for (int g = 0; g < 3; ++g) EXPECT_EQ(fp32_scale(q, g), scales[g]);
}

// ---- scale addressing ---------------------------------------------------

struct Format {
  gg_dtype dtype;
  gg_block_scaling scaling;
};

constexpr Format kFormats[] = {{GG_DTYPE_E4M3, GG_BLOCK_MX32},
                               {GG_DTYPE_E2M1, GG_BLOCK_MX32},
                               {GG_DTYPE_E2M1, GG_BLOCK_NV16},
                               {GG_DTYPE_E5M2, GG_BLOCK_ROWWISE}};

// A quantized tensor view with real (never read) data and scale buffers.
struct QuantTensor {
  std::vector<uint8_t> data;
  std::vector<uint8_t> scales;
  gg_tensor view{};

  QuantTensor(Format f, int64_t groups, int64_t rows, int64_t cols, int blocked_dim, bool ragged,
              int32_t num_groups) {
    int64_t shape[2] = {0, 0};
    EXPECT_EQ(gg_block_scale_shape(f.scaling, rows, cols, blocked_dim, ragged ? 1 : 0, num_groups,
                                   shape),
              GG_STATUS_SUCCESS);
    const int64_t bytes = ref::block_scale_bytes(f.scaling);
    data.resize(static_cast<size_t>(groups * rows * cols));
    scales.resize(static_cast<size_t>(groups * shape[0] * shape[1] * bytes));
    view.data = data.data();
    view.dtype = f.dtype;
    view.rank = groups > 1 ? 3 : 2;
    const int64_t dims[3] = {groups, rows, cols};
    for (int i = 0; i < view.rank; ++i) view.shape[i] = dims[3 - view.rank + i];
    view.strides[view.rank - 1] = 1;
    view.strides[view.rank - 2] = cols;
    if (view.rank == 3) view.strides[0] = rows * cols;
    view.block_scaling = f.scaling;
    view.block_scales = scales.data();
  }
};

// A depth-major chunk takes one entry for depths_left_in_block depths, then
// the next entry: what the kernel's whole-chunk decode relies on.
TEST(OperandDecode, DepthsLeftInBlockEndWhereTheEntryChanges) {
  for (gg_block_scaling scaling : {GG_BLOCK_MX32, GG_BLOCK_NV16}) {
    for (bool token_blocks : {false, true}) {
      for (int64_t group_start : {0, 3, 8, 17, 40}) {
        const BlockScaleIndex index{decoded_block_shift(scaling), 100, token_blocks,
                                    group_start, 5};
        const int64_t from = token_blocks ? group_start : 0;
        for (int64_t depth = from; depth < from + 200; ++depth) {
          SCOPED_TRACE(testing::Message() << "scaling " << scaling << " token_blocks "
                                          << token_blocks << " start " << group_start
                                          << " depth " << depth);
          const int64_t left = index.depths_left_in_block(depth);
          ASSERT_GE(left, 1);
          ASSERT_LE(left, decoded_block_size(scaling));
          const int64_t entry = index.entry(true, 3, depth);
          EXPECT_EQ(index.entry(true, 3, depth + left - 1), entry);
          EXPECT_EQ(index.entry(true, 3, depth + left), entry + 1);
        }
      }
    }
  }
}

TEST(OperandDecode, BlockShiftIsTheLog2OfTheBlock) {
  for (gg_block_scaling scaling : {GG_BLOCK_MX32, GG_BLOCK_NV16}) {
    EXPECT_EQ(1 << decoded_block_shift(scaling), decoded_block_size(scaling));
  }
  EXPECT_EQ(decoded_block_shift(GG_BLOCK_ROWWISE), 0);
  EXPECT_EQ(decoded_block_shift(GG_BLOCK_NONE), 0);
}

// The kernel's view of one operand: stored coordinates of (outer, depth).
struct KernelOperand {
  QuantOperand q;
  bool depth_major;    // depth along the stored columns
  int64_t row_stride;  // elements
  int64_t group_stride;
};

// The address of the scale that multiplies operand element (outer, depth)
// of group g, as the kernel computes it: a block-scale entry (DecodedTile)
// or the rowwise scale of the output row or column (output_of, whose lhs
// group is 0 for ragged-M, whose rows are the output's own, and g else).
const uint8_t* kernel_scale(const KernelOperand& k, int64_t g, int64_t rowwise_group,
                            const GroupRecord& group, int64_t outer, int64_t depth) {
  if (k.q.scaling == GG_BLOCK_ROWWISE) {
    return group_scales(k.q, rowwise_group) + outer * k.q.scale_row_length * 4;
  }
  const BlockScaleIndex index{decoded_block_shift(k.q.scaling), k.q.scale_row_length,
                              k.q.token_blocks, group.start, group.tile_begin};
  return group_scales(k.q, g) + index.entry(k.depth_major, outer, depth);
}

// Every element of every group of one operand: the kernel's scale address
// and element index against the reference's.
void check_operand(const gg_tensor& t, const KernelOperand& k, bool ragged_m, bool is_lhs,
                   ref::TokenDim tokens, const ref::GroupTable& table,
                   const std::vector<GroupRecord>& records) {
  const int64_t bytes = ref::block_scale_bytes(t.block_scaling);
  for (int32_t g = 0; g < static_cast<int32_t>(records.size()); ++g) {
    const ref::MatrixView m = ref::matrix_of(t, g);
    const ref::Region region =
        ref::group_region(m.rows, m.cols, tokens, table.groups[static_cast<size_t>(g)]);
    const ref::BlockScales scales =
        ref::block_scales_of(t, g, region, k.depth_major, tokens, table);
    const int64_t rowwise_group = ragged_m && is_lhs ? 0 : g;
    int64_t checked = 0;
    const GroupRecord& record = records[static_cast<size_t>(g)];
    ref::for_each_block(region, scales, [&](const ref::Region& block, int64_t index) {
      const uint8_t* expected = static_cast<const uint8_t*>(scales.base) + index * bytes;
      for (int64_t r = block.row_begin; r < block.row_end; ++r) {
        for (int64_t c = block.col_begin; c < block.col_end; ++c) {
          const int64_t outer = k.depth_major ? r : c;
          const int64_t depth = k.depth_major ? c : r;
          ASSERT_EQ(kernel_scale(k, g, rowwise_group, record, outer, depth), expected)
              << "group " << g << " row " << r << " col " << c;
          const int64_t element = g * k.group_stride + (k.depth_major ? outer : depth) *
                                                           k.row_stride +
                                  (k.depth_major ? depth : outer);
          ASSERT_EQ(element, m.index(r, c)) << "group " << g << " row " << r << " col " << c;
          ++checked;
        }
      }
    });
    EXPECT_EQ(checked, (region.row_end - region.row_begin) * (region.col_end - region.col_begin));
  }
}

// Group records as the metadata kernel writes them for ragged-K: each
// group's first block of `block` tokens (0: no token blocks, tile_begin 0).
std::vector<GroupRecord> records_of(const ref::GroupTable& table, int64_t block) {
  std::vector<GroupRecord> records;
  int64_t blocks = 0;
  for (const GroupExtent& e : table.groups) {
    const int64_t count = block > 0 ? ceil_div(e.size, block) : 0;
    records.push_back(GroupRecord{e.start, e.size, blocks, blocks + count});
    blocks += count;
  }
  return records;
}

constexpr int64_t kCapacity = 200;                   // M (ragged-M) or tokens (ragged-K)
const std::vector<int32_t> kSizes = {0, 1, 31, 33, 0, 64, 17};  // sum 146 < capacity

ref::GroupTable table_of(const std::vector<int32_t>& sizes) {
  uint32_t flags = 0;
  const gg_group_sizes s{sizes.data(), nullptr, GG_INDEX_INT32};
  return ref::read_groups(s, static_cast<int32_t>(sizes.size()), kCapacity, &flags);
}

// A product `op` of `lhs` and `rhs` over `groups` groups.
gg_gemm_desc product_desc(gg_op op, const QuantTensor& lhs, const QuantTensor& rhs,
                          gg_layout lhs_layout, gg_layout rhs_layout, int32_t groups) {
  gg_gemm_desc d{};
  d.op = op;
  d.num_groups = groups;
  d.lhs = lhs.view;
  d.rhs = rhs.view;
  d.lhs_layout = lhs_layout;
  d.rhs_layout = rhs_layout;
  return d;
}

// A ragged-M product: lhs [M, K] (layout N).
gg_gemm_desc ragged_m_desc(const QuantTensor& lhs, const QuantTensor& rhs, gg_layout rhs_layout,
                           int32_t groups) {
  return product_desc(GG_OP_RAGGED_M, lhs, rhs, GG_LAYOUT_N, rhs_layout, groups);
}

TEST(ScaleAddressing, RaggedMActivationsAndWeightsOfEveryLayout) {
  const int32_t groups = static_cast<int32_t>(kSizes.size());
  const int64_t k = 96, n = 48;
  const ref::GroupTable table = table_of(kSizes);
  const std::vector<GroupRecord> records = records_of(table, 0);
  for (const Format& f : kFormats) {
    for (gg_layout rhs_layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      SCOPED_TRACE(testing::Message() << "dtype " << f.dtype << " scaling " << f.scaling
                                      << " rhs layout " << rhs_layout);
      const bool rhs_t = rhs_layout == GG_LAYOUT_T;
      QuantTensor lhs(f, 1, kCapacity, k, 1, false, groups);
      QuantTensor rhs(f, groups, rhs_t ? n : k, rhs_t ? k : n, rhs_t ? 1 : 0, false, groups);
      const gg_gemm_desc d = ragged_m_desc(lhs, rhs, rhs_layout, groups);
      const KernelOperand kl{quant_operand_of(d.lhs, true, d), true, k, 0};
      const KernelOperand kr{quant_operand_of(d.rhs, rhs_t, d), rhs_t, rhs_t ? k : n,
                             rhs.view.strides[0]};
      check_operand(d.lhs, kl, true, true, ref::TokenDim::kRows, table, records);
      check_operand(d.rhs, kr, true, false, ref::TokenDim::kNone, table, records);
    }
  }
}

// Walks every element of every group of a ragged-M product's K-major
// operands (lhs [M, K] in format `lhs_f`, weights [G, N, K] in `rhs_f`),
// asserting that `kernel(q, is_lhs, group, row, depth)`, the address of
// the scale the kernel reads for it, is the entry the reference multiplies
// it by (entries of `entry_bytes`).
template <typename KernelScale>
void expect_ragged_m_step_scales(Format lhs_f, Format rhs_f, int64_t k, int64_t n,
                                 int entry_bytes, KernelScale kernel) {
  const int32_t groups = static_cast<int32_t>(kSizes.size());
  const ref::GroupTable table = table_of(kSizes);
  QuantTensor lhs(lhs_f, 1, kCapacity, k, 1, false, groups);
  QuantTensor rhs(rhs_f, groups, n, k, 1, false, groups);
  const gg_gemm_desc d = ragged_m_desc(lhs, rhs, GG_LAYOUT_T, groups);
  const QuantOperand ql = quant_operand_of(d.lhs, true, d);
  const QuantOperand qr = quant_operand_of(d.rhs, true, d);
  for (int32_t g = 0; g < groups; ++g) {
    for (const bool is_lhs : {true, false}) {
      const gg_tensor& t = is_lhs ? d.lhs : d.rhs;
      const ref::TokenDim tokens = is_lhs ? ref::TokenDim::kRows : ref::TokenDim::kNone;
      const ref::MatrixView m = ref::matrix_of(t, g);
      const ref::Region region =
          ref::group_region(m.rows, m.cols, tokens, table.groups[static_cast<size_t>(g)]);
      const ref::BlockScales scales = ref::block_scales_of(t, g, region, true, tokens, table);
      int64_t checked = 0;
      ref::for_each_block(region, scales, [&](const ref::Region& block, int64_t index) {
        const uint8_t* expected = static_cast<const uint8_t*>(scales.base) + index * entry_bytes;
        for (int64_t r = block.row_begin; r < block.row_end; ++r) {
          for (int64_t c = block.col_begin; c < block.col_end; ++c) {
            ASSERT_EQ(kernel(is_lhs ? ql : qr, is_lhs, g, r, c), expected)
                << (is_lhs ? "lhs" : "rhs") << " group " << g << " row " << r << " col " << c;
            ++checked;
          }
        }
      });
      EXPECT_EQ(checked, (region.row_end - region.row_begin) * (region.col_end - region.col_begin));
    }
  }
}

// The sm90 block-scaled fp8 kernel's k-step scales (kernels/sm90/
// step_scales.h): 1x128 activations and 128x128 weights with K and N not
// multiples of 128; every element of every group finds, at step depth/128,
// the scale the reference multiplies it by.
TEST(ScaleAddressing, Sm90BlockScaledStepsOfRaggedM) {
  expect_ragged_m_step_scales(
      {GG_DTYPE_E4M3, GG_BLOCK_1X128}, {GG_DTYPE_E4M3, GG_BLOCK_128X128}, 300, 200, 4,
      [](const QuantOperand& q, bool is_lhs, int32_t g, int64_t r, int64_t c) {
        const int step = static_cast<int>(c / 128);
        return is_lhs ? static_cast<const uint8_t*>(q.block_scales) +
                            4 * sm90::lhs_step_scale_entry(q, r, step)
                      : group_scales(q, g) + 4 * sm90::rhs_step_scale_entry(q, r, step);
      });
}

// The sm90 fp8 kernel's MX block scales (step_scales.h): mxfp8 activations
// and K-major weights with K (336) not a multiple of the 128-deep k-step;
// every element of every group finds, at block j = (depth % 128) / 32 of
// step depth / 128, the scale the reference multiplies it by, and the
// blocks past K's last (whose products the kernel computes from TMA's
// zeros) have none.
TEST(ScaleAddressing, Sm90MxBlocksOfRaggedMSteps) {
  const Format mx{GG_DTYPE_E4M3, GG_BLOCK_MX32};
  expect_ragged_m_step_scales(
      mx, mx, 336, 200, 1,
      [](const QuantOperand& q, bool is_lhs, int32_t g, int64_t r, int64_t c) {
        const int64_t entry = sm90::mx_step_scale_entry(q, r, static_cast<int>(c / 128),
                                                        static_cast<int>(c % 128 / 32));
        EXPECT_GE(entry, 0) << "row " << r << " col " << c;
        const uint8_t* base =
            is_lhs ? static_cast<const uint8_t*>(q.block_scales) : group_scales(q, g);
        return base + entry;
      });
  // K = 336: 11 blocks; step 2 holds blocks 8-10 and one past K.
  QuantTensor lhs(mx, 1, kCapacity, 336, 1, false, 1);
  QuantTensor rhs(mx, 1, 200, 336, 1, false, 1);
  const gg_gemm_desc d = ragged_m_desc(lhs, rhs, GG_LAYOUT_T, 1);
  const QuantOperand q = quant_operand_of(d.lhs, true, d);
  EXPECT_EQ(sm90::mx_step_scale_entry(q, 0, 2, 2), 10);
  EXPECT_EQ(sm90::mx_step_scale_entry(q, 0, 2, 3), -1);
}

// The sm90 block-scaled fp8 weight gradient's k-step scales (step_scales.h):
// 1x128 blocks along the tokens of columnwise copies [P, M] and [Q, M]. A
// group's k-steps start at its first token, so every element of every group
// finds, at step (token - start) / 128 from the group's first block column
// (the prefix of the groups' token blocks, which the kernel's group table
// counts), the scale the reference multiplies it by. Groups of 0, 1, 128 +
// 2, 300 (three blocks, the last partial) and 129 tokens.
TEST(ScaleAddressing, Sm90BlockScaledStepsOfRaggedK) {
  const std::vector<int32_t> sizes = {0, 1, 130, 300, 0, 129, 5};
  const int32_t groups = static_cast<int32_t>(sizes.size());
  const int64_t tokens = 600, p_rows = 40, q_rows = 24;
  uint32_t flags = 0;
  const ref::GroupTable table =
      ref::read_groups({sizes.data(), nullptr, GG_INDEX_INT32}, groups, tokens, &flags);
  ASSERT_EQ(flags, 0u);
  const Format f{GG_DTYPE_E4M3, GG_BLOCK_1X128};
  QuantTensor lhs(f, 1, p_rows, tokens, 1, true, groups);
  QuantTensor rhs(f, 1, q_rows, tokens, 1, true, groups);
  const gg_gemm_desc d = product_desc(GG_OP_RAGGED_K, lhs, rhs, GG_LAYOUT_T, GG_LAYOUT_T, groups);
  int first_block = 0;
  for (int32_t g = 0; g < groups; ++g) {
    const int64_t start = table.groups[static_cast<size_t>(g)].start;
    for (const gg_tensor* t : {&d.lhs, &d.rhs}) {
      const QuantOperand q = quant_operand_of(*t, true, d);
      const ref::MatrixView m = ref::matrix_of(*t, g);
      const ref::Region region = ref::group_region(m.rows, m.cols, ref::TokenDim::kCols,
                                                   table.groups[static_cast<size_t>(g)]);
      const ref::BlockScales scales =
          ref::block_scales_of(*t, g, region, true, ref::TokenDim::kCols, table);
      int64_t checked = 0;
      ref::for_each_block(region, scales, [&](const ref::Region& block, int64_t index) {
        const uint8_t* expected = static_cast<const uint8_t*>(scales.base) + index * 4;
        for (int64_t r = block.row_begin; r < block.row_end; ++r) {
          for (int64_t c = block.col_begin; c < block.col_end; ++c) {
            const int step = static_cast<int>((c - start) / 128);
            const uint8_t* kernel = static_cast<const uint8_t*>(q.block_scales) +
                                    4 * sm90::token_step_scale_entry(q, r, first_block, step);
            ASSERT_EQ(kernel, expected)
                << (t == &d.lhs ? "lhs" : "rhs") << " group " << g << " row " << r << " token "
                << c;
            ++checked;
          }
        }
      });
      EXPECT_EQ(checked, (region.row_end - region.row_begin) * (region.col_end - region.col_begin));
    }
    first_block += (sizes[static_cast<size_t>(g)] + 127) / 128;
  }
}

TEST(ScaleAddressing, RaggedKTokenBlocksRestartAtGroupStarts) {
  const int32_t groups = static_cast<int32_t>(kSizes.size());
  const int64_t m = 40, n = 24;
  const ref::GroupTable table = table_of(kSizes);
  for (const Format& f : kFormats) {
    const std::vector<GroupRecord> records = records_of(table, decoded_block_size(f.scaling));
    for (gg_layout lhs_layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
      for (gg_layout rhs_layout : {GG_LAYOUT_N, GG_LAYOUT_T}) {
        SCOPED_TRACE(testing::Message() << "dtype " << f.dtype << " scaling " << f.scaling
                                        << " layouts " << lhs_layout << rhs_layout);
        // N: [tokens, M] and [tokens, N]; T: their transposed copies.
        const bool lhs_t = lhs_layout == GG_LAYOUT_T;
        const bool rhs_t = rhs_layout == GG_LAYOUT_T;
        QuantTensor lhs(f, 1, lhs_t ? m : kCapacity, lhs_t ? kCapacity : m, lhs_t ? 1 : 0, true,
                        groups);
        QuantTensor rhs(f, 1, rhs_t ? n : kCapacity, rhs_t ? kCapacity : n, rhs_t ? 1 : 0, true,
                        groups);
        const gg_gemm_desc d =
            product_desc(GG_OP_RAGGED_K, lhs, rhs, lhs_layout, rhs_layout, groups);
        EXPECT_EQ(token_block_size(d), decoded_block_size(f.scaling));
        const KernelOperand kl{quant_operand_of(d.lhs, lhs_t, d), lhs_t, lhs_t ? kCapacity : m,
                               0};
        const KernelOperand kr{quant_operand_of(d.rhs, rhs_t, d), rhs_t, rhs_t ? kCapacity : n,
                               0};
        check_operand(d.lhs, kl, false, true, lhs_t ? ref::TokenDim::kCols : ref::TokenDim::kRows,
                      table, records);
        check_operand(d.rhs, kr, false, false,
                      rhs_t ? ref::TokenDim::kCols : ref::TokenDim::kRows, table, records);
      }
    }
  }
}

}  // namespace
}  // namespace gg::portable
