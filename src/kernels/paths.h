// The GPU paths as the API layer sees them. Each path answers three questions
// about a validated, normalized descriptor (every stride filled in): can it
// run it (and if not, why — the text becomes gg_last_error), how much
// workspace it needs beyond the flags, and run it on a stream. The API layer
// owns validation and dispatch; the paths own nothing but their kernels.
#pragma once

#include <cuda_runtime_api.h>
#include <stddef.h>

#include <string>

#include "groupgemm/groupgemm.h"

namespace gg {

// Portable path: sm_80+ tensor cores (mma.sync), kernels/portable/.
// Takes bf16 x bf16 or fp16 x fp16 without scales, out and bias bf16, fp16 or
// fp32; ragged-M lhs in GG_LAYOUT_N; pointer arrays for ragged-M rhs and
// ragged-K out only. Alignment: the data pointers of lhs, rhs, out and bias,
// and every stride but the innermost (row strides; the group stride of a
// stacked rank-3 view), multiples of 16 bytes; for a pointer array, each of
// its G pointers 16-byte aligned too (device memory: not checked by the host).
// Shapes are free: K, N, P, Q, M need not be multiples of anything.
// Scratch: 32 + 32 G bytes (group records written by a metadata kernel).
bool portable_gemm_supports(const gg_gemm_desc& desc, std::string* why_not);
size_t portable_gemm_scratch_bytes(const gg_gemm_desc& desc);
gg_status portable_gemm_run(const gg_gemm_desc& desc, void* workspace, size_t workspace_bytes,
                            cudaStream_t stream);

// Hopper path: sm_90a TMA + wgmma, kernels/sm90/. Same alignment rules as the
// portable path (16-byte aligned pointers and row strides), and the same
// pointer arrays; at most 2048 groups, and every dimension of the op (M, K,
// N; M, P, Q) in [1, 2^31), so that AUTO gives empty problems to the
// portable path. Scratch: 128 G bytes for a pointer array (a TMA map per
// expert, written on the device before each launch), else none.
bool sm90_gemm_supports(const gg_gemm_desc& desc, std::string* why_not);
size_t sm90_gemm_scratch_bytes(const gg_gemm_desc& desc);
gg_status sm90_gemm_run(const gg_gemm_desc& desc, void* workspace, size_t workspace_bytes,
                        cudaStream_t stream);

}  // namespace gg

namespace gg {

// Grouped quantize on the GPU (kernels/quantize/): one kernel for every GPU
// path, sm_80 and later, every format the reference quantizes. Alignment:
// none beyond the element size (vector loads and word stores are used where
// the addresses allow). Scratch: 4 (G + 1) bytes of amax words, and 4 bytes
// a scale entry of the outputs under row scales (their rows' maxima), which
// a run zeroes itself (a memset): whatever another launch sharing the
// workspace left there does not matter.
size_t gpu_quantize_scratch_bytes(const gg_quantize_desc& desc);
gg_status gpu_quantize_run(const gg_quantize_desc& desc, void* workspace, cudaStream_t stream);

}  // namespace gg
