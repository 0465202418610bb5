// The skinny kernel: ragged-M products of quantized weights with groups of
// a few tokens (decode), sm_80 and later (mma.sync), where the weights'
// bytes are the whole cost and a 64- or 128-row tile would decode every
// weight for rows that do not exist.
//
// Plan. The weights are the mma's A operand: a CTA of 8 warps takes 256
// rows of one group's [N, K] weights (256 output columns), each warp 32, and
// one tile of up to 16 of the group's tokens as the B operand (two 8-token
// mma columns, the second skipped when 8 suffice). Work items are (group,
// 256 columns, 16 tokens), the token tiles of one block of weights adjacent,
// so a group of more than 16 tokens reads its weights again from L2; a
// persistent grid walks them, each CTA having built the group table from the
// device sizes (group_table.cuh). The weights go from global memory straight
// into registers, 32 bytes of codes a row a step, one step ahead, and are
// decoded pair by pair at the mma that takes them (skinny_decode.h): no
// shared memory, no barrier between the warps' weight streams. The tokens
// are decoded (or read, bf16) once a CTA into a shared-memory block of mma
// fragments 512 deep (skinny_layout.h), double-buffered: the loads of the
// next block are issued before the current one's mmas and stored after
// them, one barrier a block. The epilogue pairs adjacent output columns
// across lanes (one shuffle) and stores them as the portable kernel does
// (epilogue.cuh): alpha, the fp32 and rowwise scales, beta, bias.
//
// Depths past K read as zeros on both sides; tokens past the group are
// zeros in B and never stored; weight rows past N are neither read nor
// stored. K is a whole number of chunks (16 bytes of codes a row).
#pragma once

#include <cuda_bf16.h>
#include <stdint.h>

#include "common/groups.h"
#include "kernels/group_table.cuh"
#include "kernels/portable/epilogue.cuh"
#include "kernels/portable/gemm_params.h"
#include "kernels/portable/sm80_ptx.cuh"
#include "kernels/skinny/skinny_decode.h"
#include "kernels/skinny/skinny_kernel_params.h"
#include "kernels/skinny/skinny_layout.h"
#include "kernels/unused_rows.cuh"

namespace gg::skinny {

template <Tokens kTokens, bool kE2m1>
struct SkinnyGemm {
  static constexpr int kChunks = block_chunks(kE2m1);  // a row's chunks in a block
  static constexpr int kSteps = kChunks / 2;
  static constexpr int kChunkMmas = chunk_mmas(kE2m1);
  static constexpr int kRows = 4;  // weight rows of a thread: g, g + 8, g + 16, g + 24

  // One step of a thread's weights: two 16-byte chunks of each row, and
  // their block-scale codes (e2m1 NV16: two a chunk; MX32: one), byte
  // 2 c + h of a row's word: chunk c's half h.
  struct Step {
    uint4 codes[kRows][2];
    uint32_t scales[kRows];
  };

  // What an item's weight stream needs: row i of a thread is row
  // `row` + row_offset(i) of the group's matrix.
  struct Weights {
    const uint8_t* codes;   // the thread's first row
    const uint8_t* scales;  // its row of block scales
    int64_t row_bytes;
    int64_t scale_row_length;
    uint32_t inside;  // bit i: row i lies inside N
  };

  static __device__ __forceinline__ int row_offset(int i) { return 16 * (i / 2) + 8 * (i % 2); }

  static __device__ __forceinline__ uint8_t scale_code(const Step& step, int i, int c, int h) {
    return static_cast<uint8_t>(step.scales[i] >> (8 * (2 * c + h)));
  }

  static __device__ __forceinline__ uint4 load16(const uint8_t* p) {
    return __ldg(reinterpret_cast<const uint4*>(p));
  }

  static __device__ __forceinline__ void load_step(Step& step, const Weights& w,
                                                   const portable::QuantOperand& q, int64_t depth0,
                                                   int64_t k, int quad) {
    const int shift = portable::decoded_block_shift(q.scaling);
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int64_t depth = depth0 + chunk_depth(kE2m1, quad, c);
        const bool valid = (w.inside >> i & 1u) != 0 && depth < k;
        step.codes[i][c] = valid ? load16(w.codes + row_offset(i) * w.row_bytes +
                                          (kE2m1 ? depth / 2 : depth))
                                 : make_uint4(0, 0, 0, 0);
        if (c == 0) step.scales[i] = 0;
        if (shift > 0 && valid) {
          const uint8_t* scales = w.scales + row_offset(i) * w.scale_row_length;
          const int64_t block = depth >> shift;
          const uint32_t first = scales[block];
          const uint32_t second = kE2m1 && shift == 4 ? scales[block + 1] : first;
          step.scales[i] |= (first | second << 8) << (16 * c);
        }
      }
    }
  }

  // Word `word` of the decoded chunk (its elements as word_depths says).
  static __device__ __forceinline__ uint32_t weight_word(const uint4& codes, int word,
                                                         const PairFactors (&f)[2], bool special,
                                                         const portable::QuantOperand& q) {
    const uint32_t w[4] = {codes.x, codes.y, codes.z, codes.w};
    if constexpr (kE2m1) {
      return e2m1_pair(w[word / 4], word % 4, f[word / 8]);
    } else {
      return fp8_pair(q.dtype == GG_DTYPE_E5M2, w[word / 2], word % 2, f[0], special);
    }
  }

  // The mmas of one step: chunk c of the block is 2 s + c.
  static __device__ __forceinline__ void compute_step(const Step& step,
                                                      const portable::QuantOperand& q, int s,
                                                      const uint32_t* b_block, bool two_tiles,
                                                      int lane, float (&acc)[2][2][4]) {
#pragma unroll
    for (int c = 0; c < 2; ++c) {
      PairFactors f[kRows][2];
      bool special[kRows];
#pragma unroll
      for (int i = 0; i < kRows; ++i) {
        const uint4 codes = step.codes[i][c];
        if constexpr (kE2m1) {
          f[i][0] = e2m1_factors(q.scaling, scale_code(step, i, c, 0));
          f[i][1] = e2m1_factors(q.scaling, scale_code(step, i, c, 1));
          special[i] = false;
        } else {
          const bool e5m2 = q.dtype == GG_DTYPE_E5M2;
          f[i][0] = fp8_factors(e5m2, q.scaling, scale_code(step, i, c, 0));
          f[i][1] = f[i][0];
          special[i] = sm90::has_special_fp8(e5m2, codes.x) ||
                       sm90::has_special_fp8(e5m2, codes.y) ||
                       sm90::has_special_fp8(e5m2, codes.z) ||
                       sm90::has_special_fp8(e5m2, codes.w);
        }
      }
#pragma unroll
      for (int j = 0; j < kChunkMmas; ++j) {
        uint32_t a[kRows][2];
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            a[i][r] = weight_word(step.codes[i][c], 2 * j + r, f[i], special[i], q);
          }
        }
        const int m = (2 * s + c) * kChunkMmas + j;
#pragma unroll
        for (int t = 0; t < 2; ++t) {
          if (t == 1 && !two_tiles) break;
          const uint2 b = *reinterpret_cast<const uint2*>(b_block + b_slot(m, t, lane, 0));
#pragma unroll
          for (int mi = 0; mi < 2; ++mi) {
            const uint32_t frag[4] = {a[2 * mi][0], a[2 * mi + 1][0], a[2 * mi][1],
                                      a[2 * mi + 1][1]};
            portable::mma_16816<__nv_bfloat16>(acc[mi][t], frag, b.x, b.y);
          }
        }
      }
    }
  }

  // A fill unit's loads: its token's 32 depths, as stored, and their block
  // scales (fp8 MX32: one; e2m1: one a 16 (NV16) or the same (MX32)).
  struct FillLoad {
    uint4 data[kTokens == Tokens::kBf16 ? 4 : (kTokens == Tokens::kFp8 ? 2 : 1)];
    uint8_t scales[2];
  };

  static __device__ __forceinline__ void fill_load(FillLoad& f, const portable::GemmParams& p,
                                                   const FillUnit& unit, int64_t token,
                                                   int64_t token_end, int64_t depth0) {
    const int64_t depth = depth0 + unit.depth;
    constexpr int kParts = sizeof(f.data) / sizeof(uint4);
    constexpr int kPartElements = kFillElements / kParts;
    const bool row_ok = token < token_end;
    const portable::QuantOperand& q = p.lhs_quant;
    const int bits = kTokens == Tokens::kBf16 ? 16 : portable::element_bits(q.dtype);
    const uint8_t* row =
        static_cast<const uint8_t*>(p.lhs) + token * p.lhs_stride * bits / 8;
#pragma unroll
    for (int i = 0; i < kParts; ++i) {
      const int64_t d = depth + i * kPartElements;
      f.data[i] = row_ok && d < p.depth ? load16(row + d * bits / 8) : make_uint4(0, 0, 0, 0);
    }
    if constexpr (kTokens != Tokens::kBf16) {
      const int shift = portable::decoded_block_shift(q.scaling);
      f.scales[0] = f.scales[1] = 0;
      if (shift > 0 && row_ok && depth < p.depth) {
        const uint8_t* scales = portable::group_scales(q, 0) + token * q.scale_row_length;
        f.scales[0] = scales[depth >> shift];
        f.scales[1] = shift == 4 ? scales[(depth >> shift) + 1] : f.scales[0];
      }
    }
  }

  // Decodes a fill unit into its 16 words, in the weights' order, and
  // stores them as registers of its lane's 8 mmas.
  static __device__ __forceinline__ void fill_store(const FillLoad& f,
                                                    const portable::QuantOperand& q,
                                                    const FillUnit& unit, uint32_t* b_block) {
    uint32_t words[16];
    if constexpr (kTokens == Tokens::kE2m1) {
      const uint32_t w[4] = {f.data[0].x, f.data[0].y, f.data[0].z, f.data[0].w};
      const PairFactors factors[2] = {e2m1_factors(q.scaling, f.scales[0]),
                                      e2m1_factors(q.scaling, f.scales[1])};
#pragma unroll
      for (int word = 0; word < 16; ++word) {
        words[word] = e2m1_pair(w[word / 4], word % 4, factors[word / 8]);
      }
    } else {
      uint32_t natural[16];  // word i: depths 2 i and 2 i + 1
      if constexpr (kTokens == Tokens::kBf16) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          natural[4 * i] = f.data[i].x, natural[4 * i + 1] = f.data[i].y;
          natural[4 * i + 2] = f.data[i].z, natural[4 * i + 3] = f.data[i].w;
        }
      } else {
        const bool e5m2 = q.dtype == GG_DTYPE_E5M2;
        const PairFactors factors = fp8_factors(e5m2, q.scaling, f.scales[0]);
#pragma unroll
        for (int part = 0; part < 2; ++part) {
          const uint32_t w[4] = {f.data[part].x, f.data[part].y, f.data[part].z, f.data[part].w};
          const bool special = sm90::has_special_fp8(e5m2, w[0]) ||
                               sm90::has_special_fp8(e5m2, w[1]) ||
                               sm90::has_special_fp8(e5m2, w[2]) ||
                               sm90::has_special_fp8(e5m2, w[3]);
#pragma unroll
          for (int i = 0; i < 8; ++i) {
            natural[8 * part + i] = fp8_pair(e5m2, w[i / 2], i % 2, factors, special);
          }
        }
      }
      if constexpr (kE2m1) {
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t in[4] = {natural[4 * i], natural[4 * i + 1], natural[4 * i + 2],
                                  natural[4 * i + 3]};
          uint32_t out[4];
          interleave_eight(in, out);
#pragma unroll
          for (int j = 0; j < 4; ++j) words[4 * i + j] = out[j];
        }
      } else {
#pragma unroll
        for (int i = 0; i < 16; ++i) words[i] = natural[i];
      }
    }
    const int tile = unit.token / 8;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      *reinterpret_cast<uint2*>(b_block + b_slot(unit.mma0 + j, tile, unit.lane, 0)) =
          make_uint2(words[2 * j], words[2 * j + 1]);
    }
  }

  static __device__ __forceinline__ void run(const Params& params) {
    extern __shared__ __align__(16) unsigned char dynamic_smem[];
    __shared__ __align__(16) uint32_t b_blocks[2][kBlockWords];
    const portable::GemmParams& p = params.gemm;
    const int thread = static_cast<int>(threadIdx.x);
    const int lane = thread % 32;
    const int warp = thread / 32;
    const int g8 = lane / 4;
    const int quad = lane % 4;

    const GroupTable table = group_table_at(dynamic_smem, p.groups);
    const uint32_t flags = build_group_table<kThreads>(
        table, params.sizes, params.offsets, params.index_type, p.groups, params.rows, kTileTokens);
    if (blockIdx.x == 0 && thread == 0 && flags != 0) atomicOr(params.flags, flags);

    const portable::QuantOperand& wq = p.rhs_quant;
    const int64_t n_blocks = ceil_div(p.out_cols, kCtaRows);
    const int64_t items = int64_t{table.tile_prefix[p.groups]} * n_blocks;
    const int64_t k = p.depth;
    const int64_t k_blocks = ceil_div(k, kBlockDepth);
    const int weight_bits = portable::element_bits(wq.dtype);
    const FillUnit unit = fill_unit(kE2m1, thread);

    for (int64_t item = blockIdx.x; item < items; item += gridDim.x) {
      const int g = find_group(table.tile_prefix, p.groups, static_cast<int>(item / n_blocks));
      const ItemPlace place = item_place(item, n_blocks, table.tile_prefix[g],
                                         table.tile_prefix[g + 1] - table.tile_prefix[g]);
      const int64_t n_block = place.n_block;
      const int64_t token0 = table.start[g] + place.token_tile * kTileTokens;
      const int64_t group_end = int64_t{table.start[g]} + table.rows[g];
      const int64_t token_end = token0 + kTileTokens < group_end ? token0 + kTileTokens : group_end;
      const bool two_tiles = token_end - token0 > 8;
      const bool fills = unit.token < 8 || two_tiles;

      // This warp's weight rows.
      const int64_t row0 = n_block * kCtaRows + warp * kWarpRows;
      const bool warp_works = row0 < p.out_cols;
      Weights w;
      {
        const uint8_t* matrix =
            p.rhs_pointers
                ? static_cast<const uint8_t* const*>(p.rhs)[g]
                : static_cast<const uint8_t*>(p.rhs) + g * p.rhs_group_stride * weight_bits / 8;
        const uint8_t* scales = portable::decoded_block_shift(wq.scaling) > 0
                                    ? portable::group_scales(wq, g)
                                    : nullptr;
        const int64_t row = row0 + g8;
        w.row_bytes = p.rhs_stride * weight_bits / 8;
        w.scale_row_length = wq.scale_row_length;
        w.codes = matrix + row * w.row_bytes;
        w.scales = scales != nullptr ? scales + row * w.scale_row_length : nullptr;
        w.inside = 0;
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          if (row + row_offset(i) < p.out_cols) w.inside |= 1u << i;
        }
      }

      float acc[2][2][4] = {};
      FillLoad fill;
      if (fills) {
        fill_load(fill, p, unit, token0 + unit.token, token_end, 0);
        fill_store(fill, p.lhs_quant, unit, b_blocks[0]);
      }
      __syncthreads();
      Step steps[2];
      if (warp_works) load_step(steps[0], w, wq, 0, k, quad);
      for (int64_t kb = 0; kb < k_blocks; ++kb) {
        const int64_t depth0 = kb * kBlockDepth;
        const bool more = kb + 1 < k_blocks;
        if (more && fills) {
          fill_load(fill, p, unit, token0 + unit.token, token_end, depth0 + kBlockDepth);
        }
        if (warp_works) {
          // Two steps a pass, each loading the next into the other buffer;
          // fp8 blocks take two passes, rolled up so that the kernel's code
          // stays a fraction of the instruction cache.
#pragma unroll 1
          for (int pass = 0; pass < kSteps; pass += 2) {
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              const int s = pass + h;
              constexpr int kStepDepth = 8 * chunk_elements(kE2m1);
              const int64_t next = depth0 + (s + 1) * kStepDepth;  // the next block's at the end
              if (next < k) load_step(steps[1 - h], w, wq, next, k, quad);
              if (depth0 + s * kStepDepth < k) {
                compute_step(steps[h], wq, s, b_blocks[kb % 2], two_tiles, lane, acc);
              }
            }
          }
        }
        if (more && fills) fill_store(fill, p.lhs_quant, unit, b_blocks[(kb + 1) % 2]);
        __syncthreads();
      }
      if (warp_works) store(params, g, row0, token0, token_end, lane, acc);
    }
    if (p.zero_rows_end > 0) {
      const int last = p.groups - 1;
      zero_rows(p.out, p.out_type, p.out_stride, p.out_cols,
                int64_t{table.start[last]} + table.rows[last], p.zero_rows_end,
                int64_t{blockIdx.x} * kThreads + thread, int64_t{gridDim.x} * kThreads);
    }
  }

  // The epilogue: lanes of adjacent columns trade one value, so that each
  // holds two adjacent columns of one token (skinny_layout.h, store_pair).
  static __device__ __forceinline__ void store(const Params& params, int g, int64_t row0,
                                               int64_t token0, int64_t token_end, int lane,
                                               const float (&acc)[2][2][4]) {
    const portable::GemmParams& p = params.gemm;
    const float alpha = (p.alpha_per_group != nullptr ? p.alpha_per_group[g] : p.alpha) *
                        portable::fp32_scale(p.lhs_quant, g) *
                        portable::fp32_scale(p.rhs_quant, g) * params.accumulator_scale;
    const void* bias = p.bias == nullptr ? nullptr
                                         : static_cast<const char*>(p.bias) +
                                               g * p.bias_stride *
                                                   (p.bias_type == GG_DTYPE_FP32 ? 4 : 2);
    const portable::ScaledOutputTile out{
        {p.out, p.out_type, p.out_stride, token0, token_end, 0, p.out_cols, alpha,
         p.beta_per_group != nullptr ? p.beta_per_group[g] : p.beta, bias, p.bias_type},
        portable::rowwise_scales(p.lhs_quant, 0),
        p.lhs_quant.scale_row_length,
        portable::rowwise_scales(p.rhs_quant, g),
        p.rhs_quant.scale_row_length};
    const bool odd = gives_low(lane);
#pragma unroll
    for (int mi = 0; mi < 2; ++mi) {
#pragma unroll
      for (int t = 0; t < 2; ++t) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const float low = acc[mi][t][2 * h];
          const float high = acc[mi][t][2 * h + 1];
          const float received = __shfl_xor_sync(0xffffffffu, odd ? low : high, 4);
          const StorePair at = store_pair(lane, mi, t, h);
          const int64_t row = token0 + at.token;
          const int64_t col = row0 + at.col;
          if (row >= token_end || col >= p.out_cols) continue;
          portable::finish_pair(out, row, col, odd ? received : low, odd ? high : received,
                                col + 1 < p.out_cols);
        }
      }
    }
  }
};

template <Tokens kTokens, bool kE2m1>
__global__ void __launch_bounds__(kThreads, 1)
    skinny_kernel(const __grid_constant__ Params params) {
  SkinnyGemm<kTokens, kE2m1>::run(params);
}

}  // namespace gg::skinny
