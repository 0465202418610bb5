// GG_HD marks code that runs on the host and on the device: the number
// formats, the group-size rules and the tile scheduler are one source of truth
// for the CPU reference, the CPU tests and the kernels.
#pragma once

#if defined(__CUDACC__)
#define GG_HD __host__ __device__ __forceinline__
#else
#define GG_HD inline
#endif
