// The grouped-quantize kernels for tiles of 256 tokens (quantize_kernel.cuh).
#include "kernels/quantize/quantize_kernel.cuh"

namespace gg::quantize {

template cudaError_t launch_passes<GG_DTYPE_BF16, 256>(const QuantizeParams&, int, cudaStream_t);
template cudaError_t launch_passes<GG_DTYPE_FP16, 256>(const QuantizeParams&, int, cudaStream_t);

}  // namespace gg::quantize
