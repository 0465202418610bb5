// The reference grouped quantize against quantize_model.h: every output
// format (mxfp4 and fp8 rowwise included), rowwise and columnwise, ragged
// (blocks of the columnwise output restarting at every group start) and
// stacked weights (128 x 128 tiles included), per-group amax, edge group
// sizes (0, 1, 31, 33, unaligned starts), rows past the last group left
// untouched, and bad sizes.
#include <gtest/gtest.h>
#include <math.h>
#include <string.h>

#include <string>
#include <tuple>
#include <vector>

#include "api/names.h"
#include "format_model.h"
#include "quantize_case.h"

namespace gg::test {
namespace {

struct Named {
  const char* name;
  QuantizeFormat format;
  bool ragged;  // 128 x 128 tiles are for stacked weights only
};

const std::vector<Named>& formats() {
  static const std::vector<Named> all = {
      {"fp8_e4m3_tensor", {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR}, true},
      {"fp8_e5m2_group", {GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP}, true},
      {"fp8_e4m3_1x128", {GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE}, true},
      {"fp8_e5m2_1x128", {GG_DTYPE_E5M2, GG_BLOCK_1X128, GG_SCALE_NONE}, true},
      {"fp8_e4m3_128x128", {GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE}, false},
      {"mxfp8_e4m3", {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE}, true},
      {"mxfp8_e5m2", {GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE}, true},
      {"nvfp4_tensor", {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR}, true},
      {"nvfp4_group", {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP}, true},
      {"mxfp4", {GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE}, true},
      // One fp32 scale per output row: per token rowwise, per (k, group)
      // columnwise, every group's entry written (1 for an empty group).
      {"fp8_e4m3_rowwise", {GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE}, true},
      {"fp8_e5m2_rowwise", {GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_SCALE_NONE}, true},
      // Without an fp32 scale output the scale is 1: a saturating cast, and
      // nvfp4 block scales relative to 1.
      {"fp8_e4m3_unscaled", {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_NONE}, true},
      {"nvfp4_unscaled", {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_NONE}, true},
  };
  return all;
}

QuantizeSetup ragged_setup(const QuantizeFormat& format, gg_dtype input) {
  QuantizeSetup s;
  s.rows = 160;
  s.k = 272;  // 128-blocks: 2 full + 16; 32-blocks: 8 + 16; 16-blocks: 17
  s.sizes = {0, 1, 31, 33, 5, 0, 17, 40};  // 127 rows: rows 127..159 untouched
  s.input = input;
  s.format = format;
  return s;
}

QuantizeSetup stacked_setup(const QuantizeFormat& format, gg_dtype input) {
  QuantizeSetup s;
  s.stacked = true;
  s.groups = 3;
  s.rows = 136;  // two 128-tiles, the second of 8 rows
  s.k = 272;
  s.input = input;
  s.format = format;
  return s;
}

using Param = std::tuple<size_t, gg_dtype, bool>;  // format, input dtype, stacked

std::vector<Param> params() {
  std::vector<Param> all;
  for (size_t f = 0; f < formats().size(); ++f)
    for (gg_dtype in : {GG_DTYPE_BF16, GG_DTYPE_FP16, GG_DTYPE_FP32})
      for (bool stacked : {false, true})
        if (stacked || formats()[f].ragged) all.emplace_back(f, in, stacked);
  return all;
}

std::string param_name(const ::testing::TestParamInfo<Param>& param_info) {
  const auto& [format, input, stacked] = param_info.param;
  return std::string(formats()[format].name) + "_from_" + api::dtype_name(input) +
         (stacked ? "_stacked" : "_ragged");
}

class Quantize : public ::testing::TestWithParam<Param> {};

TEST_P(Quantize, MatchesModel) {
  const auto& [format, input, stacked] = GetParam();
  const QuantizeFormat& f = formats()[format].format;
  QuantizeSetup s = stacked ? stacked_setup(f, input) : ragged_setup(f, input);
  s.seed = static_cast<uint32_t>(format * 10 + input * 2 + stacked);
  QuantizeCase c(s);
  EXPECT_EQ(c.run(), 0u);
  c.check();
}

INSTANTIATE_TEST_SUITE_P(Formats, Quantize, ::testing::ValuesIn(params()), param_name);

// Every finite input code, from subnormals to the largest: scales and
// saturation at their extremes.
TEST(QuantizeValues, FullRangeInputs) {
  for (const Named& named : formats()) {
    for (bool stacked : {false, true}) {
      if (!stacked && !named.ragged) continue;
      QuantizeSetup s = stacked ? stacked_setup(named.format, GG_DTYPE_BF16)
                                : ragged_setup(named.format, GG_DTYPE_BF16);
      s.range = CodeRange::kFull;
      QuantizeCase c(s);
      c.run();
      SCOPED_TRACE(named.name);
      c.check();
    }
  }
}

TEST(QuantizeValues, ZeroBlocksGetTheRulesScaleForZero) {
  // Group 2 all zeros (amax 0): fp8 scale 1, mx scale code 0, nvfp4 block 0.
  for (const Named& named : formats()) {
    if (!named.ragged) continue;
    QuantizeSetup s = ragged_setup(named.format, GG_DTYPE_BF16);
    QuantizeCase c(s);
    for (int64_t r = 1; r < 32; ++r)
      for (int64_t k = 0; k < s.k; ++k) c.input.set_code(0, r, k, 0);
    c.run();
    SCOPED_TRACE(named.name);
    c.check();
    EXPECT_EQ(c.amax[2], 0.0f);
  }
}

TEST(QuantizeGroups, OnlyRequestedOutputs) {
  const QuantizeFormat mx{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE};
  for (int which = 0; which < 3; ++which) {
    QuantizeSetup s = ragged_setup(mx, GG_DTYPE_BF16);
    s.rowwise = which != 1;
    s.columnwise = which != 0;
    s.amax = which == 2;
    QuantizeCase c(s);
    EXPECT_EQ(c.run(), 0u);
    c.check();
  }
}

TEST(QuantizeGroups, AllGroupsEmpty) {
  // Nothing to code; per-group scales come from amax 0 and amax is 0.
  for (const Named& named : formats()) {
    if (!named.ragged) continue;
    QuantizeSetup s = ragged_setup(named.format, GG_DTYPE_FP16);
    s.sizes = {0, 0, 0};
    QuantizeCase c(s);
    EXPECT_EQ(c.run(), 0u);
    SCOPED_TRACE(named.name);
    c.check();
    EXPECT_EQ(c.amax[1], 0.0f);
  }
}

TEST(QuantizeGroups, ExplicitOffsetsWithGaps) {
  for (const Named& named : formats()) {
    if (!named.ragged) continue;
    QuantizeSetup s = ragged_setup(named.format, GG_DTYPE_BF16);
    s.sizes = {33, 0, 7, 31};
    s.offsets = {100, 3, 41, 9};
    QuantizeCase c(s);
    EXPECT_EQ(c.run(), 0u);
    SCOPED_TRACE(named.name);
    c.check();
  }
}

TEST(QuantizeGroups, BadSizesAreClampedAndFlagged) {
  const QuantizeFormat nvfp4{GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP};
  QuantizeSetup s = ragged_setup(nvfp4, GG_DTYPE_BF16);
  s.sizes = {17, -5, 100, 90};  // [0,17), [17,17), [17,117), [117,160)
  QuantizeCase c(s);
  EXPECT_EQ(c.run(), GG_DEVICE_NEGATIVE_SIZE | GG_DEVICE_SIZES_EXCEED_ROWS);
  c.check();

  QuantizeSetup o = ragged_setup(nvfp4, GG_DTYPE_BF16);
  o.sizes = {4, 4};
  o.offsets = {-2, 170};  // [0,4), [160,160)
  QuantizeCase co(o);
  EXPECT_EQ(co.run(), GG_DEVICE_OFFSET_OUT_OF_RANGE | GG_DEVICE_SIZES_EXCEED_ROWS);
  co.check();
}

TEST(QuantizeGroups, OneGroupOfOneRow) {
  for (const Named& named : formats()) {
    if (!named.ragged) continue;
    QuantizeSetup s = ragged_setup(named.format, GG_DTYPE_FP32);
    s.sizes = {1};
    QuantizeCase c(s);
    EXPECT_EQ(c.run(), 0u);
    SCOPED_TRACE(named.name);
    c.check();
  }
}

TEST(QuantizeValues, RowwiseScaleIsTheRowAmaxOverTheFp8Max) {
  // Row 0 of group 1 holds 3 and -5 (amax 5), the rest 0; the scale is
  // 5 / 448 as an fp32 division, not a power of two, and -5 codes as -448.
  const QuantizeFormat rowwise{GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE};
  QuantizeSetup s = ragged_setup(rowwise, GG_DTYPE_FP32);
  s.sizes = {2, 3, 0};
  QuantizeCase c(s);
  for (int64_t r = 0; r < s.rows; ++r)
    for (int64_t k = 0; k < s.k; ++k) c.input.set_code(0, r, k, 0);
  c.input.set_code(0, 2, 5, 0x40400000u);  // 3
  c.input.set_code(0, 2, 9, 0xC0A00000u);  // -5
  EXPECT_EQ(c.run(), 0u);
  c.check();
  const float scale = 5.0f / 448.0f;
  uint32_t scale_bits;
  memcpy(&scale_bits, &scale, sizeof scale);
  EXPECT_EQ(c.rowwise.scale_code(0, 2, 0), scale_bits);
  EXPECT_EQ(c.rowwise.scale_code(0, 3, 0), 0x3F800000u);  // a zero row: 1
  EXPECT_EQ(c.rowwise.code(0, 2, 9), 0xFEu);              // -448
  // Columnwise: one scale per (k, group); the empty group 2 gets 1.
  EXPECT_EQ(c.columnwise.scale_code(0, 9, 1), scale_bits);
  EXPECT_EQ(c.columnwise.scale_code(0, 9, 2), 0x3F800000u);
}

TEST(QuantizeValues, NanInputMakesAmaxAndMxScaleNan) {
  const QuantizeFormat mx{GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE};
  QuantizeSetup s = ragged_setup(mx, GG_DTYPE_BF16);
  s.columnwise = false;
  QuantizeCase c(s);
  c.input.set_code(0, 40, 70, 0x7FC0);  // group 3 (rows 32..64), K block 2
  c.run();
  EXPECT_TRUE(isnan(c.amax[3]));
  EXPECT_FALSE(isnan(c.amax[2]));
  EXPECT_EQ(c.rowwise.scale_code(0, 40, 2), 0xFFu);
  EXPECT_NE(c.rowwise.scale_code(0, 40, 1), 0xFFu);
  EXPECT_TRUE(isnan(model_value(GG_DTYPE_E4M3, c.rowwise.code(0, 40, 64))));
}

}  // namespace
}  // namespace gg::test
