// A grouped GEMM as the CLI describes it to the library.
//
// Model ops name the three products of an MoE layer whose forward pass is
// Y[M, n] = X[M, k] · W[g]ᵀ with W stored [G, n, k] (nn.Linear layout):
//   fprop     ragged-M, Y = X · W[g]ᵀ        (rhs read transposed)
//   dgrad     ragged-M, dX = dY · W[g]       (the same W, read as [K=n, N=k])
//   wgrad     ragged-K, dW[g] = dY[g]ᵀ · X[g] (out [G, n, k])
//   ragged-m, ragged-k  the plain ops, layouts chosen freely.
// Every operand is one or G logical matrices (MatrixSet); a T layout stores
// each matrix transposed. With that one rule the data builder, the fp64
// product and the cuBLAS baselines all address operands the same way.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "cli/args.h"
#include "groupgemm/groupgemm.h"

namespace gg::cli {

enum class ModelOp { kFprop, kDgrad, kWgrad, kRaggedM, kRaggedK };

extern const std::vector<Name<ModelOp>> kModelOpNames;
extern const std::vector<Name<gg_layout>> kLayoutNames;
extern const std::vector<Name<gg_path>> kPathNames;

// The scales the operands carry (groupgemm.h: value = element x block
// scale x fp32 scale): block scales along the contraction, of the token
// operands (lhs, and ragged-K's rhs) and of ragged-M's weights (rhs), and an
// fp32 scale, one a tensor or one a group.
struct InputScaling {
  gg_block_scaling token_blocks = GG_BLOCK_NONE;
  gg_block_scaling weight_blocks = GG_BLOCK_NONE;
  gg_scale_extent extent = GG_SCALE_NONE;
};

// An operand format as --dtype names it: elements and their scales.
struct InputFormat {
  gg_dtype dtype;
  InputScaling scaling;
};
bool operator==(const InputFormat& a, const InputFormat& b);

// bf16, fp16; e4m3, e5m2 (fp8, a tensor scale); e4m3-group (a scale per
// group); e4m3-rowwise (a scale per row of each stored operand: per token,
// per output channel; ragged-K: per row and group); e4m3-blockwise (1x128
// blocks, 128x128 on weights); mxfp8, mxfp4; nvfp4, nvfp4-group (nvfp4 with
// a tensor or a group scale).
extern const std::vector<Name<InputFormat>> kInputFormatNames;

struct Problem {
  gg_op op = GG_OP_RAGGED_M;
  int32_t groups = 1;
  int64_t rows = 0;      // M: the ragged dimension's capacity
  int64_t lhs_cols = 0;  // ragged-M: K, the contraction; ragged-K: P, out rows
  int64_t rhs_cols = 0;  // the output's columns: N (ragged-M) or Q (ragged-K)
  gg_layout lhs_layout = GG_LAYOUT_N;
  gg_layout rhs_layout = GG_LAYOUT_N;
  gg_dtype input_dtype = GG_DTYPE_BF16;
  InputScaling input_scaling;
  gg_dtype out_dtype = GG_DTYPE_BF16;
  double alpha = 1.0;
  double beta = 0.0;
  bool bias = false;  // ragged-M only
  // Per-expert matrices: ragged-M rhs or ragged-K out given as a device
  // array of G pointers (GG_TENSOR_POINTER_ARRAY) instead of one stacked tensor.
  bool per_expert = false;
};

extern const std::vector<Name<bool>> kWeightsNames;  // --weights: stacked, per-expert

// The API problem of a model op on M rows. Model dims: Y[M, n] = X[M, k] W[g]ᵀ.
Problem model_problem(ModelOp op, int64_t rows, int64_t n, int64_t k, int32_t groups);

// One or G logical matrices of rows x cols; `stacked` operands are rank 3
// ([count, rows, cols]) even when count is 1.
struct MatrixSet {
  bool stacked;
  int64_t count, rows, cols;
  int64_t elements() const { return count * rows * cols; }
};

MatrixSet lhs_matrices(const Problem& problem);
MatrixSet rhs_matrices(const Problem& problem);
MatrixSet out_matrices(const Problem& problem);
MatrixSet bias_matrices(const Problem& problem);

// Elements from the start of the storage to logical element (matrix, row,
// col) of a set stored in `layout`.
int64_t storage_index(const MatrixSet& set, gg_layout layout, int64_t matrix, int64_t row,
                      int64_t col);

// Where a problem's data lives (host memory for the reference, device
// memory otherwise). Scales are read only where input_scaling asks for them.
struct ProblemData {
  void* lhs = nullptr;
  void* rhs = nullptr;
  void* out = nullptr;
  void* bias = nullptr;
  const void* sizes = nullptr;
  gg_index_type index_type = GG_INDEX_INT32;
  void* lhs_block_scales = nullptr;
  void* rhs_block_scales = nullptr;
  float* lhs_scale = nullptr;  // 1 or G fp32 values
  float* rhs_scale = nullptr;
  void* expert_pointers = nullptr;  // per_expert: the array of G matrix addresses
};

// The addresses of the G matrices of a per-expert problem's per-group
// operand (rhs of ragged-M, out of ragged-K), inside its stacked storage at
// `data`: what a per_expert descriptor's pointer array holds.
std::vector<uint64_t> expert_addresses(const Problem& problem, const ProblemData& data);

gg_gemm_desc make_desc(const Problem& problem, const ProblemData& data, gg_path path);

// The index array the library reads, in `type`.
std::vector<uint8_t> index_bytes(const std::vector<int64_t>& sizes, gg_index_type type);

// 2 · rows · K · N (ragged-M) or 2 · rows · P · Q (ragged-K) for `routed` rows.
double problem_flops(const Problem& problem, int64_t routed);

// Bytes that must move: each input element the sizes make live read once
// as stored (e2m1: half a byte; weights of empty experts need not be read),
// each output element written once, and read once more when beta is not
// zero. Block scales: bench_case.h's counted_bytes.
double problem_bytes(const Problem& problem, const std::vector<int64_t>& sizes);

}  // namespace gg::cli
