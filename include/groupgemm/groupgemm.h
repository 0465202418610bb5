/*
 * groupgemm — grouped matrix products for Mixture-of-Experts layers.
 *
 * The one ABI of the library. Plain C, no CUDA headers needed: a stream is the
 * opaque `struct CUstream_st*` that `cudaStream_t` names.
 *
 * Problem model
 *   G groups (experts). `sizes[G]` (int32 or int64) lives in device memory and
 *   is never read by the host. The rows of a ragged tensor are stored group
 *   after group: group g owns rows [off[g], off[g] + sizes[g]). `off` is an
 *   optional device array; by default it is the exclusive prefix sum of sizes,
 *   computed on the device. The ragged tensor's row count M is its capacity:
 *   rows past the last group are never read for results and never written
 *   (unless GG_GEMM_ZERO_UNUSED_ROWS asks for zeros there).
 *
 *   GG_OP_RAGGED_M (fprop, dgrad):
 *     out[g rows] = alpha_g * lhs[g rows] * op(rhs[g]) + beta_g * out[g rows] + bias[g]
 *     lhs [M, K]; rhs [G, K, N] (GG_LAYOUT_N) or [G, N, K] read transposed
 *     (GG_LAYOUT_T, the nn.Linear layout); out [M, N].
 *   GG_OP_RAGGED_K (wgrad):
 *     out[g] = alpha_g * lhs[g rows]^T * rhs[g rows] + beta_g * out[g]
 *     lhs [M, P] (GG_LAYOUT_N) or its transposed copy [P, M] (GG_LAYOUT_T);
 *     rhs [M, Q] or [Q, M] likewise; out [G, P, Q].
 *
 *   A group of size 0 computes nothing in ragged-M; in ragged-K it writes
 *   beta_g * out[g] (zeros when beta is 0) for that group only.
 *
 * Operand formats (lhs x rhs; out is bf16, fp16 or fp32 for all of them)
 *   bf16 x bf16, fp16 x fp16.
 *   Both quantized, with one recipe: fp8 with a tensor or group scale; fp8
 *   1x128 (activations) with 1x128 or 128x128 (weights); fp8 rowwise; MX
 *   (e8m0 per 32: mxfp8 e4m3/e5m2 and mxfp4 e2m1); nvfp4. Within a recipe the
 *   element types may differ where the scales agree: e4m3 with e5m2 for fp8,
 *   and any two MX element types (mxfp8 x mxfp4 included).
 *   Weight-only (ragged-M only): bf16 or fp16 lhs x a quantized rhs (fp8
 *   with a tensor or group scale, fp8 rowwise, mxfp8, mxfp4 or nvfp4); the
 *   rhs is dequantized exactly. Ragged-K has no weight operand: a 16-bit
 *   operand with a quantized one there is GG_STATUS_NOT_SUPPORTED.
 *   Everything else (16-bit x 16-bit of two types, two recipes) is
 *   GG_STATUS_NOT_SUPPORTED, and so is any format a path does not implement:
 *   the GPU paths run bf16 and fp16 only; GG_PATH_REFERENCE runs them all.
 *
 * Errors
 *   Every entry point returns a gg_status. On failure gg_last_error() returns a
 *   thread-local message that names the offending argument. Device-side sizes
 *   that are negative or overflow the buffer are clamped (never an
 *   out-of-bounds access) and reported through gg_check().
 */
#ifndef GROUPGEMM_GROUPGEMM_H
#define GROUPGEMM_GROUPGEMM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define GG_API __declspec(dllexport)
#else
#define GG_API __attribute__((visibility("default")))
#endif

#define GG_VERSION_MAJOR 0
#define GG_VERSION_MINOR 1
#define GG_VERSION_PATCH 0

typedef struct CUstream_st* gg_stream_t;

/* Every enum is int-sized, as C makes it. C++ (the library's own code)
 * declares int its fixed underlying type, so that any int a C caller
 * stores in a field, one outside the enumerators too (the checks refuse it
 * by name), is a value of the type rather than undefined behaviour. */
#ifdef __cplusplus
#define GG_ENUM(name) enum name : int
#else
#define GG_ENUM(name) enum name
#endif

typedef GG_ENUM(gg_status) {
  GG_STATUS_SUCCESS = 0,
  GG_STATUS_INVALID_ARGUMENT = 1, /* a host-visible argument is wrong */
  GG_STATUS_NOT_SUPPORTED = 2,    /* expressible, but no path implements it */
  GG_STATUS_WORKSPACE_TOO_SMALL = 3,
  GG_STATUS_NO_DEVICE = 4,        /* a GPU path was asked for without a usable GPU */
  GG_STATUS_CUDA_ERROR = 5,       /* a CUDA runtime call failed */
  GG_STATUS_INTERNAL_ERROR = 6
} gg_status;

/* Element types. Sub-byte e2m1 is packed two per byte, the even element in
 * the low nibble; its shapes and strides count elements. */
typedef GG_ENUM(gg_dtype) {
  GG_DTYPE_BF16 = 0,
  GG_DTYPE_FP16 = 1,
  GG_DTYPE_FP32 = 2,
  GG_DTYPE_E4M3 = 3, /* fp8, finite-only (0x7f/0xff are NaN), max 448 */
  GG_DTYPE_E5M2 = 4, /* fp8, IEEE-like, max 57344 */
  GG_DTYPE_E2M1 = 5  /* fp4, max 6 */
} gg_dtype;

/* Block scales: one scale per block of consecutive elements along the
 * contraction dimension (for quantize: along the output's own blocking dim).
 * Values are part of the ABI: new ones are appended, never renumbered. */
typedef GG_ENUM(gg_block_scaling) {
  GG_BLOCK_NONE = 0,
  GG_BLOCK_MX32 = 1,     /* e8m0 per 32 elements (OCP MX v1.0): mxfp8 with
                            e4m3/e5m2 elements, mxfp4 with e2m1 */
  GG_BLOCK_NV16 = 2,     /* e4m3 per 16 elements (nvfp4) */
  GG_BLOCK_1X128 = 3,    /* fp32 per 1 x 128 elements */
  GG_BLOCK_128X128 = 4,  /* fp32 per 128 x 128 tile (stacked weights) */
  GG_BLOCK_ROWWISE = 5   /* fp32 per row: one block spans the whole
                            contraction (fp8 rowwise: a scale per token of
                            activations, per output channel of weights) */
} gg_block_scaling;

/* An extra fp32 multiplier: none, one per tensor, or one per group. */
typedef GG_ENUM(gg_scale_extent) {
  GG_SCALE_NONE = 0,
  GG_SCALE_TENSOR = 1,
  GG_SCALE_GROUP = 2
} gg_scale_extent;

typedef GG_ENUM(gg_layout) {
  GG_LAYOUT_N = 0, /* stored as the canonical shape of the operand's role */
  GG_LAYOUT_T = 1  /* stored transposed */
} gg_layout;

typedef GG_ENUM(gg_op) { GG_OP_RAGGED_M = 0, GG_OP_RAGGED_K = 1 } gg_op;

typedef GG_ENUM(gg_index_type) { GG_INDEX_INT32 = 0, GG_INDEX_INT64 = 1 } gg_index_type;

typedef GG_ENUM(gg_path) {
  GG_PATH_AUTO = 0,      /* fastest GPU path for the device and problem */
  GG_PATH_REFERENCE = 1, /* CPU oracle: every pointer is host memory */
  GG_PATH_PORTABLE = 2,  /* sm_80+ tensor-core kernels */
  GG_PATH_SM90 = 3       /* Hopper TMA + wgmma kernels */
} gg_path;

/* Tensor view flags. */
#define GG_TENSOR_POINTER_ARRAY 1u /* rank 3: data (and block_scales) is an
                                      array of G pointers, one matrix each */

/* A tensor view. Shapes and strides are in elements; the innermost stride
 * must be 1. A zero stride means "packed": strides[i] = product of the later
 * dims. Block scales are packed row-major with the shape gg_block_scale_shape
 * returns; `scale` holds 1 (GG_SCALE_TENSOR) or G (GG_SCALE_GROUP) fp32
 * values. For dequantization: value = element * block_scale * scale. A
 * view with no elements (a dimension of 0, not a pointer array) may have
 * NULL data and block scales, as a framework's empty tensor does: nothing is
 * read or written there. The exceptions are views whose NULL data says they
 * are absent: a GEMM's bias, a quantize output (gg_quantize_desc). */
typedef struct gg_tensor {
  void* data;
  gg_dtype dtype;
  int32_t rank;        /* 2: [rows, cols]; 3: [G, rows, cols] */
  int64_t shape[3];
  int64_t strides[3];
  uint32_t flags;
  gg_block_scaling block_scaling;
  void* block_scales;
  gg_scale_extent scale_extent;
  float* scale;
} gg_tensor;

/* Per-group sizes (and optional start offsets), in device memory for GPU
 * paths, host memory for GG_PATH_REFERENCE. */
typedef struct gg_group_sizes {
  const void* sizes;   /* [G] */
  const void* offsets; /* [G] start rows, or NULL for the prefix sum of sizes */
  gg_index_type type;  /* of both arrays */
} gg_group_sizes;

/* alpha or beta: a host value, or (when per_group is not NULL) a device fp32
 * array [G] (host array for GG_PATH_REFERENCE). */
typedef struct gg_scalar {
  float value;
  const float* per_group;
} gg_scalar;

typedef struct gg_gemm_desc {
  gg_op op;
  int32_t num_groups; /* G > 0 */
  gg_group_sizes group_sizes;
  gg_tensor lhs;
  gg_tensor rhs;
  gg_tensor out;      /* bf16, fp16 or fp32 */
  gg_tensor bias;     /* ragged-M only: [G, N]; data NULL for none */
  gg_layout lhs_layout;
  gg_layout rhs_layout;
  gg_scalar alpha;
  gg_scalar beta;
  gg_path path;
  uint32_t flags;     /* GG_GEMM_* options; 0 for none */
} gg_gemm_desc;

/* gg_gemm_desc.flags.
 * GG_GEMM_ZERO_UNUSED_ROWS (ragged-M, group_sizes.offsets NULL): the same
 *   launch also writes zeros to the output rows past the last group,
 *   [min(M, sum(sizes)), M), which are otherwise never written. This is
 *   jax.lax.ragged_dot's definition of those rows, and what an input
 *   gradient needs, without clearing the whole output first. */
#define GG_GEMM_ZERO_UNUSED_ROWS 1u

/* Grouped quantize: input [M, K] ragged (group_sizes set) or [G, N, K]
 * stacked (group_sizes.sizes NULL). Each requested output (data not NULL,
 * even where the output is empty: its fp32 scales are still written) names
 * its format through dtype, block_scaling and scale_extent:
 *   rowwise    same shape as the input, blocks along K;
 *   columnwise transposed ([K, M] or [G, K, N]), blocks along the input's
 *              rows, restarting at each group start.
 * Scales (block scales and the fp32 `scale`) are outputs. amax (optional)
 * receives the per-group (or, for stacked input, per-matrix) absolute max.
 * Output formats: fp8 with a tensor or group scale; fp8 1x128, 128x128
 * (stacked input only) or rowwise; mxfp8; mxfp4; nvfp4 with a tensor or
 * group scale. Rules (OCP MX v1.0 for MX; src/formats/block_quant.h):
 *   fp8 scale = amax / fp8 max (448 e4m3, 57344 e5m2) as an fp32 division,
 *     not rounded to a power of two; 1 where amax is 0 (a zero block, an
 *     empty group of a rowwise output); elements x / scale, nearest even,
 *     saturating.
 *   MX scale = 2^(floor(log2(block amax)) - emax), emax 8 (e4m3), 15 (e5m2),
 *     2 (e2m1); elements x / scale, nearest even, saturating.
 * The GPU quantizer writes every format but mxfp4 and fp8 rowwise, which
 * GG_PATH_REFERENCE computes. */
typedef struct gg_quantize_desc {
  int32_t num_groups;
  gg_group_sizes group_sizes;
  gg_tensor input;
  gg_tensor rowwise;
  gg_tensor columnwise;
  float* amax;
  gg_path path;
} gg_quantize_desc;

/* Device-side problems, reported by gg_check as a bit set. */
#define GG_DEVICE_NEGATIVE_SIZE 1u          /* a size < 0 was read as 0 */
#define GG_DEVICE_SIZES_EXCEED_ROWS 2u      /* sum(sizes) > M: clamped to M */
#define GG_DEVICE_OFFSET_OUT_OF_RANGE 4u    /* an offset outside [0, M]: clamped */

/* ---- library ---- */
GG_API const char* gg_version_string(void);
GG_API int gg_version(void); /* major * 10000 + minor * 100 + patch */
GG_API const char* gg_status_string(gg_status status);
/* Message for the last failing call on this thread ("" after a success). */
GG_API const char* gg_last_error(void);
/* Whether a path can run here (device: a CUDA ordinal; ignored for the
 * reference). *available = 1 or 0; the reason is in gg_last_error() when 0. */
GG_API gg_status gg_path_available(gg_path path, int device, int* available);

/* Shape of the packed block-scale tensor of a `rows x cols` matrix whose
 * blocks run along `block_dim` (0: along rows, 1: along cols). When the
 * blocking runs along a ragged dimension of `num_groups` groups (ragged = 1),
 * blocks restart at every group start and the shape is the capacity for any
 * sizes summing to at most that dimension's length. Writes out[0] x out[1].
 * GG_BLOCK_ROWWISE has one block along the whole blocked dimension: [rows, 1]
 * along cols, [1, cols] along rows. Along a ragged dimension the block is the
 * whole group and group g's scale is entry g whatever the sizes:
 * [rows, num_groups] along ragged cols (a columnwise copy for wgrad),
 * [num_groups, cols] along ragged rows. An empty group keeps its entry, which
 * the quantizer sets to 1 (unless the output holds no elements at all). */
GG_API gg_status gg_block_scale_shape(gg_block_scaling scaling, int64_t rows, int64_t cols,
                                      int block_dim, int ragged, int32_t num_groups,
                                      int64_t out[2]);

/* ---- grouped GEMM ---- */
/* The workspace is caller-owned device memory (host memory for the
 * reference), zero-filled before its first use; it carries the device-side
 * error flags between launches, and a launch's own metadata (group records,
 * per-expert and per-group TMA maps), so launches that share a workspace must
 * not overlap: run them on one stream, or order their streams. */
GG_API gg_status gg_grouped_gemm_workspace_size(const gg_gemm_desc* desc, size_t* bytes);
GG_API gg_status gg_grouped_gemm(const gg_gemm_desc* desc, void* workspace,
                                 size_t workspace_bytes, gg_stream_t stream);

/* ---- grouped quantize ---- */
GG_API gg_status gg_grouped_quantize_workspace_size(const gg_quantize_desc* desc, size_t* bytes);
GG_API gg_status gg_grouped_quantize(const gg_quantize_desc* desc, void* workspace,
                                     size_t workspace_bytes, gg_stream_t stream);

/* Reads and clears the device-side error flags of a workspace: waits for
 * `stream`, so call it outside graph capture. `path` says where the workspace
 * lives (GG_PATH_REFERENCE: host memory). */
GG_API gg_status gg_check(void* workspace, gg_path path, gg_stream_t stream, uint32_t* flags);

#ifdef __cplusplus
}
#endif

#endif /* GROUPGEMM_GROUPGEMM_H */
