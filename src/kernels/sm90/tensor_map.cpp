// See tensor_map.h. The driver function is looked up once per process.
#include "kernels/sm90/tensor_map.h"

#include <cuda_runtime_api.h>
#include <cudaTypedefs.h>

namespace gg::sm90 {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_function() {
  static PFN_cuTensorMapEncodeTiled_v12000 function = [] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult found{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000,
                                         cudaEnableDefault, &found) != cudaSuccess ||
        found != cudaDriverEntryPointSuccess) {
      entry = nullptr;
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
  }();
  return function;
}

}  // namespace

bool encode_tile_map(CUtensorMap* map, CUtensorMapDataType type, int rank, const void* base,
                     const uint64_t* dims, const uint64_t* byte_strides, const uint32_t* box,
                     std::string* why_not, bool swizzle) {
  const PFN_cuTensorMapEncodeTiled_v12000 encode = encode_function();
  if (encode == nullptr) {
    *why_not = "the CUDA driver has no cuTensorMapEncodeTiled";
    return false;
  }
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  const CUresult result =
      encode(map, type, static_cast<cuuint32_t>(rank), const_cast<void*>(base), dims, byte_strides,
             box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
             swizzle ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE,
             CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (result != CUDA_SUCCESS) {
    *why_not = "cuTensorMapEncodeTiled failed with CUresult " + std::to_string(int(result));
    return false;
  }
  return true;
}

}  // namespace gg::sm90
