// Workspace layout shared by every path. The first bytes hold the device-side
// error flags (GG_DEVICE_* bits, ORed by kernels, read and cleared by
// gg_check); a path's own scratch, if any, follows at kWorkspaceScratchOffset.
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace gg {

constexpr size_t kWorkspaceFlagsOffset = 0;
constexpr size_t kWorkspaceScratchOffset = 256;  // keeps scratch 256-byte aligned

inline uint32_t* workspace_flags(void* workspace) {
  return reinterpret_cast<uint32_t*>(static_cast<char*>(workspace) + kWorkspaceFlagsOffset);
}

}  // namespace gg
