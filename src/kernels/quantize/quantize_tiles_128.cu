// The grouped-quantize kernels for tiles of 128 tokens (quantize_kernel.cuh).
#include "kernels/quantize/quantize_kernel.cuh"

namespace gg::quantize {

template cudaError_t launch_passes<GG_DTYPE_BF16, 128>(const QuantizeParams&, int, cudaStream_t);
template cudaError_t launch_passes<GG_DTYPE_FP16, 128>(const QuantizeParams&, int, cudaStream_t);
template cudaError_t launch_passes<GG_DTYPE_FP32, 128>(const QuantizeParams&, int, cudaStream_t);

}  // namespace gg::quantize
