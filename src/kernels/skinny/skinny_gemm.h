// The skinny kernel (skinny_kernel.cuh) as the GPU paths see it. Both hand
// it the problems the plan gives it (plan_skinny: ragged-M, quantized
// weights, groups of a few rows) whose formats it takes, in place of their
// own tiles. It needs no scratch: each CTA builds its group table from the
// device sizes, so a run is one launch.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "groupgemm/groupgemm.h"
#include "plan/plan.h"

namespace gg::skinny {

// Why the skinny kernel cannot run `d`, whatever its sizes ("" when it
// can): ragged-M; weights [G, N, K] (GG_LAYOUT_T), stacked or per expert,
// of e2m1 (MX32 or NV16 blocks) or fp8 (MX32 blocks, fp32 tensor, group or
// rowwise scales); tokens bf16, or quantized as the weights are (e2m1 with
// e2m1, fp8 with fp8); K a whole number of 16-byte chunks of codes; at most
// kSkinnyMaxGroups groups; M, N and K below 2^31.
std::string refusal(const gg_gemm_desc& d);

// Whether a path runs `d` (its `shape`) on the skinny kernel: the plan picks
// it, it takes the formats, and its GPU tests have passed on a device (or
// GROUPGEMM_UNVERIFIED_KERNELS=1: verified_kernels.h). Where the plan picks
// it but it is not taken, GROUPGEMM_LOG=1 prints why.
bool chosen(const gg_gemm_desc& d, const GemmShape& shape);

// Runs `d` on `stream`; the flags word of `workspace` collects the device
// sizes' problems.
gg_status run(const gg_gemm_desc& d, const GemmShape& shape, void* workspace,
              cudaStream_t stream);

}  // namespace gg::skinny
