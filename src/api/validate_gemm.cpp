// See validate.h. The GEMM descriptor: each tensor against its role, then the
// shapes that tie the tensors together, then the operand formats as a pair,
// then alpha and beta.
//
// Roles (validate.h's contract, from groupgemm.h):
//   ragged-M: lhs [M, K] ragged; rhs [G, K, N] (N) or [G, N, K] (T), maybe a
//             pointer array; out [M, N]; bias [G, N] or none.
//   ragged-K: lhs [M, P] (N) or [P, M] (T) ragged; rhs [M, Q] (N) or [Q, M]
//             (T) ragged; out [G, P, Q], maybe a pointer array; no bias.
#include <math.h>

#include <string>

#include "api/describe.h"
#include "api/error.h"
#include "api/field_checks.h"
#include "api/names.h"
#include "api/validate.h"
#include "formats/codecs.h"

namespace gg::api {
namespace {

struct GemmRoles {
  TensorRole lhs, rhs, out, bias;
};

GemmRoles roles_of(const gg_gemm_desc& desc) {
  const bool lhs_t = desc.lhs_layout == GG_LAYOUT_T;
  const bool rhs_t = desc.rhs_layout == GG_LAYOUT_T;
  if (desc.op == GG_OP_RAGGED_M) {
    return GemmRoles{{"desc->lhs", 2, "[M, K]", false, true},
                     {"desc->rhs", 3,
                      rhs_t ? "[G, N, K] (rhs_layout T)" : "[G, K, N] (rhs_layout N)", true, false},
                     {"desc->out", 2, "[M, N]", false, false},
                     {"desc->bias", 2, "[G, N]", false, false}};
  }
  return GemmRoles{
      {"desc->lhs", 2, lhs_t ? "[P, M] (lhs_layout T)" : "[M, P] (lhs_layout N)", false, true},
      {"desc->rhs", 2, rhs_t ? "[Q, M] (rhs_layout T)" : "[M, Q] (rhs_layout N)", false, true},
      {"desc->out", 3, "[G, P, Q]", true, false},
      {"desc->bias", 2, "absent for ragged-K", false, false}};
}

gg_status check_enums(const gg_gemm_desc& desc) {
  if (op_name(desc.op) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "desc->op is not a gg_op (got %d)",
                static_cast<int>(desc.op));
  }
  if (path_name(desc.path) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "desc->path is not a gg_path (got %d)",
                static_cast<int>(desc.path));
  }
  if (layout_name(desc.lhs_layout) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "desc->lhs_layout is not a gg_layout (got %d)",
                static_cast<int>(desc.lhs_layout));
  }
  if (layout_name(desc.rhs_layout) == nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "desc->rhs_layout is not a gg_layout (got %d)",
                static_cast<int>(desc.rhs_layout));
  }
  if (desc.op == GG_OP_RAGGED_M && desc.lhs_layout != GG_LAYOUT_N) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "desc->lhs_layout must be GG_LAYOUT_N for ragged-M (lhs is [M, K], ragged rows)");
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_ragged_m_shapes(const gg_gemm_desc& desc, const GemmRoles& roles) {
  const bool rhs_t = desc.rhs_layout == GG_LAYOUT_T;
  const int rhs_k = rhs_t ? 2 : 1;
  const int rhs_n = rhs_t ? 1 : 2;
  const int64_t m = desc.lhs.shape[0];
  const int64_t k = desc.lhs.shape[1];
  const int64_t n = desc.rhs.shape[rhs_n];
  const std::string n_name = text_printf("N = desc->rhs.shape[%d]", rhs_n);
  GG_RETURN_IF_ERROR(check_dim(roles.rhs, desc.rhs, 0, "num_groups", desc.num_groups));
  GG_RETURN_IF_ERROR(check_dim(roles.rhs, desc.rhs, rhs_k, "K = desc->lhs.shape[1]", k));
  GG_RETURN_IF_ERROR(check_dim(roles.out, desc.out, 0, "M = desc->lhs.shape[0]", m));
  GG_RETURN_IF_ERROR(check_dim(roles.out, desc.out, 1, n_name.c_str(), n));
  if (desc.bias.data != nullptr) {
    GG_RETURN_IF_ERROR(check_dim(roles.bias, desc.bias, 0, "num_groups", desc.num_groups));
    GG_RETURN_IF_ERROR(check_dim(roles.bias, desc.bias, 1, n_name.c_str(), n));
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_ragged_k_shapes(const gg_gemm_desc& desc, const GemmRoles& roles) {
  const int lhs_m = desc.lhs_layout == GG_LAYOUT_T ? 1 : 0;
  const int rhs_m = desc.rhs_layout == GG_LAYOUT_T ? 1 : 0;
  const std::string m_name = text_printf("M = desc->lhs.shape[%d]", lhs_m);
  const std::string p_name = text_printf("P = desc->lhs.shape[%d]", 1 - lhs_m);
  const std::string q_name = text_printf("Q = desc->rhs.shape[%d]", 1 - rhs_m);
  GG_RETURN_IF_ERROR(check_dim(roles.rhs, desc.rhs, rhs_m, m_name.c_str(), desc.lhs.shape[lhs_m]));
  GG_RETURN_IF_ERROR(check_dim(roles.out, desc.out, 0, "num_groups", desc.num_groups));
  GG_RETURN_IF_ERROR(check_dim(roles.out, desc.out, 1, p_name.c_str(), desc.lhs.shape[1 - lhs_m]));
  GG_RETURN_IF_ERROR(check_dim(roles.out, desc.out, 2, q_name.c_str(), desc.rhs.shape[1 - rhs_m]));
  return GG_STATUS_SUCCESS;
}

// The scaling recipe of an operand. Two quantized operands follow one
// recipe; within it any element types go together (check_scaling has tied
// each recipe to its elements: fp8 for the fp8 recipes, e2m1 for nvfp4, fp8
// or e2m1 for MX, whose e8m0 scales per 32 are the same whatever the element).
enum class Recipe { kUnscaled16, kFp8, kFp8Blockwise, kFp8Rowwise, kMx, kNvfp4 };

Recipe recipe_of(const gg_tensor& tensor) {
  switch (tensor.block_scaling) {
    case GG_BLOCK_MX32:
      return Recipe::kMx;
    case GG_BLOCK_NV16:
      return Recipe::kNvfp4;
    case GG_BLOCK_1X128:
    case GG_BLOCK_128X128:
      return Recipe::kFp8Blockwise;
    case GG_BLOCK_ROWWISE:
      return Recipe::kFp8Rowwise;
    case GG_BLOCK_NONE:
      break;
  }
  return is_fp8(tensor.dtype) ? Recipe::kFp8 : Recipe::kUnscaled16;
}

// Operand formats the API can express but the library does not implement.
gg_status check_operand_format(const char* name, const gg_tensor& operand) {
  if (operand.dtype == GG_DTYPE_FP32) {
    return fail(GG_STATUS_NOT_SUPPORTED,
                "%s.dtype fp32: fp32 operands are not supported (operands are bf16, fp16, fp8, "
                "mxfp4 or nvfp4)",
                name);
  }
  if (operand.dtype == GG_DTYPE_E2M1 && operand.block_scaling == GG_BLOCK_NONE) {
    return fail(GG_STATUS_NOT_SUPPORTED,
                "%s: e2m1 without block scales is not supported (nvfp4 is e2m1 with "
                "GG_BLOCK_NV16, mxfp4 e2m1 with GG_BLOCK_MX32)",
                name);
  }
  return GG_STATUS_SUCCESS;
}

// A 16-bit lhs with quantized weights (rhs) of ragged-M: the rhs is
// dequantized. Weights quantized with a per-row, per-32, per-16 or whole-tensor
// (or group) scale qualify; blockwise 1x128 / 128x128 is an activation-and-
// weight recipe, paired only with itself.
gg_status check_weight_only(const gg_gemm_desc& desc, const std::string& lhs,
                            const std::string& rhs) {
  if (recipe_of(desc.lhs) != Recipe::kUnscaled16) {
    return fail(GG_STATUS_NOT_SUPPORTED,
                "desc->lhs (%s) x desc->rhs (%s): a quantized lhs needs a quantized rhs; with one "
                "16-bit operand (weight-only) the quantized one is the rhs, the weights",
                lhs.c_str(), rhs.c_str());
  }
  if (desc.op != GG_OP_RAGGED_M) {
    return fail(GG_STATUS_NOT_SUPPORTED,
                "desc->lhs (%s) x desc->rhs (%s): weight-only (16-bit lhs, quantized rhs) is for "
                "ragged-M; ragged-K contracts two token operands, neither of them weights: "
                "quantize both or neither",
                lhs.c_str(), rhs.c_str());
  }
  if (recipe_of(desc.rhs) == Recipe::kFp8Blockwise) {
    return fail(GG_STATUS_NOT_SUPPORTED,
                "desc->lhs (%s) x desc->rhs (%s): weight-only takes fp8 with a tensor or group "
                "scale, fp8 rowwise, mxfp8, mxfp4 or nvfp4 weights; fp8 blockwise pairs only with "
                "fp8 blockwise",
                lhs.c_str(), rhs.c_str());
  }
  return GG_STATUS_SUCCESS;
}

// bf16 x bf16 or fp16 x fp16; two quantized operands of one recipe (fp8
// mixes e4m3 and e5m2, the usual pairing of gradients with activations, and
// MX mixes its element types the same way); or weight-only.
gg_status check_operand_pair(const gg_gemm_desc& desc) {
  GG_RETURN_IF_ERROR(check_operand_format("desc->lhs", desc.lhs));
  GG_RETURN_IF_ERROR(check_operand_format("desc->rhs", desc.rhs));
  const Recipe lhs = recipe_of(desc.lhs);
  const Recipe rhs = recipe_of(desc.rhs);
  const std::string lhs_name = format_name(desc.lhs);
  const std::string rhs_name = format_name(desc.rhs);
  if (lhs == Recipe::kUnscaled16 && rhs == Recipe::kUnscaled16) {
    if (desc.lhs.dtype == desc.rhs.dtype) return GG_STATUS_SUCCESS;
    return fail(GG_STATUS_NOT_SUPPORTED,
                "desc->lhs (%s) x desc->rhs (%s): operands of different formats are not "
                "supported (16-bit operands share one type)",
                lhs_name.c_str(), rhs_name.c_str());
  }
  if (lhs == Recipe::kUnscaled16 || rhs == Recipe::kUnscaled16) {
    return check_weight_only(desc, lhs_name, rhs_name);
  }
  if (lhs != rhs) {
    return fail(GG_STATUS_NOT_SUPPORTED,
                "desc->lhs (%s) x desc->rhs (%s): operands of different formats are not "
                "supported (quantized operands follow one recipe: fp8 with tensor or group "
                "scales, fp8 1x128 / 128x128, fp8 rowwise, MX (mxfp8, mxfp4) or nvfp4)",
                lhs_name.c_str(), rhs_name.c_str());
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_scalar(const char* name, const gg_scalar& scalar) {
  if (scalar.per_group != nullptr) {
    const std::string field = std::string(name) + ".per_group";
    return check_aligned(field.c_str(), scalar.per_group, sizeof(float), "fp32");
  }
  if (!isfinite(scalar.value)) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.value must be finite (got %g)", name,
                static_cast<double>(scalar.value));
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_flags(const gg_gemm_desc& desc) {
  if ((desc.flags & ~GG_GEMM_ZERO_UNUSED_ROWS) != 0) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "desc->flags has unknown bits (0x%x)",
                desc.flags & ~GG_GEMM_ZERO_UNUSED_ROWS);
  }
  if ((desc.flags & GG_GEMM_ZERO_UNUSED_ROWS) == 0) return GG_STATUS_SUCCESS;
  if (desc.op != GG_OP_RAGGED_M) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "desc->flags: GG_GEMM_ZERO_UNUSED_ROWS is for ragged-M (a ragged-K output has "
                "no rows past the groups)");
  }
  if (desc.group_sizes.offsets != nullptr) {
    return fail(GG_STATUS_INVALID_ARGUMENT,
                "desc->flags: GG_GEMM_ZERO_UNUSED_ROWS needs desc->group_sizes.offsets NULL "
                "(with explicit offsets, groups need not end where the next begins)");
  }
  return GG_STATUS_SUCCESS;
}

gg_status check_tensor_alignment(const TensorRole& role, const gg_tensor& tensor, size_t alignment,
                                 const char* path) {
  if (alignment <= 1) return GG_STATUS_SUCCESS;
  if (!is_pointer_array(tensor) && reinterpret_cast<uintptr_t>(tensor.data) % alignment != 0) {
    return fail(GG_STATUS_INVALID_ARGUMENT, "%s.data (%p) must be %zu-byte aligned on path %s",
                role.name, tensor.data, alignment, path);
  }
  const int64_t bits = fmt::dtype_bits(tensor.dtype);
  for (int i = is_pointer_array(tensor) ? 1 : 0; i < tensor.rank - 1; ++i) {
    const int64_t bytes = tensor.strides[i] * bits / 8;
    if (bytes % static_cast<int64_t>(alignment) != 0) {
      return fail(GG_STATUS_INVALID_ARGUMENT,
                  "%s.strides[%d] (%lld elements, %lld bytes) must be a multiple of %zu bytes "
                  "on path %s",
                  role.name, i, ll(tensor.strides[i]), ll(bytes), alignment, path);
    }
  }
  return GG_STATUS_SUCCESS;
}

}  // namespace

gg_status validate_gemm(const gg_gemm_desc* desc, gg_gemm_desc* normalized) {
  if (desc == nullptr) return fail(GG_STATUS_INVALID_ARGUMENT, "desc is NULL");
  *normalized = *desc;
  gg_gemm_desc& d = *normalized;
  GG_RETURN_IF_ERROR(check_enums(d));
  GG_RETURN_IF_ERROR(check_num_groups(d.num_groups));
  GG_RETURN_IF_ERROR(check_group_sizes(d.group_sizes));

  const GemmRoles roles = roles_of(d);
  GG_RETURN_IF_ERROR(check_view(roles.lhs, &d.lhs));
  GG_RETURN_IF_ERROR(check_scaling(roles.lhs, d.lhs));
  GG_RETURN_IF_ERROR(check_view(roles.rhs, &d.rhs));
  GG_RETURN_IF_ERROR(check_scaling(roles.rhs, d.rhs));
  GG_RETURN_IF_ERROR(check_view(roles.out, &d.out));
  GG_RETURN_IF_ERROR(check_plain(roles.out, d.out));
  if (d.bias.data != nullptr) {
    if (d.op == GG_OP_RAGGED_K) {
      return fail(GG_STATUS_INVALID_ARGUMENT,
                  "desc->bias.data must be NULL for ragged-K (a bias belongs to ragged-M only)");
    }
    GG_RETURN_IF_ERROR(check_view(roles.bias, &d.bias));
    GG_RETURN_IF_ERROR(check_plain(roles.bias, d.bias));
  }

  GG_RETURN_IF_ERROR(d.op == GG_OP_RAGGED_M ? check_ragged_m_shapes(d, roles)
                                            : check_ragged_k_shapes(d, roles));
  GG_RETURN_IF_ERROR(check_operand_pair(d));
  GG_RETURN_IF_ERROR(check_scalar("desc->alpha", d.alpha));
  GG_RETURN_IF_ERROR(check_scalar("desc->beta", d.beta));
  return check_flags(d);
}

gg_status check_operand_alignment(const gg_gemm_desc& desc, size_t alignment,
                                  size_t quantized_alignment, const char* path) {
  const GemmRoles roles = roles_of(desc);
  const auto operand_alignment = [&](const gg_tensor& t) {
    return fmt::dtype_bits(t.dtype) <= 8 ? quantized_alignment : alignment;
  };
  GG_RETURN_IF_ERROR(
      check_tensor_alignment(roles.lhs, desc.lhs, operand_alignment(desc.lhs), path));
  GG_RETURN_IF_ERROR(
      check_tensor_alignment(roles.rhs, desc.rhs, operand_alignment(desc.rhs), path));
  GG_RETURN_IF_ERROR(check_tensor_alignment(roles.out, desc.out, alignment, path));
  if (desc.bias.data == nullptr) return GG_STATUS_SUCCESS;
  return check_tensor_alignment(roles.bias, desc.bias, alignment, path);
}

}  // namespace gg::api
