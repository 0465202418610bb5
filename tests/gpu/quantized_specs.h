// The quantized GEMM tests' operand format pairs, and their ragged-M
// problems with K-major weights [G, N, K] (the layout the sm90 and skinny
// kernels read), shared by the suites of those kernels.
#pragma once

#include <cuda_runtime_api.h>
#include <stdint.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpu/format_spec.h"
#include "gpu/gemm_case.h"

namespace gg::test {

struct FormatPair {
  std::optional<QuantizeFormatSpec> lhs;  // none: bf16 (weight-only)
  QuantizeFormatSpec rhs;
};

// "bf16 x e2m1_nv16_group", "e4m3_mx32 x e4m3_mx32", ...
std::string pair_label(const FormatPair& formats);

// A ragged-M problem: m tokens, K, N, and named lists of group sizes.
struct QuantizedShape {
  const char* name;
  int64_t m, k, n;
  std::vector<std::pair<std::string, std::vector<int64_t>>> sizes;
};

// The ragged-M product of `formats` on `shape` with `sizes`, weights
// [G, N, K] (GG_LAYOUT_T), fp32 out, named "<pair> <shape>".
GemmSpec kmajor_spec(const FormatPair& formats, const QuantizedShape& shape,
                     std::vector<int64_t> sizes);

// Every pair on every size list of every shape, with alpha 0.5 + 0.25 g for
// group g, against the reference.
void check_every_pair_and_size(const std::vector<FormatPair>& pairs,
                               const std::vector<QuantizedShape>& shapes, gg_path path,
                               cudaStream_t stream);

}  // namespace gg::test
