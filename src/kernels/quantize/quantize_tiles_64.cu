// The grouped-quantize kernels for tiles of 64 tokens (quantize_kernel.cuh).
#include "kernels/quantize/quantize_kernel.cuh"

namespace gg::quantize {

template cudaError_t launch_passes<GG_DTYPE_BF16, 64>(const QuantizeParams&, int, cudaStream_t);
template cudaError_t launch_passes<GG_DTYPE_FP16, 64>(const QuantizeParams&, int, cudaStream_t);
template cudaError_t launch_passes<GG_DTYPE_FP32, 64>(const QuantizeParams&, int, cudaStream_t);

}  // namespace gg::quantize
