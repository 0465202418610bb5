// Per-expert TMA descriptors for operands given as a device array of G
// pointers (GG_TENSOR_POINTER_ARRAY: ragged-M weights, ragged-K weight
// gradients, one matrix per expert). The host cannot read the pointers
// without a sync, so it encodes one map of an expert's matrix (its shape,
// strides and box, any aligned base) and a small kernel, launched just
// before the GEMM on the same stream, writes G copies of it into the
// workspace, each with its expert's address (tensormap.replace). The GEMM
// kernel, launched as the writer's programmatic dependent (it may start
// while the writer runs), then loads or stores through map g for group g,
// after waiting for the writer and an acquire fence on the map
// (acquire_written_map), since the maps are written through the generic
// proxy and read by the TMA unit's. Capturable: replaying the graph
// re-reads the pointers.
#pragma once

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

namespace gg::sm90 {

// Workspace bytes for the maps of `groups` experts (128-byte aligned each).
constexpr size_t expert_maps_bytes(int groups) { return size_t(groups) * sizeof(CUtensorMap); }

// maps[g] = `matrix` with its global address replaced by pointers[g], for
// every g < groups. `maps` must be 64-byte aligned device memory.
cudaError_t write_expert_maps(const CUtensorMap& matrix, const void* pointers, CUtensorMap* maps,
                              int groups, cudaStream_t stream);

}  // namespace gg::sm90
