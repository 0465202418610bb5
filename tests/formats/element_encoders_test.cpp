// The quantizer's fast element encoders (kernels/quantize/element_encoders.h)
// give the fmt:: bits on the host: the mxfp8 product by a power of two, the
// NaN and zero-step patches and the e2m1 comparison ladder are checked here
// over every bf16 input under every scale slot, the fp32 edge values and the
// rounding boundaries (encoder_inputs.h), and e2m1_code over every fp32 of
// magnitude 2^-3 to 2^3, where all its midpoints lie. The fp8 instruction
// itself is device code: tests/formats/device_agreement_test.cu runs the
// same cases on the GPU.
#include <gtest/gtest.h>
#include <stdint.h>

#include <vector>

#include "formats/encoder_inputs.h"

namespace gg_test {
namespace {

TEST(ElementEncoders, HostPathGivesTheReferenceBits) {
  const EncoderScales scales = encoder_scales();
  const std::vector<EncoderCase> cases = encoder_cases();
  int mismatches = 0;
  for (const EncoderCase& c : cases) {
    uint32_t fast[kEncoderResults];
    uint32_t want[kEncoderResults];
    encode_pair(scales, c.x0, c.j0, c.x1, c.j1, true, fast);
    encode_pair(scales, c.x0, c.j0, c.x1, c.j1, false, want);
    for (int r = 0; r < kEncoderResults && mismatches < 20; ++r) {
      if (fast[r] != want[r]) {
        ++mismatches;
        ADD_FAILURE() << "x0 bits " << std::hex << gg::fmt::float_bits(c.x0) << " x1 bits "
                      << gg::fmt::float_bits(c.x1) << std::dec << " slots " << c.j0 << ","
                      << c.j1 << " result " << r << ": fast " << std::hex << fast[r]
                      << " reference " << want[r];
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(ElementEncoders, E2m1LadderOverEveryMidpointBinade) {
  int mismatches = 0;
  const uint32_t first = gg::fmt::float_bits(0.125f);
  const uint32_t last = gg::fmt::float_bits(8.0f);
  for (uint32_t bits = first; bits <= last && mismatches < 20; ++bits) {
    for (uint32_t sign : {0u, gg::fmt::kF32SignBit}) {
      const float y = float_of_bits(bits | sign);
      const uint32_t fast = gg::quantize::e2m1_code(y);
      const uint32_t want = gg::fmt::float_to_e2m1(y);
      if (fast != want) {
        ++mismatches;
        ADD_FAILURE() << "y bits " << std::hex << (bits | sign) << ": fast " << fast
                      << " reference " << want;
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

}  // namespace
}  // namespace gg_test
