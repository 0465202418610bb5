// See quantize_case.h.
#include "gpu/quantize_case.h"

#include <math.h>
#include <string.h>

#include <algorithm>
#include <sstream>

#include "api/names.h"
#include "common/workspace.h"
#include "gpu/cuda_check.h"
#include "gpu/values.h"

namespace gg::test {

namespace {

// Two poison bytes, taken in turn: a byte the GPU leaves unwritten where
// the reference writes the poison's value passes under one of them, never
// under both.
constexpr uint8_t kPoisons[2] = {0xA5, 0x5A};

}  // namespace

std::vector<QuantizeFormatSpec> ragged_formats() {
  return {
      {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_TENSOR}, {GG_DTYPE_E4M3, GG_BLOCK_NONE, GG_SCALE_GROUP},
      {GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_TENSOR}, {GG_DTYPE_E5M2, GG_BLOCK_NONE, GG_SCALE_GROUP},
      {GG_DTYPE_E4M3, GG_BLOCK_1X128, GG_SCALE_NONE},  {GG_DTYPE_E5M2, GG_BLOCK_1X128, GG_SCALE_NONE},
      {GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE},   {GG_DTYPE_E5M2, GG_BLOCK_MX32, GG_SCALE_NONE},
      {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_TENSOR}, {GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP},
      {GG_DTYPE_E2M1, GG_BLOCK_MX32, GG_SCALE_NONE},
      {GG_DTYPE_E4M3, GG_BLOCK_ROWWISE, GG_SCALE_NONE}, {GG_DTYPE_E5M2, GG_BLOCK_ROWWISE, GG_SCALE_NONE},
  };
}

std::vector<QuantizeFormatSpec> stacked_formats() {
  std::vector<QuantizeFormatSpec> all = ragged_formats();
  all.push_back({GG_DTYPE_E4M3, GG_BLOCK_128X128, GG_SCALE_NONE});
  all.push_back({GG_DTYPE_E5M2, GG_BLOCK_128X128, GG_SCALE_NONE});
  return all;
}

std::vector<int64_t> edge_sizes(int32_t groups) {
  static const int64_t pattern[] = {0, 1, 31, 33, 127, 128, 129, 5, 0, 64, 17, 2};
  std::vector<int64_t> sizes(static_cast<size_t>(groups));
  for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = pattern[g % (sizeof pattern / 8)];
  return sizes;
}

// A host copy and a guarded device copy of one buffer.
struct QuantizeGpuCase::Buffer {
  Buffer(const std::string& name, size_t bytes) : host(bytes), device(name, bytes) {}
  // The host copy's address for a descriptor: never NULL, even when the
  // buffer is empty (M = 0), since the API reads a NULL data pointer as
  // "not given" (an output not requested) whatever the shape.
  uint8_t* host_pointer() { return host.empty() ? empty : host.data(); }
  std::vector<uint8_t> host;
  GuardedBuffer device;
  alignas(16) uint8_t empty[16] = {};
};

QuantizeGpuCase::Buffer& QuantizeGpuCase::add(const std::string& name, size_t bytes) {
  buffers_.push_back(std::make_unique<Buffer>(name, bytes));
  return *buffers_.back();
}

QuantizeGpuCase::QuantizeGpuCase(const QuantizeSpec& spec, gg_path path)
    : spec_(spec),
      path_(path),
      groups_(spec.stacked ? spec.groups : static_cast<int32_t>(spec.sizes.size())) {
  const int64_t matrices = spec_.stacked ? groups_ : 1;
  const int64_t elements = matrices * spec_.rows * spec_.k;
  input_ = &add("input", static_cast<size_t>(elements) * dtype_size(spec_.input));
  fill_input(spec_.seed);
  if (!spec_.stacked) {
    const size_t index_bytes = spec_.index_type == GG_INDEX_INT32 ? 4 : 8;
    sizes_ = &add("sizes", static_cast<size_t>(groups_) * index_bytes);
    if (!spec_.offsets.empty()) offsets_ = &add("offsets", static_cast<size_t>(groups_) * index_bytes);
  }

  const auto make_output = [&](bool columnwise, const QuantizeFormatSpec& f, gg_tensor* host,
                               gg_tensor* device) {
    const char* which = columnwise ? "columnwise" : "rowwise";
    const int64_t rows = columnwise ? spec_.k : spec_.rows;
    const int64_t cols = columnwise ? spec_.rows : spec_.k;
    const int64_t bits = f.dtype == GG_DTYPE_E2M1 ? 4 : 8;
    Buffer& data = add(std::string(which) + ".data",
                       static_cast<size_t>(matrices * rows * cols * bits / 8));
    outputs_.push_back(&data);
    gg_tensor t{};
    t.dtype = f.dtype;
    t.rank = spec_.stacked ? 3 : 2;
    if (spec_.stacked) {
      t.shape[0] = groups_;
      t.shape[1] = rows;
      t.shape[2] = cols;
    } else {
      t.shape[0] = rows;
      t.shape[1] = cols;
    }
    t.block_scaling = f.block;
    t.scale_extent = f.extent;
    *host = t;
    *device = t;
    host->data = data.host_pointer();
    device->data = data.device.data();
    if (f.block != GG_BLOCK_NONE) {
      int64_t shape[2] = {0, 0};
      const int ragged = columnwise && !spec_.stacked ? 1 : 0;
      EXPECT_EQ(gg_block_scale_shape(f.block, rows, cols, 1, ragged, groups_, shape),
                GG_STATUS_SUCCESS)
          << gg_last_error();
      Buffer& scales = add(std::string(which) + ".block_scales",
                           static_cast<size_t>(std::max<int64_t>(
                               1, matrices * shape[0] * shape[1] * scale_entry_bytes(f.block))));
      outputs_.push_back(&scales);
      // An empty output's block scales (it holds none) have no address; its
      // data are given one, their NULL meaning that it is not asked for.
      if (rows * cols > 0) {
        host->block_scales = scales.host_pointer();
        device->block_scales = scales.device.data();
      }
    }
    if (f.extent != GG_SCALE_NONE) {
      const size_t count = f.extent == GG_SCALE_TENSOR ? 1 : static_cast<size_t>(groups_);
      Buffer& scale = add(std::string(which) + ".scale", count * sizeof(float));
      outputs_.push_back(&scale);
      host->scale = reinterpret_cast<float*>(scale.host_pointer());
      device->scale = reinterpret_cast<float*>(scale.device.data());
    }
  };
  if (spec_.rowwise) {
    make_output(false, spec_.rowwise_format, &host_desc_.rowwise, &device_desc_.rowwise);
  }
  if (spec_.columnwise) {
    make_output(true, spec_.columnwise_format, &host_desc_.columnwise, &device_desc_.columnwise);
  }
  if (spec_.amax) {
    Buffer& amax = add("amax", static_cast<size_t>(groups_) * sizeof(float));
    outputs_.push_back(&amax);
    host_desc_.amax = reinterpret_cast<float*>(amax.host_pointer());
    device_desc_.amax = reinterpret_cast<float*>(amax.device.data());
  }
  build_descriptors();
  size_t bytes = 0;
  EXPECT_EQ(gg_grouped_quantize_workspace_size(&device_desc_, &bytes), GG_STATUS_SUCCESS)
      << gg_last_error();
  workspace_bytes_ = bytes;
  workspace_ = std::make_unique<GuardedBuffer>("workspace", std::max<size_t>(bytes, 256));
  workspace_->zero();
  resize(spec_.sizes, spec_.seed);
}

QuantizeGpuCase::~QuantizeGpuCase() = default;

void QuantizeGpuCase::build_descriptors() {
  for (gg_quantize_desc* d : {&host_desc_, &device_desc_}) {
    const bool host = d == &host_desc_;
    d->num_groups = groups_;
    d->group_sizes.type = spec_.index_type;
    d->input.dtype = spec_.input;
    d->input.rank = spec_.stacked ? 3 : 2;
    if (spec_.stacked) {
      d->input.shape[0] = groups_;
      d->input.shape[1] = spec_.rows;
      d->input.shape[2] = spec_.k;
    } else {
      d->input.shape[0] = spec_.rows;
      d->input.shape[1] = spec_.k;
      d->group_sizes.sizes = host ? static_cast<void*>(sizes_->host_pointer()) : sizes_->device.data();
      if (offsets_ != nullptr) {
        d->group_sizes.offsets =
            host ? static_cast<void*>(offsets_->host_pointer()) : offsets_->device.data();
      }
    }
    // An empty input has no address, as a framework's empty tensor.
    if (spec_.rows * spec_.k > 0) {
      d->input.data = host ? static_cast<void*>(input_->host_pointer()) : input_->device.data();
    }
    d->path = host ? GG_PATH_REFERENCE : path_;
  }
}

std::string QuantizeGpuCase::label() const {
  std::ostringstream s;
  s << (spec_.stacked ? "stacked G=" : "ragged G=") << groups_ << " rows=" << spec_.rows
    << " K=" << spec_.k << " input=" << api::dtype_name(spec_.input);
  if (spec_.rowwise) s << " rowwise=" << format_label(spec_.rowwise_format);
  if (spec_.columnwise) s << " columnwise=" << format_label(spec_.columnwise_format);
  if (spec_.amax) s << " amax";
  if (!spec_.stacked) {
    s << " sizes={";
    for (size_t g = 0; g < spec_.sizes.size() && g < 16; ++g) s << (g ? "," : "") << spec_.sizes[g];
    s << (spec_.sizes.size() > 16 ? ",...}" : "}");
    if (!spec_.offsets.empty()) s << " with offsets";
  }
  return s.str();
}

void QuantizeGpuCase::fill_input(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> binade(-12, 12);
  const int64_t matrices = spec_.stacked ? groups_ : 1;
  const int64_t rows = matrices * spec_.rows;
  // A magnitude per row and per 16 columns, so blocks differ in range.
  std::vector<int> row_exp(static_cast<size_t>(rows));
  for (int& e : row_exp) e = binade(rng);
  std::vector<int> col_exp(static_cast<size_t>(spec_.k / 16 + 1));
  for (int& e : col_exp) e = binade(rng) / 2;
  std::uniform_int_distribution<int> special(0, 63);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < spec_.k; ++c) {
      float x = ldexpf(unit(rng), row_exp[static_cast<size_t>(r)] + col_exp[static_cast<size_t>(c / 16)]);
      if (spec_.values == QuantizeValues::kSpecials) {
        switch (special(rng)) {
          case 0:
            x = NAN;
            break;
          case 1:
            x = INFINITY;
            break;
          case 2:
            x = -INFINITY;
            break;
          case 3:
            x = -0.0f;
            break;
          case 4:
            x = ldexpf(unit(rng), -140);  // fp32 subnormal (0 in fp16/bf16 after rounding)
            break;
          case 5:
          case 6:
          case 7:
            x = 0.0f;
            break;
          case 8:
            x = ldexpf(unit(rng), 14);  // saturates e4m3 under small scales
            break;
          case 9:
            x = -NAN;  // a NaN with its sign bit set
            break;
          case 10:
            x = ldexpf(unit(rng), -130);  // a bf16 (and fp32) subnormal, 0 in fp16
            break;
          default:
            break;
        }
        if (r % 7 == 3) x = 0.0f;  // all-zero rows: zero blocks and amax 0
      }
      store_element(input_->host.data(), spec_.input, r * spec_.k + c, x);
    }
  }
}

void QuantizeGpuCase::resize(const std::vector<int64_t>& sizes, uint64_t seed) {
  if (!spec_.stacked) {
    spec_.sizes = sizes;
    const bool int32 = spec_.index_type == GG_INDEX_INT32;
    for (size_t g = 0; g < sizes.size(); ++g) {
      if (int32) {
        const int32_t v = static_cast<int32_t>(sizes[g]);
        memcpy(sizes_->host.data() + 4 * g, &v, 4);
        if (offsets_ != nullptr) {
          const int32_t o = static_cast<int32_t>(spec_.offsets[g]);
          memcpy(offsets_->host.data() + 4 * g, &o, 4);
        }
      } else {
        memcpy(sizes_->host.data() + 8 * g, &sizes[g], 8);
        if (offsets_ != nullptr) memcpy(offsets_->host.data() + 8 * g, &spec_.offsets[g], 8);
      }
    }
    sizes_->device.upload(sizes_->host);
    if (offsets_ != nullptr) offsets_->device.upload(offsets_->host);
  }
  if (seed != spec_.seed) {
    spec_.seed = seed;
    fill_input(seed);
  }
  input_->device.upload(input_->host);
  poison_outputs();
}

void QuantizeGpuCase::poison_outputs() {
  poison_ = poison_ == kPoisons[0] ? kPoisons[1] : kPoisons[0];
  for (Buffer* b : outputs_) {
    std::fill(b->host.begin(), b->host.end(), poison_);
    b->device.upload(b->host);
  }
  // The workspace past the flags as a GEMM launch sharing it leaves it:
  // poison, which as amax words would outweigh every maximum.
  std::vector<uint8_t> workspace = workspace_->download();
  std::fill(workspace.begin() + std::min(workspace.size(), kWorkspaceScratchOffset),
            workspace.end(), poison_);
  workspace_->upload(workspace);
}

::testing::AssertionResult QuantizeGpuCase::launch(cudaStream_t stream) {
  const gg_status status =
      gg_grouped_quantize(&device_desc_, workspace_->data(), workspace_bytes_, stream);
  if (status != GG_STATUS_SUCCESS) {
    return ::testing::AssertionFailure()
           << "gg_grouped_quantize: " << gg_status_string(status) << ": " << gg_last_error();
  }
  return ::testing::AssertionSuccess();
}

void QuantizeGpuCase::expect_matches_reference(cudaStream_t stream) {
  check_cuda(cudaStreamSynchronize(stream), "the grouped quantize");
  uint64_t host_workspace[32] = {};
  ASSERT_EQ(gg_grouped_quantize(&host_desc_, host_workspace, sizeof host_workspace, nullptr),
            GG_STATUS_SUCCESS)
      << gg_last_error();
  uint32_t want_flags = 0;
  ASSERT_EQ(gg_check(host_workspace, GG_PATH_REFERENCE, nullptr, &want_flags), GG_STATUS_SUCCESS);
  uint32_t got_flags = 0;
  ASSERT_EQ(gg_check(workspace_->data(), path_, stream, &got_flags), GG_STATUS_SUCCESS)
      << gg_last_error();
  EXPECT_EQ(got_flags, want_flags) << "device flags (gg_check)";

  for (Buffer* b : outputs_) {
    const std::vector<uint8_t> got = b->device.download();
    const std::vector<uint8_t>& want = b->host;
    size_t first = got.size();
    size_t differing = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i] != want[i]) {
        if (first == got.size()) first = i;
        ++differing;
      }
    }
    if (differing > 0) {
      std::ostringstream where;
      where << b->device.name() << ": " << differing << " of " << got.size()
            << " bytes differ from the reference; first at byte " << first << ": got 0x"
            << std::hex << static_cast<int>(got[first]) << ", want 0x"
            << static_cast<int>(want[first]) << std::dec;
      if (want[first] == poison_) where << " (the reference leaves it unwritten)";
      if (got[first] == poison_) where << " (the GPU left it unwritten)";
      if (b->device.name().find(".data") != std::string::npos) {
        const bool columnwise = b->device.name().rfind("columnwise", 0) == 0;
        const gg_dtype dtype =
            columnwise ? spec_.columnwise_format.dtype : spec_.rowwise_format.dtype;
        const int64_t cols = columnwise ? spec_.rows : spec_.k;
        const int64_t rows = columnwise ? spec_.k : spec_.rows;
        const int64_t element = dtype == GG_DTYPE_E2M1 ? 2 * static_cast<int64_t>(first)
                                                       : static_cast<int64_t>(first);
        where << "; element (matrix " << element / (rows * cols) << ", row "
              << element % (rows * cols) / cols << ", col " << element % cols << ")";
      }
      if (b->device.name().find("scale") != std::string::npos ||
          b->device.name() == "amax") {
        where << "; 4-byte entry " << first / 4;
      }
      ADD_FAILURE() << where.str();
    }
    b->device.expect_guards_intact();
  }
  input_->device.expect_guards_intact();
  if (sizes_ != nullptr) sizes_->device.expect_guards_intact();
  if (offsets_ != nullptr) offsets_->device.expect_guards_intact();
  workspace_->expect_guards_intact();
}

}  // namespace gg::test
