// See quantized_specs.h.
#include "gpu/quantized_specs.h"

#include <gtest/gtest.h>

namespace gg::test {

std::string pair_label(const FormatPair& formats) {
  return (formats.lhs ? format_label(*formats.lhs) : std::string("bf16")) + " x " +
         format_label(formats.rhs);
}

GemmSpec kmajor_spec(const FormatPair& formats, const QuantizedShape& shape,
                     std::vector<int64_t> sizes) {
  GemmSpec s;
  s.op = GG_OP_RAGGED_M;
  s.lhs_format = formats.lhs;
  s.rhs_format = formats.rhs;
  s.input = GG_DTYPE_BF16;
  s.out = GG_DTYPE_FP32;
  s.lhs_layout = GG_LAYOUT_N;
  s.rhs_layout = GG_LAYOUT_T;
  s.m = shape.m, s.k = shape.k, s.n = shape.n;
  s.sizes = std::move(sizes);
  s.name = pair_label(formats) + " " + shape.name;
  return s;
}

void check_every_pair_and_size(const std::vector<FormatPair>& pairs,
                               const std::vector<QuantizedShape>& shapes, gg_path path,
                               cudaStream_t stream) {
  for (const FormatPair& formats : pairs) {
    for (const QuantizedShape& shape : shapes) {
      for (const auto& [name, sizes] : shape.sizes) {
        SCOPED_TRACE(name);
        GemmSpec s = kmajor_spec(formats, shape, sizes);
        for (size_t g = 0; g < sizes.size(); ++g) {
          s.alpha.per_group.push_back(0.5f + 0.25f * static_cast<float>(g));
        }
        run_and_check(s, path, stream);
      }
    }
  }
}

}  // namespace gg::test
