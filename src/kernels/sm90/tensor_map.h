// Host-side TMA descriptors (CUtensorMap) for the Hopper kernels. The driver
// entry point is fetched through the runtime (cudaGetDriverEntryPointByVersion),
// so the library links no libcuda and loads on machines without a driver.
#pragma once

#include <cuda.h>
#include <stdint.h>

#include <string>

namespace gg::sm90 {

// A row-major tile map over `dims` (innermost first, up to 5) with byte
// strides for the outer dims and a box of `box` elements (innermost first),
// out-of-bounds elements read as zero. 128-byte swizzled (the innermost box
// extent times the element size must then be 128 bytes), or with `swizzle`
// false stored row after row (a multiple of 16 bytes: the codes of a
// quantized operand, which the kernel decodes itself). Returns false with
// the driver's reason in *why_not.
bool encode_tile_map(CUtensorMap* map, CUtensorMapDataType type, int rank, const void* base,
                     const uint64_t* dims, const uint64_t* byte_strides, const uint32_t* box,
                     std::string* why_not, bool swizzle = true);

}  // namespace gg::sm90
