// The format headers give the same bits on the GPU as on the host.
//
// One __host__ __device__ function evaluates every codec and quantization
// rule on one input; a kernel runs it over all inputs and the host runs the
// same function compiled by the host compiler. The host results are checked
// against the independent model by the CPU tests, so equal bits here carry
// that check over to nvcc's device code. Inputs: every 16-bit pattern (for
// decoding) and, as fp32, random patterns, values near every format's range
// and the special values.
//
// The quantizer's fast element encoders (kernels/quantize/element_encoders.h:
// the fp8 conversion instruction, the mxfp8 product, the e2m1 arithmetic) are
// checked on the device against the host's fmt:: rules over every bf16
// input under 64 scales of each kind, the fp32 edge values and every
// rounding boundary (formats/encoder_inputs.h); e2m1_code and the ue4m3
// conversions (instructions on the device) against the fmt:: rules over
// every fp32 pattern and every code; the e2m1 codes of 16-bit pairs by
// thresholds (fmas and conversions rounded up and down on the device)
// against the fmt:: rules run on the device, over every finite bf16 and
// fp16 magnitude under 1600 steps; the conversion instruction that widens
// fp16 block maxes for the quantizer's scale decisions against the
// reference's decoder, over every 16-bit pattern; the one-correction
// quotient of 16-bit elements against the division instruction's, over
// every pair of significands.
#include <cuda_runtime_api.h>
#include <float.h>
#include <gtest/gtest.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <random>
#include <string>
#include <vector>

#include "formats/block_quant.h"
#include "formats/codecs.h"
#include "formats/encoder_inputs.h"
#include "kernels/device.h"
#include "kernels/quantize/tile_io.cuh"

namespace gg_test {
namespace {

constexpr int kResultsPerInput = 28;

__host__ __device__ uint32_t bits_of_float(float x) {
  uint32_t bits;
  memcpy(&bits, &x, sizeof(bits));
  return bits;
}

// Two narrow codes in one result word.
__host__ __device__ uint32_t pair(uint32_t low, uint32_t high) { return low | high << 16; }

// Every rule of src/formats applied to input i; i itself serves as a code
// to decode and as a scale.
__host__ __device__ void evaluate(const float* inputs, int i, uint32_t* out) {
  namespace f = gg::fmt;
  const float x = inputs[i];
  const float other = inputs[(i * 7 + 3) % (i + 1)];  // a second operand from the same set
  const uint16_t pattern = static_cast<uint16_t>(i);
  const uint8_t byte = static_cast<uint8_t>(i);
  const uint8_t scale = static_cast<uint8_t>(i % 255);
  const float tensor_scale = f::nvfp4_tensor_scale(f::amax_accumulate(0.0f, other));
  const uint8_t other_block_scale =
      f::nvfp4_block_scale(f::amax_accumulate(0.0f, other), tensor_scale);
  uint8_t packed[4] = {0x5A, 0x5A, 0x5A, 0x5A};
  f::encode(GG_DTYPE_E2M1, packed, i & 7, x, true);
  uint32_t packed_word;
  memcpy(&packed_word, packed, sizeof(packed_word));

  uint32_t* r = out + static_cast<int64_t>(i) * kResultsPerInput;
  r[0] = bits_of_float(f::bf16_to_float(pattern));
  r[1] = bits_of_float(f::fp16_to_float(pattern));
  r[2] = bits_of_float(f::e4m3_to_float(byte));
  r[3] = bits_of_float(f::e5m2_to_float(byte));
  r[4] = bits_of_float(f::e2m1_to_float(byte));
  r[5] = bits_of_float(f::ue4m3_to_float(byte));
  r[6] = bits_of_float(f::e8m0_to_float(byte));
  r[7] = f::float_to_bf16(x);
  r[8] = f::float_to_fp16(x);
  r[9] = pair(f::float_to_e4m3(x, false), f::float_to_e4m3(x, true));
  r[10] = pair(f::float_to_e5m2(x, false), f::float_to_e5m2(x, true));
  r[11] = pair(f::float_to_e2m1(x), f::float_to_ue4m3(x));
  r[12] = f::e8m0_from_exponent(i % 600 - 300);
  r[13] = bits_of_float(f::amax_accumulate(x, other));
  r[14] = bits_of_float(f::fp8_scale_from_amax(x, GG_DTYPE_E4M3));
  r[15] = bits_of_float(f::fp8_scale_from_amax(x, GG_DTYPE_E5M2));
  r[16] = f::fp8_quantize_element(x, f::fp8_scale_from_amax(other, GG_DTYPE_E4M3), GG_DTYPE_E4M3);
  r[17] = f::fp8_quantize_element(x, f::fp8_scale_from_amax(other, GG_DTYPE_E5M2), GG_DTYPE_E5M2);
  r[18] = pair(f::mx_block_scale(x, GG_DTYPE_E4M3), f::mx_block_scale(x, GG_DTYPE_E5M2));
  r[19] = pair(f::mx_quantize_element(x, scale, GG_DTYPE_E4M3),
               f::mx_quantize_element(x, scale, GG_DTYPE_E5M2));
  r[20] = f::mx_quantize_element(x, scale, GG_DTYPE_E2M1);
  r[21] = bits_of_float(f::nvfp4_tensor_scale(x));
  r[22] = f::nvfp4_block_scale(f::amax_accumulate(0.0f, x), tensor_scale);
  r[23] = f::nvfp4_quantize_element(x, byte, tensor_scale);
  r[24] = f::nvfp4_quantize_element(x, other_block_scale, tensor_scale);
  r[25] = packed_word;
  r[26] = bits_of_float(f::decode(GG_DTYPE_E2M1, packed, i & 7));
  r[27] = bits_of_float(f::dtype_max(static_cast<gg_dtype>(i % 6)));
}

__global__ void evaluate_kernel(const float* inputs, int count, uint32_t* out) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < count) evaluate(inputs, i, out);
}

std::vector<float> make_inputs() {
  std::vector<float> inputs;
  std::mt19937 random(17);
  const float specials[] = {0.0f,     -0.0f,    INFINITY, -INFINITY, NAN,    -NAN,
                            FLT_MAX,  FLT_MIN,  448.0f,   464.0f,    480.0f, 57344.0f,
                            61440.0f, 65504.0f, 65520.0f, 6.0f,      5.0f,   2.5f,
                            0.25f,    0x1p-9f,  0x1p-10f, 0x1p-149f, 2688.0f};
  for (float s : specials) inputs.push_back(s);
  while (inputs.size() < (1u << 16)) {
    uint32_t bits = static_cast<uint32_t>(random());
    if (inputs.size() % 2 == 0) {
      // Exponents around the narrow formats' ranges.
      bits = (bits & 0x807FFFFFu) | ((static_cast<uint32_t>(random() % 60) + 100u) << 23);
    }
    float x;
    memcpy(&x, &bits, sizeof(x));
    inputs.push_back(x);
  }
  for (int i = 0; i < 1 << 18; ++i) {
    uint32_t bits = static_cast<uint32_t>(random());
    float x;
    memcpy(&x, &bits, sizeof(x));
    inputs.push_back(x);
  }
  return inputs;
}

#define GG_CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

TEST(DeviceAgreement, EveryRuleGivesTheHostBits) {
  int devices = 0;
  std::string no_device;
  if (!gg::count_cuda_devices(&devices, &no_device)) GTEST_SKIP() << no_device;
  const std::vector<float> inputs = make_inputs();
  const int count = static_cast<int>(inputs.size());
  const size_t out_count = inputs.size() * kResultsPerInput;

  std::vector<uint32_t> host(out_count);
  for (int i = 0; i < count; ++i) evaluate(inputs.data(), i, host.data());

  float* device_inputs = nullptr;
  uint32_t* device_out = nullptr;
  GG_CUDA_OK(cudaMalloc(&device_inputs, inputs.size() * sizeof(float)));
  GG_CUDA_OK(cudaMalloc(&device_out, out_count * sizeof(uint32_t)));
  GG_CUDA_OK(cudaMemcpy(device_inputs, inputs.data(), inputs.size() * sizeof(float),
                        cudaMemcpyHostToDevice));
  evaluate_kernel<<<(count + 255) / 256, 256>>>(device_inputs, count, device_out);
  GG_CUDA_OK(cudaGetLastError());
  std::vector<uint32_t> device(out_count);
  GG_CUDA_OK(
      cudaMemcpy(device.data(), device_out, out_count * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  GG_CUDA_OK(cudaFree(device_inputs));
  GG_CUDA_OK(cudaFree(device_out));

  int mismatches = 0;
  for (size_t k = 0; k < out_count && mismatches < 20; ++k) {
    if (host[k] != device[k]) {
      ++mismatches;
      const size_t i = k / kResultsPerInput;
      ADD_FAILURE() << "input " << i << " (bits " << std::hex << bits_of_float(inputs[i])
                    << ") result " << std::dec << k % kResultsPerInput << ": host " << std::hex
                    << host[k] << " device " << device[k];
    }
  }
  EXPECT_EQ(mismatches, 0);
}

__global__ void fast_encoders_kernel(EncoderScales scales, const EncoderCase* cases, int64_t count,
                                     uint32_t* out) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= count) return;
  const EncoderCase c = cases[i];
  encode_pair(scales, c.x0, c.j0, c.x1, c.j1, true, out + i * kEncoderResults);
}

TEST(DeviceAgreement, FastQuantizeEncodersGiveTheReferenceBits) {
  int devices = 0;
  std::string no_device;
  if (!gg::count_cuda_devices(&devices, &no_device)) GTEST_SKIP() << no_device;
  const EncoderScales scales = encoder_scales();
  const std::vector<EncoderCase> cases = encoder_cases();
  const int64_t count = static_cast<int64_t>(cases.size());
  const size_t out_count = cases.size() * kEncoderResults;

  EncoderCase* device_cases = nullptr;
  uint32_t* device_out = nullptr;
  GG_CUDA_OK(cudaMalloc(&device_cases, cases.size() * sizeof(EncoderCase)));
  GG_CUDA_OK(cudaMalloc(&device_out, out_count * sizeof(uint32_t)));
  GG_CUDA_OK(cudaMemcpy(device_cases, cases.data(), cases.size() * sizeof(EncoderCase),
                        cudaMemcpyHostToDevice));
  fast_encoders_kernel<<<static_cast<unsigned>((count + 255) / 256), 256>>>(scales, device_cases,
                                                                            count, device_out);
  GG_CUDA_OK(cudaGetLastError());
  std::vector<uint32_t> device(out_count);
  GG_CUDA_OK(
      cudaMemcpy(device.data(), device_out, out_count * sizeof(uint32_t), cudaMemcpyDeviceToHost));
  GG_CUDA_OK(cudaFree(device_cases));
  GG_CUDA_OK(cudaFree(device_out));

  const char* results[kEncoderResults] = {"fp8 e4m3 | e5m2 << 16 (x / scale)",
                                          "mxfp8 e4m3 | e5m2 << 16", "nvfp4 | e2m1 << 8 | mxfp4 << 16",
                                          "fp8 e4m3 | e5m2 << 16 (bf16 x, one correction)"};
  int mismatches = 0;
  for (int64_t i = 0; i < count && mismatches < 20; ++i) {
    const EncoderCase& c = cases[static_cast<size_t>(i)];
    uint32_t want[kEncoderResults];
    encode_pair(scales, c.x0, c.j0, c.x1, c.j1, false, want);
    for (int r = 0; r < kEncoderResults; ++r) {
      const uint32_t got = device[static_cast<size_t>(i) * kEncoderResults + r];
      if (got != want[r]) {
        ++mismatches;
        ADD_FAILURE() << results[r] << ": x0 bits " << std::hex << bits_of_float(c.x0)
                      << " x1 bits " << bits_of_float(c.x1) << std::dec << " scale slots " << c.j0
                      << "," << c.j1 << ": device " << std::hex << got << " reference " << want[r];
      }
    }
  }
  EXPECT_EQ(mismatches, 0);
}

// Counts the patterns from `begin` on which the device encoders differ from
// the fmt:: rules; `first` gets one of them.
__global__ void every_fp32_kernel(uint64_t begin, unsigned long long* mismatches,
                                  uint32_t* first) {
  namespace f = gg::fmt;
  namespace q = gg::quantize;
  const uint64_t pattern = begin + static_cast<uint64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  const uint32_t bits = static_cast<uint32_t>(pattern);
  const float y = f::bits_float(bits);
  const uint32_t e2m1 = f::float_to_e2m1(y);
  bool bad = q::e2m1_code(y) != e2m1 || (y == y && q::e2m1_code_number(y) != e2m1) ||
             q::ue4m3_code(y) != f::float_to_ue4m3(y);
  if (pattern < 256) {
    const uint8_t code = static_cast<uint8_t>(pattern);
    bad = bad ||
          bits_of_float(q::ue4m3_value(code & 0x7Fu)) != bits_of_float(f::ue4m3_to_float(code));
  }
  if (bad && atomicAdd(mismatches, 1ull) == 0) *first = bits;
}

TEST(DeviceAgreement, E2m1AndUe4m3EncodersOverEveryFp32) {
  int devices = 0;
  std::string no_device;
  if (!gg::count_cuda_devices(&devices, &no_device)) GTEST_SKIP() << no_device;
  unsigned long long* mismatches = nullptr;
  uint32_t* first = nullptr;
  GG_CUDA_OK(cudaMalloc(&mismatches, sizeof(*mismatches)));
  GG_CUDA_OK(cudaMalloc(&first, sizeof(*first)));
  GG_CUDA_OK(cudaMemset(mismatches, 0, sizeof(*mismatches)));
  GG_CUDA_OK(cudaMemset(first, 0, sizeof(*first)));
  constexpr uint64_t kPerLaunch = uint64_t{1} << 30;
  for (uint64_t begin = 0; begin < (uint64_t{1} << 32); begin += kPerLaunch) {
    every_fp32_kernel<<<static_cast<unsigned>(kPerLaunch / 256), 256>>>(begin, mismatches, first);
    GG_CUDA_OK(cudaGetLastError());
  }
  unsigned long long count = 0;
  uint32_t bits = 0;
  GG_CUDA_OK(cudaMemcpy(&count, mismatches, sizeof(count), cudaMemcpyDeviceToHost));
  GG_CUDA_OK(cudaMemcpy(&bits, first, sizeof(bits), cudaMemcpyDeviceToHost));
  GG_CUDA_OK(cudaFree(mismatches));
  GG_CUDA_OK(cudaFree(first));
  EXPECT_EQ(count, 0u) << "e.g. fp32 bits " << std::hex << bits;
}

// Counts the pairs on which e2m1_pair_codes under the device thresholds
// differs from the fmt:: rules (counts[0]) and the pairs compared
// (counts[1]): magnitude m (x), step blockIdx.y, as the host test arranges
// them; `first` gets one low half's bits.
template <gg_dtype kHalf>
__global__ void pair_codes_kernel(const float* steps, int step_count, uint32_t magnitudes,
                                  unsigned long long* counts, uint32_t* first) {
  const uint32_t m = blockIdx.x * blockDim.x + threadIdx.x;
  if (m >= magnitudes) return;
  unsigned long long* mismatches = counts;
  atomicAdd(counts + 1, 2ull);
  const float low_step = steps[blockIdx.y];
  const float high_step = steps[(blockIdx.y + 1) % static_cast<unsigned>(step_count)];
  for (uint32_t sign = 0; sign <= 0x8000u; sign += 0x8000u) {
    const uint32_t low = m | sign, high = (magnitudes - 1 - m) | (sign ^ 0x8000u);
    if (e2m1_pair_codes_of<kHalf>(low, high, low_step, high_step) !=
            e2m1_reference_pair<kHalf>(low, high, low_step, high_step) &&
        atomicAdd(mismatches, 1ull) == 0) {
      *first = low;
    }
  }
}

template <gg_dtype kHalf>
void check_device_pair_codes(uint32_t magnitudes) {
  const std::vector<float> steps = e2m1_threshold_steps();
  float* device_steps = nullptr;
  unsigned long long* counts = nullptr;
  uint32_t* first = nullptr;
  GG_CUDA_OK(cudaMalloc(&device_steps, steps.size() * sizeof(float)));
  GG_CUDA_OK(cudaMalloc(&counts, 2 * sizeof(*counts)));
  GG_CUDA_OK(cudaMalloc(&first, sizeof(*first)));
  GG_CUDA_OK(cudaMemcpy(device_steps, steps.data(), steps.size() * sizeof(float),
                        cudaMemcpyHostToDevice));
  GG_CUDA_OK(cudaMemset(counts, 0, 2 * sizeof(*counts)));
  GG_CUDA_OK(cudaMemset(first, 0, sizeof(*first)));
  const dim3 grid((magnitudes + 255) / 256, static_cast<unsigned>(steps.size()));
  pair_codes_kernel<kHalf><<<grid, 256>>>(device_steps, static_cast<int>(steps.size()), magnitudes,
                                          counts, first);
  GG_CUDA_OK(cudaGetLastError());
  unsigned long long host_counts[2] = {0, 0};
  uint32_t bits = 0;
  GG_CUDA_OK(cudaMemcpy(host_counts, counts, sizeof(host_counts), cudaMemcpyDeviceToHost));
  GG_CUDA_OK(cudaMemcpy(&bits, first, sizeof(bits), cudaMemcpyDeviceToHost));
  GG_CUDA_OK(cudaFree(device_steps));
  GG_CUDA_OK(cudaFree(counts));
  GG_CUDA_OK(cudaFree(first));
  EXPECT_EQ(host_counts[1], 2ull * magnitudes * steps.size()) << "pairs compared";
  EXPECT_EQ(host_counts[0], 0u) << "e.g. low half bits " << std::hex << bits;
}

TEST(DeviceAgreement, E2m1PairCodesOverEvery16BitMagnitude) {
  int devices = 0;
  std::string no_device;
  if (!gg::count_cuda_devices(&devices, &no_device)) GTEST_SKIP() << no_device;
  check_device_pair_codes<GG_DTYPE_BF16>(kFiniteBf16Magnitudes);
  check_device_pair_codes<GG_DTYPE_FP16>(kFiniteFp16Magnitudes);
}

// Counts the pairs of significands on which the device's one-correction
// quotient differs from x / s: for_each_narrow_quotient of the thread's m.
template <int kSignificand>
__global__ void narrow_quotients_kernel(unsigned long long* mismatches) {
  unsigned long long wrong = 0;
  for_each_narrow_quotient<kSignificand>(
      blockIdx.x * blockDim.x + threadIdx.x, [&](float x, float scale, float quotient) {
        wrong += __float_as_uint(quotient) != __float_as_uint(__fdiv_rn(x, scale));
      });
  if (wrong != 0) atomicAdd(mismatches, wrong);
}

template <int kSignificand>
void check_device_narrow_quotients() {
  unsigned long long* mismatches = nullptr;
  GG_CUDA_OK(cudaMalloc(&mismatches, sizeof(*mismatches)));
  GG_CUDA_OK(cudaMemset(mismatches, 0, sizeof(*mismatches)));
  narrow_quotients_kernel<kSignificand><<<(1u << 23) / 256, 256>>>(mismatches);
  GG_CUDA_OK(cudaGetLastError());
  unsigned long long host_mismatches = 1;
  GG_CUDA_OK(cudaMemcpy(&host_mismatches, mismatches, sizeof(host_mismatches),
                        cudaMemcpyDeviceToHost));
  GG_CUDA_OK(cudaFree(mismatches));
  EXPECT_EQ(host_mismatches, 0ull) << kSignificand << "-bit significands";
}

TEST(DeviceAgreement, OneCorrectionDividesEvery16BitSignificand) {
  int devices = 0;
  std::string no_device;
  if (!gg::count_cuda_devices(&devices, &no_device)) GTEST_SKIP() << no_device;
  check_device_narrow_quotients<8>();
  check_device_narrow_quotients<11>();
}

// The fp32 bits of every 16-bit pattern as the quantizer's block decisions
// widen fp16 maxes (tile_writers.cuh's decision_bits).
__global__ void widen_fp16_kernel(uint32_t* out) {
  const uint32_t pattern = blockIdx.x * blockDim.x + threadIdx.x;
  out[pattern] = bits_of_float(gg::quantize::InputType<GG_DTYPE_FP16>::convert(pattern));
}

TEST(DeviceAgreement, Fp16DecisionWideningOverEvery16BitPattern) {
  int devices = 0;
  std::string no_device;
  if (!gg::count_cuda_devices(&devices, &no_device)) GTEST_SKIP() << no_device;
  constexpr uint32_t kPatterns = 1u << 16;
  uint32_t* device_bits = nullptr;
  GG_CUDA_OK(cudaMalloc(&device_bits, kPatterns * sizeof(uint32_t)));
  widen_fp16_kernel<<<kPatterns / 256, 256>>>(device_bits);
  GG_CUDA_OK(cudaGetLastError());
  std::vector<uint32_t> bits(kPatterns);
  GG_CUDA_OK(cudaMemcpy(bits.data(), device_bits, kPatterns * sizeof(uint32_t),
                        cudaMemcpyDeviceToHost));
  GG_CUDA_OK(cudaFree(device_bits));
  // The reference's bits for every finite value and inf; a NaN (whose
  // payload the decoder keeps) a NaN of either payload.
  uint32_t nans = 0;
  for (uint32_t pattern = 0; pattern < kPatterns; ++pattern) {
    const float reference = gg::fmt::fp16_to_float(static_cast<uint16_t>(pattern));
    float widened;
    memcpy(&widened, &bits[pattern], sizeof(widened));
    if (isnan(reference)) {
      ++nans;
      EXPECT_TRUE(isnan(widened)) << "pattern " << std::hex << pattern;
    } else {
      ASSERT_EQ(bits[pattern], bits_of_float(reference)) << "pattern " << std::hex << pattern;
    }
  }
  EXPECT_EQ(nans, 2u * 1023u) << "every fp16 NaN pattern compared";
}

}  // namespace
}  // namespace gg_test
