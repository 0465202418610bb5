// The Mixture-of-Experts models the benchmark measures.
//
// Each preset is benchmarked on its first expert GEMM, the up-projection,
// with gate and up fused into one weight as MoE implementations store it:
// N = 2 * ffn, K = hidden, M = tokens * top_k routed rows. Decode sizes
// (128, 2048 tokens) are bandwidth-bound, prefill (16384) compute-bound.
// The small CPU preset keeps a Qwen3-30B-A3B-like shape at a size the CPU
// reference runs in well under a second.
#pragma once

#include <stdint.h>

#include <string>
#include <vector>

namespace gg::cli {

struct MoePreset {
  const char* name;
  int64_t hidden;
  int64_t ffn;  // per expert
  int32_t experts;
  int32_t top_k;
};

const std::vector<MoePreset>& moe_presets();
const MoePreset& cpu_preset();

// Token counts benchmarked when --tokens is not given.
const std::vector<int64_t>& default_gpu_tokens();
int64_t default_cpu_tokens();

// nullptr when no preset has that name.
const MoePreset* find_preset(const std::string& name);

inline int64_t up_projection_n(const MoePreset& preset) { return 2 * preset.ffn; }
inline int64_t up_projection_k(const MoePreset& preset) { return preset.hidden; }
inline int64_t routed_rows(const MoePreset& preset, int64_t tokens) {
  return tokens * preset.top_k;
}

}  // namespace gg::cli
