// Problem shapes and descriptors: see problem.h.
#include "cli/problem.h"

#include <cstring>

#include "cli/elements.h"

namespace gg::cli {

const std::vector<Name<ModelOp>> kModelOpNames = {
    {"fprop", ModelOp::kFprop},      {"dgrad", ModelOp::kDgrad},      {"wgrad", ModelOp::kWgrad},
    {"ragged-m", ModelOp::kRaggedM}, {"ragged-k", ModelOp::kRaggedK},
};

// For ragged-M's rhs "nk" is the nn.Linear [N, K] storage, read transposed.
const std::vector<Name<gg_layout>> kLayoutNames = {
    {"n", GG_LAYOUT_N}, {"t", GG_LAYOUT_T}, {"kn", GG_LAYOUT_N}, {"nk", GG_LAYOUT_T}};

const std::vector<Name<gg_path>> kPathNames = {{"auto", GG_PATH_AUTO},
                                               {"reference", GG_PATH_REFERENCE},
                                               {"portable", GG_PATH_PORTABLE},
                                               {"sm90", GG_PATH_SM90}};

bool operator==(const InputFormat& a, const InputFormat& b) {
  return a.dtype == b.dtype && a.scaling.token_blocks == b.scaling.token_blocks &&
         a.scaling.weight_blocks == b.scaling.weight_blocks && a.scaling.extent == b.scaling.extent;
}

const std::vector<Name<InputFormat>> kInputFormatNames = {
    {"bf16", {GG_DTYPE_BF16, {}}},
    {"fp16", {GG_DTYPE_FP16, {}}},
    {"e4m3", {GG_DTYPE_E4M3, {GG_BLOCK_NONE, GG_BLOCK_NONE, GG_SCALE_TENSOR}}},
    {"e5m2", {GG_DTYPE_E5M2, {GG_BLOCK_NONE, GG_BLOCK_NONE, GG_SCALE_TENSOR}}},
    {"e4m3-group", {GG_DTYPE_E4M3, {GG_BLOCK_NONE, GG_BLOCK_NONE, GG_SCALE_GROUP}}},
    {"e4m3-rowwise", {GG_DTYPE_E4M3, {GG_BLOCK_ROWWISE, GG_BLOCK_ROWWISE, GG_SCALE_NONE}}},
    {"e4m3-blockwise", {GG_DTYPE_E4M3, {GG_BLOCK_1X128, GG_BLOCK_128X128, GG_SCALE_NONE}}},
    {"mxfp8", {GG_DTYPE_E4M3, {GG_BLOCK_MX32, GG_BLOCK_MX32, GG_SCALE_NONE}}},
    {"mxfp4", {GG_DTYPE_E2M1, {GG_BLOCK_MX32, GG_BLOCK_MX32, GG_SCALE_NONE}}},
    {"nvfp4", {GG_DTYPE_E2M1, {GG_BLOCK_NV16, GG_BLOCK_NV16, GG_SCALE_TENSOR}}},
    {"nvfp4-group", {GG_DTYPE_E2M1, {GG_BLOCK_NV16, GG_BLOCK_NV16, GG_SCALE_GROUP}}},
};

const std::vector<Name<bool>> kWeightsNames = {{"stacked", false}, {"per-expert", true}};

Problem model_problem(ModelOp op, int64_t rows, int64_t n, int64_t k, int32_t groups) {
  Problem problem;
  problem.groups = groups;
  problem.rows = rows;
  const bool ragged_k = op == ModelOp::kWgrad || op == ModelOp::kRaggedK;
  problem.op = ragged_k ? GG_OP_RAGGED_K : GG_OP_RAGGED_M;
  // fprop and ragged-m contract over the model's k, dgrad over n (dX = dY W).
  // Ragged-K's lhs is dY [M, n] and its rhs X [M, k]: out[g] is [n, k].
  const bool contracts_n = op == ModelOp::kDgrad || ragged_k;
  problem.lhs_cols = contracts_n ? n : k;
  problem.rhs_cols = contracts_n ? k : n;
  problem.rhs_layout =
      (op == ModelOp::kFprop || op == ModelOp::kRaggedM) ? GG_LAYOUT_T : GG_LAYOUT_N;
  return problem;
}

MatrixSet lhs_matrices(const Problem& problem) {
  return {false, 1, problem.rows, problem.lhs_cols};
}

MatrixSet rhs_matrices(const Problem& problem) {
  if (problem.op == GG_OP_RAGGED_K) return {false, 1, problem.rows, problem.rhs_cols};
  return {true, problem.groups, problem.lhs_cols, problem.rhs_cols};
}

MatrixSet out_matrices(const Problem& problem) {
  if (problem.op == GG_OP_RAGGED_K)
    return {true, problem.groups, problem.lhs_cols, problem.rhs_cols};
  return {false, 1, problem.rows, problem.rhs_cols};
}

MatrixSet bias_matrices(const Problem& problem) {
  return {false, 1, problem.groups, problem.rhs_cols};
}

int64_t storage_index(const MatrixSet& set, gg_layout layout, int64_t matrix, int64_t row,
                      int64_t col) {
  const int64_t within = layout == GG_LAYOUT_T ? col * set.rows + row : row * set.cols + col;
  return matrix * set.rows * set.cols + within;
}

namespace {

gg_tensor tensor_view(const MatrixSet& set, gg_layout layout, gg_dtype dtype, void* data) {
  gg_tensor tensor;
  std::memset(&tensor, 0, sizeof tensor);  // zero strides: packed
  tensor.data = data;
  tensor.dtype = dtype;
  const int64_t rows = layout == GG_LAYOUT_T ? set.cols : set.rows;
  const int64_t cols = layout == GG_LAYOUT_T ? set.rows : set.cols;
  if (set.stacked) {
    tensor.rank = 3;
    tensor.shape[0] = set.count;
    tensor.shape[1] = rows;
    tensor.shape[2] = cols;
  } else {
    tensor.rank = 2;
    tensor.shape[0] = rows;
    tensor.shape[1] = cols;
  }
  return tensor;
}

void set_scales(gg_tensor& tensor, gg_block_scaling blocks, void* block_scales,
                gg_scale_extent extent, float* scale) {
  tensor.block_scaling = blocks;
  if (blocks != GG_BLOCK_NONE) tensor.block_scales = block_scales;
  tensor.scale_extent = extent;
  if (extent != GG_SCALE_NONE) tensor.scale = scale;
}

}  // namespace

gg_gemm_desc make_desc(const Problem& problem, const ProblemData& data, gg_path path) {
  gg_gemm_desc desc;
  std::memset(&desc, 0, sizeof desc);
  desc.op = problem.op;
  desc.num_groups = problem.groups;
  desc.group_sizes.sizes = data.sizes;
  desc.group_sizes.type = data.index_type;
  const InputScaling& scaling = problem.input_scaling;
  desc.lhs = tensor_view(lhs_matrices(problem), problem.lhs_layout, problem.input_dtype, data.lhs);
  set_scales(desc.lhs, scaling.token_blocks, data.lhs_block_scales, scaling.extent, data.lhs_scale);
  desc.rhs = tensor_view(rhs_matrices(problem), problem.rhs_layout, problem.input_dtype, data.rhs);
  set_scales(desc.rhs, problem.op == GG_OP_RAGGED_M ? scaling.weight_blocks : scaling.token_blocks,
             data.rhs_block_scales, scaling.extent, data.rhs_scale);
  desc.out = tensor_view(out_matrices(problem), GG_LAYOUT_N, problem.out_dtype, data.out);
  if (problem.bias) {
    desc.bias = tensor_view(bias_matrices(problem), GG_LAYOUT_N, problem.out_dtype, data.bias);
  }
  if (problem.per_expert) {
    gg_tensor& matrices = problem.op == GG_OP_RAGGED_M ? desc.rhs : desc.out;
    matrices.data = data.expert_pointers;
    matrices.flags |= GG_TENSOR_POINTER_ARRAY;
  }
  desc.lhs_layout = problem.lhs_layout;
  desc.rhs_layout = problem.rhs_layout;
  desc.alpha.value = static_cast<float>(problem.alpha);
  desc.beta.value = static_cast<float>(problem.beta);
  desc.path = path;
  return desc;
}

std::vector<uint64_t> expert_addresses(const Problem& problem, const ProblemData& data) {
  const bool ragged_m = problem.op == GG_OP_RAGGED_M;
  const MatrixSet set = ragged_m ? rhs_matrices(problem) : out_matrices(problem);
  const auto bytes = static_cast<uint64_t>(
      element_bytes(ragged_m ? problem.input_dtype : problem.out_dtype));
  const auto base = reinterpret_cast<uint64_t>(ragged_m ? data.rhs : data.out);
  std::vector<uint64_t> addresses(static_cast<size_t>(set.count));
  for (int64_t g = 0; g < set.count; ++g) {
    const auto offset = static_cast<uint64_t>(g * set.rows * set.cols) * bytes;
    addresses[static_cast<size_t>(g)] = base + offset;
  }
  return addresses;
}

std::vector<uint8_t> index_bytes(const std::vector<int64_t>& sizes, gg_index_type type) {
  const size_t width = type == GG_INDEX_INT32 ? sizeof(int32_t) : sizeof(int64_t);
  std::vector<uint8_t> bytes(sizes.size() * width);
  for (size_t g = 0; g < sizes.size(); ++g) {
    if (type == GG_INDEX_INT32) {
      const auto narrow = static_cast<int32_t>(sizes[g]);
      std::memcpy(&bytes[g * width], &narrow, width);
    } else {
      std::memcpy(&bytes[g * width], &sizes[g], width);
    }
  }
  return bytes;
}

double problem_flops(const Problem& problem, int64_t routed) {
  return 2.0 * static_cast<double>(routed) * static_cast<double>(problem.lhs_cols) *
         static_cast<double>(problem.rhs_cols);
}

double problem_bytes(const Problem& problem, const std::vector<int64_t>& sizes) {
  int64_t routed = 0;
  int64_t live_groups = 0;
  for (const int64_t size : sizes) {
    routed += size;
    live_groups += size > 0 ? 1 : 0;
  }
  const double in = problem.input_dtype == GG_DTYPE_E2M1
                        ? 0.5
                        : static_cast<double>(element_bytes(problem.input_dtype));
  const auto out = static_cast<double>(element_bytes(problem.out_dtype));
  const double out_passes = problem.beta != 0.0 ? 2.0 : 1.0;
  const auto r = static_cast<double>(routed);
  const auto p = static_cast<double>(problem.lhs_cols);
  const auto q = static_cast<double>(problem.rhs_cols);
  if (problem.op == GG_OP_RAGGED_K) {
    // Every group's output is written, empty ones included (beta · out).
    return in * r * (p + q) + out * out_passes * static_cast<double>(problem.groups) * p * q;
  }
  const double bias = problem.bias ? out * static_cast<double>(live_groups) * q : 0.0;
  return in * (r * p + static_cast<double>(live_groups) * p * q) + out * out_passes * r * q + bias;
}

}  // namespace gg::cli
