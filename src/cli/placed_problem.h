// A verify-sized problem placed where a path reads it: host memory for the
// reference, device memory for the GPU paths. It builds the descriptor,
// sizes and zero-fills the workspace, then runs the product as often as
// asked; `verify` runs it once, the CPU benchmark many times.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <vector>

#include "cli/device_buffer.h"
#include "cli/host_data.h"
#include "cli/problem.h"

namespace gg::cli {

class PlacedProblem {
 public:
  // Throws Failure when the library refuses the descriptor.
  PlacedProblem(const Problem& problem, const HostProblem& host, const std::vector<int64_t>& sizes,
                gg_index_type index_type, gg_path path);

  gg_status launch();                   // one gg_grouped_gemm, default stream
  std::vector<uint8_t> output() const;  // waits for the device
  uint32_t take_device_flags();         // gg_check: reads and clears

 private:
  // Bytes in host memory, or in device memory for a GPU path.
  class Block {
   public:
    Block() = default;
    Block(const char* name, const void* bytes, size_t count, bool on_device);
    void* data() { return on_device_ ? device_.data() : static_cast<void*>(host_.data()); }
    std::vector<uint8_t> read() const;

   private:
    bool on_device_ = false;
    std::vector<uint8_t> host_;
    DeviceBuffer device_;
  };

  gg_path path_;
  Block lhs_, rhs_, out_, bias_, sizes_, lhs_block_scales_, rhs_block_scales_, lhs_scale_,
      rhs_scale_, expert_pointers_, workspace_;
  size_t workspace_bytes_ = 0;
  gg_gemm_desc desc_;
};

}  // namespace gg::cli
