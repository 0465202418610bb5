// wgmma (sm_90a warpgroup matrix multiply-accumulate) for the tile widths
// the Hopper kernels use. cuda::ptx has no wrapper for wgmma, so this is the
// one place with inline PTX for it: D[64 x N] (+)= A[64 x 16] * B[16 x N],
// both operands in shared memory (described by smem descriptors), fp32
// accumulators in registers: N/2 floats per thread of the warpgroup.
// One instruction reads 32 bytes of each operand row's contraction: k16 for
// bf16/fp16, k32 for fp8 (e4m3/e5m2, A and B each either), whose
// accumulator fragment is the same.
// kTransA / kTransB = 1 read an operand stored MN-major (the 16-bit types
// allow it; fp8 reads K-major operands only); `accumulate` = 0 overwrites D (the first k-step of a tile);
// `issue` = 0 skips the instruction (a predicate, not a branch: a wgmma under
// a branch makes ptxas serialize every wgmma of the kernel).
// The asm operand lists are spelled out by macro because inline PTX cannot
// loop over registers; the macros exist only in this file.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <stdint.h>

#include <type_traits>

#include "plan/plan.h"

namespace gg::sm90 {

// D[64 x 128] (+)= A * B: 64 accumulators per thread.
#define GG_WGMMA_M64N128(SHAPE_TYPES, TRANSPOSE)                                              \
  asm volatile(                                                                              \
      "{\n.reg .pred p, q;\nsetp.ne.b32 p, %66, 0;\nsetp.ne.b32 q, %69, 0;\n"                                       \
      "@q wgmma.mma_async.sync.aligned.m64n128" SHAPE_TYPES " "                 \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "  \
      "%64, %65, p, 1, 1" TRANSPOSE ";\n}\n"                                      \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]) \
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(kTransA), "n"(kTransB), "r"(issue))

// D[64 x 256] (+)= A * B: 128 accumulators per thread.
#define GG_WGMMA_M64N256(SHAPE_TYPES, TRANSPOSE)                                              \
  asm volatile(                                                                              \
      "{\n.reg .pred p, q;\nsetp.ne.b32 p, %130, 0;\nsetp.ne.b32 q, %133, 0;\n"                                       \
      "@q wgmma.mma_async.sync.aligned.m64n256" SHAPE_TYPES " "                 \
      "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}, "  \
      "%128, %129, p, 1, 1" TRANSPOSE ";\n}\n"                                      \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
          "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
          "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
          "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
          "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
          "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
          "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
          "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
          "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127]) \
      : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(kTransA), "n"(kTransB), "r"(issue))

// How an fp8 instance's products are scaled along K: by fp32 tensor, group
// or rowwise scales alone, applied in the epilogue (kNone); by fp32 scales
// per 1 x 128 / 128 x 128 block, which change every k-step (k128); or by
// e8m0 scales per 32 elements of both operands (kMx32, MXFP8), which change
// every 32-deep wgmma.
enum class Fp8Blocks { kNone, k128, kMx32 };

// The operand element types of an instance: a 16-bit type T for both, or
// Fp8Operands<A, B, kBlocks> (__nv_fp8_e4m3 / __nv_fp8_e5m2 each).
template <typename A, typename B, Fp8Blocks kBlocks>
struct Fp8Operands {};

// Quantized operands that the kernel decodes into bf16 tiles
// (decode_stage.cuh): which ones, and how (plan.h's Sm90Decode: the rhs
// alone, with a bf16 lhs (weight-only); both; both along tokens). Their
// wgmmas are bf16's.
template <Sm90Decode kWhich>
struct DecodedOperands {};

// kBf16: the wgmma reads bf16 (else fp16 or fp8); kScaled: the operands'
// fp32 tensor, group or rowwise scales multiply the accumulators before
// the epilogue; kBlockScaled: block scales along K, each block's products
// promoted into the accumulators times its scales; kMxBlocks: those blocks
// are MX32 ones; kDecode: the stage's layout (which operands are decoded;
// kFp8Mx for MX blocks on fp8 wgmma).
template <typename T>
struct OperandTypes {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "16-bit types");
  static constexpr int kBytes = 2;
  static constexpr bool kFp8 = false;
  static constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;
  static constexpr bool kBlockScaled = false;
  static constexpr bool kMxBlocks = false;
  static constexpr bool kScaled = false;
  static constexpr Sm90Decode kDecode = Sm90Decode::kNone;
};
template <typename A, typename B, Fp8Blocks kBlocks>
struct OperandTypes<Fp8Operands<A, B, kBlocks>> {
  static constexpr int kBytes = 1;
  static constexpr bool kFp8 = true;
  static constexpr bool kBf16 = false;
  static constexpr bool kBlockScaled = kBlocks != Fp8Blocks::kNone;
  static constexpr bool kMxBlocks = kBlocks == Fp8Blocks::kMx32;
  static constexpr bool kScaled = true;
  static constexpr Sm90Decode kDecode = kMxBlocks ? Sm90Decode::kFp8Mx : Sm90Decode::kNone;
  static constexpr bool kAE4m3 = std::is_same_v<A, __nv_fp8_e4m3>;
  static constexpr bool kBE4m3 = std::is_same_v<B, __nv_fp8_e4m3>;
};
template <Sm90Decode kWhich>
struct OperandTypes<DecodedOperands<kWhich>> {
  static constexpr int kBytes = 2;
  static constexpr bool kFp8 = false;
  static constexpr bool kBf16 = true;
  static constexpr bool kBlockScaled = false;
  static constexpr bool kMxBlocks = false;
  static constexpr bool kScaled = true;
  static constexpr Sm90Decode kDecode = kWhich;
};

// The wgmma suffix of an instance's shape and types after the n-extent.
#define GG_WGMMA_16BIT(NAME) "k16.f32." NAME "." NAME
#define GG_WGMMA_FP8(A, B) "k32.f32." A "." B
#define GG_WGMMA_TRANSPOSE ", %67, %68"
#define GG_WGMMA_TRANSPOSE_N256 ", %131, %132"

template <int N, typename T, int kTransA, int kTransB>
__device__ __forceinline__ void wgmma(float (&d)[N / 2], uint64_t desc_a, uint64_t desc_b,
                                      int accumulate, int issue) {
  static_assert(N == 128 || N == 256, "tile widths of the Hopper kernels");
  using Types = OperandTypes<T>;
  if constexpr (!Types::kFp8) {
    constexpr bool kBf16 = Types::kBf16;
    if constexpr (N == 128) {
      if constexpr (kBf16) {
        GG_WGMMA_M64N128(GG_WGMMA_16BIT("bf16"), GG_WGMMA_TRANSPOSE);
      } else {
        GG_WGMMA_M64N128(GG_WGMMA_16BIT("f16"), GG_WGMMA_TRANSPOSE);
      }
    } else {
      if constexpr (kBf16) {
        GG_WGMMA_M64N256(GG_WGMMA_16BIT("bf16"), GG_WGMMA_TRANSPOSE_N256);
      } else {
        GG_WGMMA_M64N256(GG_WGMMA_16BIT("f16"), GG_WGMMA_TRANSPOSE_N256);
      }
    }
  } else {
    static_assert(kTransA == 0 && kTransB == 0, "fp8 wgmma reads K-major operands");
    // The instances the plan builds: e4m3 x e4m3 and e5m2 x e4m3.
    static_assert(Types::kBE4m3, "fp8 instances take e4m3 weights or activations as B");
    if constexpr (N == 128) {
      if constexpr (Types::kAE4m3) {
        GG_WGMMA_M64N128(GG_WGMMA_FP8("e4m3", "e4m3"), "");
      } else {
        GG_WGMMA_M64N128(GG_WGMMA_FP8("e5m2", "e4m3"), "");
      }
    } else {
      if constexpr (Types::kAE4m3) {
        GG_WGMMA_M64N256(GG_WGMMA_FP8("e4m3", "e4m3"), "");
      } else {
        GG_WGMMA_M64N256(GG_WGMMA_FP8("e5m2", "e4m3"), "");
      }
    }
  }
}

#undef GG_WGMMA_M64N128
#undef GG_WGMMA_M64N256
#undef GG_WGMMA_16BIT
#undef GG_WGMMA_FP8
#undef GG_WGMMA_TRANSPOSE
#undef GG_WGMMA_TRANSPOSE_N256

}  // namespace gg::sm90
