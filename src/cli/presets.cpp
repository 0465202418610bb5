// The preset table: see presets.h. Shapes are the models' published
// configurations (hidden size, per-expert intermediate size, routed experts,
// experts per token).
#include "cli/presets.h"

namespace gg::cli {

const std::vector<MoePreset>& moe_presets() {
  static const std::vector<MoePreset> presets = {
      {"deepseek-v3", 7168, 2048, 256, 8},  {"mixtral-8x7b", 4096, 14336, 8, 2},
      {"qwen3-30b-a3b", 2048, 768, 128, 8}, {"qwen3-235b-a22b", 4096, 1536, 128, 8},
      {"gpt-oss-120b", 2880, 2880, 128, 4}, {"llama4-maverick", 5120, 8192, 128, 1},
  };
  return presets;
}

const MoePreset& cpu_preset() {
  static const MoePreset preset = {"qwen3-30b-a3b-mini", 512, 128, 8, 2};
  return preset;
}

const std::vector<int64_t>& default_gpu_tokens() {
  static const std::vector<int64_t> tokens = {128, 2048, 16384};
  return tokens;
}

int64_t default_cpu_tokens() { return 256; }

const MoePreset* find_preset(const std::string& name) {
  for (const MoePreset& preset : moe_presets()) {
    if (name == preset.name) return &preset;
  }
  return nullptr;
}

}  // namespace gg::cli
