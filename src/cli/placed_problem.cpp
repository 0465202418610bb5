// Placing a problem for a path: see placed_problem.h.
#include "cli/placed_problem.h"

#include "cli/checks.h"
#include "cli/host_memory.h"

namespace gg::cli {

PlacedProblem::Block::Block(const char* name, const void* bytes, size_t count, bool on_device)
    : on_device_(on_device) {
  if (on_device) {
    device_ = DeviceBuffer(count);
    device_.upload(bytes, count);
  } else {
    const auto* first = static_cast<const uint8_t*>(bytes);
    allocate_host(static_cast<double>(count), std::string("the reference path's ") + name,
                  [&] { host_.assign(first, first + count); });
  }
}

std::vector<uint8_t> PlacedProblem::Block::read() const {
  if (!on_device_) return host_;
  std::vector<uint8_t> bytes(device_.bytes());
  device_.download(bytes.data(), bytes.size());
  return bytes;
}

PlacedProblem::PlacedProblem(const Problem& problem, const HostProblem& host,
                             const std::vector<int64_t>& sizes, gg_index_type index_type,
                             gg_path path)
    : path_(path) {
  const bool on_device = path != GG_PATH_REFERENCE;
  const std::vector<uint8_t> index = index_bytes(sizes, index_type);
  lhs_ = Block("lhs", host.lhs.bytes.data(), host.lhs.bytes.size(), on_device);
  rhs_ = Block("rhs", host.rhs.bytes.data(), host.rhs.bytes.size(), on_device);
  out_ = Block("output", host.out.bytes.data(), host.out.bytes.size(), on_device);
  bias_ = Block("bias", host.bias.bytes.data(), host.bias.bytes.size(), on_device);
  sizes_ = Block("group sizes", index.data(), index.size(), on_device);
  const OperandScales& lhs_scales = host.lhs.scales;
  const OperandScales& rhs_scales = host.rhs.scales;
  lhs_block_scales_ = Block("lhs block scales", lhs_scales.block_bytes.data(),
                            lhs_scales.block_bytes.size(), on_device);
  rhs_block_scales_ = Block("rhs block scales", rhs_scales.block_bytes.data(),
                            rhs_scales.block_bytes.size(), on_device);
  lhs_scale_ = Block("lhs scale", lhs_scales.scale.data(), lhs_scales.scale.size() * sizeof(float),
                     on_device);
  rhs_scale_ = Block("rhs scale", rhs_scales.scale.data(), rhs_scales.scale.size() * sizeof(float),
                     on_device);

  ProblemData data;
  data.lhs = lhs_.data();
  data.rhs = rhs_.data();
  data.out = out_.data();
  data.bias = bias_.data();
  data.sizes = sizes_.data();
  data.index_type = index_type;
  data.lhs_block_scales = lhs_block_scales_.data();
  data.rhs_block_scales = rhs_block_scales_.data();
  data.lhs_scale = static_cast<float*>(lhs_scale_.data());
  data.rhs_scale = static_cast<float*>(rhs_scale_.data());
  if (problem.per_expert) {
    const std::vector<uint64_t> addresses = expert_addresses(problem, data);
    expert_pointers_ = Block("expert pointers", addresses.data(),
                             addresses.size() * sizeof addresses[0], on_device);
    data.expert_pointers = expert_pointers_.data();
  }
  desc_ = make_desc(problem, data, path);

  check_gg(gg_grouped_gemm_workspace_size(&desc_, &workspace_bytes_),
           "gg_grouped_gemm_workspace_size");
  const std::vector<uint8_t> zeros(workspace_bytes_, 0);
  workspace_ = Block("workspace", zeros.data(), zeros.size(), on_device);
}

gg_status PlacedProblem::launch() {
  return gg_grouped_gemm(&desc_, workspace_.data(), workspace_bytes_, nullptr);
}

std::vector<uint8_t> PlacedProblem::output() const {
  if (path_ != GG_PATH_REFERENCE) check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  return out_.read();
}

uint32_t PlacedProblem::take_device_flags() {
  uint32_t flags = 0;
  check_gg(gg_check(workspace_.data(), path_, nullptr, &flags), "gg_check");
  return flags;
}

}  // namespace gg::cli
