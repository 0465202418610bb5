// See gemm_case.h.
#include "gpu/gemm_case.h"

#include <string.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>
#include <utility>

#include "api/names.h"
#include "gpu/cuda_check.h"
#include "gpu/output_check.h"
#include "gpu/routing.h"
#include "plan/plan.h"

namespace gg::test {
namespace {

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 0xcbf29ce484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

std::string current_test_name() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  if (info == nullptr) return std::string();
  return std::string(info->test_suite_name()) + "." + info->name();
}

std::vector<uint8_t> encode_indices(const std::vector<int64_t>& values, gg_index_type type) {
  const size_t width = type == GG_INDEX_INT32 ? sizeof(int32_t) : sizeof(int64_t);
  std::vector<uint8_t> bytes(values.size() * width);
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == GG_INDEX_INT32) {
      const int32_t narrow = static_cast<int32_t>(values[i]);
      memcpy(bytes.data() + i * width, &narrow, width);
    } else {
      memcpy(bytes.data() + i * width, &values[i], width);
    }
  }
  return bytes;
}

std::vector<uint8_t> encode_floats(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// A device copy of an optional input: none when it is empty.
std::optional<DeviceArray> optional_array(const std::string& name, std::vector<uint8_t> bytes) {
  if (bytes.empty()) return std::nullopt;
  return DeviceArray(name, std::move(bytes));
}

double square(float value) { return static_cast<double>(value) * value; }


int64_t groups_of(const GemmSpec& spec) { return static_cast<int64_t>(spec.sizes.size()); }

// Stored shapes: a transposed operand is stored with its dimensions swapped.
gg_dtype lhs_dtype(const GemmSpec& spec) {
  return spec.lhs_format ? spec.lhs_format->dtype : spec.input;
}

gg_dtype rhs_dtype(const GemmSpec& spec) {
  return spec.rhs_format ? spec.rhs_format->dtype : spec.input;
}

// Whether an operand's contraction runs along its stored columns (as the
// reference defines it): lhs [M, K] in ragged-M, [P, M] (T) in ragged-K;
// rhs stored transposed.
bool lhs_contraction_along_cols(const GemmSpec& spec) {
  return (spec.op == GG_OP_RAGGED_M) == (spec.lhs_layout == GG_LAYOUT_N);
}

bool rhs_contraction_along_cols(const GemmSpec& spec) { return spec.rhs_layout == GG_LAYOUT_T; }

TensorLayout lhs_layout(const GemmSpec& spec) {
  const bool t = spec.lhs_layout == GG_LAYOUT_T;
  const int64_t rows = t ? spec.k : spec.m;
  const int64_t cols = t ? spec.m : spec.k;
  return {lhs_dtype(spec), 0, rows, cols, spec.padding, false};
}

TensorLayout rhs_layout(const GemmSpec& spec) {
  const bool t = spec.rhs_layout == GG_LAYOUT_T;
  const bool ragged_m = spec.op == GG_OP_RAGGED_M;
  const int64_t inner = ragged_m ? spec.k : spec.m;  // K rows of a weight, or the tokens
  const int64_t rows = t ? spec.n : inner;
  const int64_t cols = t ? inner : spec.n;
  const gg_dtype dtype = rhs_dtype(spec);
  if (ragged_m) return {dtype, groups_of(spec), rows, cols, spec.padding, spec.pointer_array};
  return {dtype, 0, rows, cols, spec.padding, false};
}

TensorLayout out_layout(const GemmSpec& spec) {
  if (spec.op == GG_OP_RAGGED_M) return {spec.out, 0, spec.m, spec.n, spec.padding, false};
  return {spec.out, groups_of(spec), spec.k, spec.n, spec.padding, spec.pointer_array};
}

std::string describe_scalar(const ScalarSpec& scalar) {
  if (!scalar.per_group.empty()) return "per-group";
  std::ostringstream text;
  text << scalar.value;
  return text.str();
}

std::string describe_flags(uint32_t flags) {
  std::string text;
  const struct {
    uint32_t bit;
    const char* name;
  } names[] = {{GG_DEVICE_NEGATIVE_SIZE, "NEGATIVE_SIZE"},
               {GG_DEVICE_SIZES_EXCEED_ROWS, "SIZES_EXCEED_ROWS"},
               {GG_DEVICE_OFFSET_OUT_OF_RANGE, "OFFSET_OUT_OF_RANGE"}};
  for (const auto& entry : names) {
    if (flags & entry.bit) text += std::string(text.empty() ? "" : "|") + entry.name;
  }
  return text.empty() ? "none" : text;
}

}  // namespace

std::mt19937_64 test_rng(const std::string& salt) {
  return std::mt19937_64(fnv1a(current_test_name() + "/" + salt));
}

std::string describe(const GemmSpec& spec) {
  const bool ragged_m = spec.op == GG_OP_RAGGED_M;
  std::ostringstream text;
  text << (ragged_m ? "ragged-M " : "ragged-K ");
  if (spec.lhs_format || spec.rhs_format) {
    text << (spec.lhs_format ? format_label(*spec.lhs_format) : api::dtype_name(spec.input))
         << " x "
         << (spec.rhs_format ? format_label(*spec.rhs_format) : api::dtype_name(spec.input));
  } else {
    text << api::dtype_name(spec.input);
  }
  text << "->" << api::dtype_name(spec.out) << " lhs=" << (spec.lhs_layout == GG_LAYOUT_T ? "T" : "N")
       << " rhs=" << (spec.rhs_layout == GG_LAYOUT_T ? "T" : "N");
  if (spec.pointer_array) text << (ragged_m ? " rhs:pointers" : " out:pointers");
  text << " m=" << spec.m << " n=" << spec.n << " k=" << spec.k << " G=" << spec.sizes.size()
       << " sum(sizes)=" << sum_of(spec.sizes);
  if (!spec.offsets.empty()) text << " offsets";
  if (spec.index_type == GG_INDEX_INT64) text << " int64";
  if (spec.padding != 0) text << " padding=" << spec.padding;
  text << " alpha=" << describe_scalar(spec.alpha) << " beta=" << describe_scalar(spec.beta);
  if (spec.bias) text << " bias=" << api::dtype_name(*spec.bias);
  if (spec.zero_unused_rows) text << " zero-unused-rows";
  if (spec.values == ValueSet::kSmallIntegers) text << " small-integers";
  return text.str();
}

GemmCase::GemmCase(GemmSpec spec, gg_path path)
    : spec_(std::move(spec)),
      path_(path),
      label_(spec_.name + " [" + describe(spec_) + "]"),
      seed_(fnv1a(current_test_name() + "/" + label_)),
      lhs_("lhs", lhs_layout(spec_)),
      rhs_("rhs", rhs_layout(spec_)),
      out_("out", out_layout(spec_)),
      sizes_("sizes", encode_indices(spec_.sizes, spec_.index_type)),
      offsets_(optional_array("offsets", encode_indices(spec_.offsets, spec_.index_type))),
      alpha_(optional_array("alpha", encode_floats(spec_.alpha.per_group))),
      beta_(optional_array("beta", encode_floats(spec_.beta.per_group))) {
  if (spec_.bias) {
    const TensorLayout layout{*spec_.bias, 0, groups_of(spec_), spec_.n, spec_.padding, false};
    bias_.emplace("bias", layout);
  }
  compute_extents();
  fill(0);
  upload_all();

  const gg_gemm_desc desc = device_desc();
  size_t bytes = 0;
  const gg_status status = gg_grouped_gemm_workspace_size(&desc, &bytes);
  last_status_ = status;
  if (status != GG_STATUS_SUCCESS) {
    setup_error_ = std::string("gg_grouped_gemm_workspace_size: ") + gg_status_string(status) +
                   ": " + gg_last_error();
    return;
  }
  workspace_.emplace("workspace", bytes);
  workspace_->zero();  // the API asks for a zero-filled workspace before first use
}

void GemmCase::compute_extents() {
  extents_.clear();
  uint32_t flags = 0;
  int64_t end = 0;
  const bool has_offsets = offsets_.has_value();
  for (int64_t g = 0; g < groups_of(spec_); ++g) {
    const int64_t offset =
        has_offsets ? load_index(offsets_->host().data(), spec_.index_type, g) : 0;
    const GroupExtent extent = clamp_group(load_index(sizes_.host().data(), spec_.index_type, g),
                                           has_offsets, offset, end, spec_.m, &flags);
    extents_.push_back(extent);
    end = extent.start + extent.size;
  }
}

std::pair<int64_t, int64_t> GemmCase::lhs_position(int64_t token, int64_t feature) const {
  return spec_.lhs_layout == GG_LAYOUT_T ? std::pair{feature, token} : std::pair{token, feature};
}

std::tuple<int64_t, int64_t, int64_t> GemmCase::rhs_position(int64_t group, int64_t row,
                                                             int64_t col) const {
  const int64_t batch = spec_.op == GG_OP_RAGGED_M ? group : 0;
  return spec_.rhs_layout == GG_LAYOUT_T ? std::tuple{batch, col, row}
                                         : std::tuple{batch, row, col};
}

float GemmCase::lhs_at(const HostImage& image, int64_t token, int64_t feature) const {
  const auto [row, col] = lhs_position(token, feature);
  return lhs_.get(image, 0, row, col);
}

void GemmCase::set_lhs(int64_t token, int64_t feature, float value) {
  const auto [row, col] = lhs_position(token, feature);
  lhs_.set(lhs_.host(), 0, row, col, value);
}

float GemmCase::rhs_at(const HostImage& image, int64_t group, int64_t row, int64_t col) const {
  const auto [batch, r, c] = rhs_position(group, row, col);
  return rhs_.get(image, batch, r, c);
}

void GemmCase::set_rhs(int64_t group, int64_t row, int64_t col, float value) {
  const auto [batch, r, c] = rhs_position(group, row, col);
  rhs_.set(rhs_.host(), batch, r, c, value);
}

void GemmCase::fill(uint64_t round) {
  std::mt19937_64 rng(seed_ + round * 0x9e3779b97f4a7c15ull);
  auto draw = [&](bool wide) { return draw_value(spec_.values, wide, rng); };
  const bool ragged_m = spec_.op == GG_OP_RAGGED_M;
  for (Operand* operand : {&lhs_, &rhs_, &out_}) operand->poison_host();
  // A quantized operand holds random codes; a 16-bit one random values.
  auto put_lhs = [&](int64_t t, int64_t f) {
    if (!spec_.lhs_format) return set_lhs(t, f, draw(false));
    const auto [row, col] = lhs_position(t, f);
    lhs_.set_code(lhs_.host(), 0, row, col, draw_code(spec_.lhs_format->dtype, rng));
  };
  auto put_rhs = [&](int64_t g, int64_t r, int64_t c) {
    if (!spec_.rhs_format) return set_rhs(g, r, c, draw(false));
    const auto [batch, row, col] = rhs_position(g, r, c);
    rhs_.set_code(rhs_.host(), batch, row, col, draw_code(spec_.rhs_format->dtype, rng));
  };

  for (const GroupExtent& extent : extents_) {
    for (int64_t t = extent.start; t < extent.start + extent.size; ++t) {
      for (int64_t f = 0; f < spec_.k; ++f) put_lhs(t, f);
      if (!ragged_m) {
        for (int64_t c = 0; c < spec_.n; ++c) put_rhs(0, t, c);
      }
    }
  }
  if (ragged_m) {
    for (int64_t g = 0; g < groups_of(spec_); ++g) {
      for (int64_t r = 0; r < spec_.k; ++r) {
        for (int64_t c = 0; c < spec_.n; ++c) put_rhs(g, r, c);
      }
    }
  }
  fill_scales(lhs_, "lhs", spec_.lhs_format, lhs_contraction_along_cols(spec_), rng,
              &lhs_scales_);
  fill_scales(rhs_, "rhs", spec_.rhs_format, rhs_contraction_along_cols(spec_), rng,
              &rhs_scales_);
  if (bias_) {
    for (int64_t g = 0; g < groups_of(spec_); ++g) {
      for (int64_t c = 0; c < spec_.n; ++c) bias_->set(bias_->host(), 0, g, c, draw(true));
    }
  }
  // The previous output is an input only where beta_g != 0; elsewhere it
  // stays poisoned, so reading it would show.
  for (size_t g = 0; g < extents_.size(); ++g) {
    if (spec_.beta.of(g) == 0.0f) continue;
    const int64_t batch = static_cast<int64_t>(g);
    if (ragged_m) {
      for (int64_t t = extents_[g].start; t < extents_[g].start + extents_[g].size; ++t) {
        for (int64_t c = 0; c < spec_.n; ++c) out_.set(out_.host(), 0, t, c, draw(true));
      }
    } else {
      for (int64_t p = 0; p < spec_.k; ++p) {
        for (int64_t q = 0; q < spec_.n; ++q) out_.set(out_.host(), batch, p, q, draw(true));
      }
    }
  }
}

void GemmCase::fill_scales(const Operand& operand, const std::string& name,
                           const std::optional<QuantizeFormatSpec>& format,
                           bool contraction_along_cols, std::mt19937_64& rng,
                           OperandScales* scales) {
  if (!format) return;
  const TensorLayout& layout = operand.layout();
  const int64_t matrices = layout.batches == 0 ? 1 : layout.batches;
  const int32_t groups = static_cast<int32_t>(groups_of(spec_));
  if (format->block != GG_BLOCK_NONE) {
    int64_t shape[2] = {0, 0};
    const gg_status status =
        gg_block_scale_shape(format->block, layout.rows, layout.cols,
                             contraction_along_cols ? 1 : 0, spec_.op == GG_OP_RAGGED_K ? 1 : 0,
                             groups, shape);
    if (status != GG_STATUS_SUCCESS) throw std::logic_error(gg_last_error());
    const int64_t entries = matrices * shape[0] * shape[1];
    std::vector<uint8_t> bytes(static_cast<size_t>(entries * scale_entry_bytes(format->block)));
    for (int64_t i = 0; i < entries; ++i) {
      if (scale_entry_bytes(format->block) == 4) {  // rowwise, 1x128, 128x128: fp32
        const float value = std::uniform_real_distribution<float>(0.5f, 2.0f)(rng);
        memcpy(bytes.data() + i * 4, &value, sizeof value);
      } else {
        // e8m0 2^-4 .. 2^4 (bias 127); ue4m3 2^-2 .. 2^2 (exponent bias 7).
        const bool mx = format->block == GG_BLOCK_MX32;
        bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(
            std::uniform_int_distribution<int>(mx ? 123 : 0x28, mx ? 131 : 0x48)(rng));
      }
    }
    if (scales->blocks) {
      scales->blocks->assign(std::move(bytes));
    } else {
      scales->blocks.emplace(name + " block scales", std::move(bytes));
    }
    if (layout.pointer_array) {  // each expert's scales at its own address
      const int64_t matrix_bytes = shape[0] * shape[1] * scale_entry_bytes(format->block);
      std::vector<uint8_t> table(static_cast<size_t>(matrices) * sizeof(void*));
      scales->host_block_pointers.clear();
      for (int64_t g = 0; g < matrices; ++g) {
        void* device = static_cast<uint8_t*>(scales->blocks->data()) + g * matrix_bytes;
        memcpy(table.data() + g * sizeof(void*), &device, sizeof device);
        scales->host_block_pointers.push_back(
            const_cast<uint8_t*>(scales->blocks->host().data()) + g * matrix_bytes);
      }
      if (scales->block_pointers) {
        scales->block_pointers->assign(std::move(table));
      } else {
        scales->block_pointers.emplace(name + " block scale pointers", std::move(table));
      }
    }
  }
  if (format->extent != GG_SCALE_NONE) {
    std::vector<float> values(format->extent == GG_SCALE_GROUP ? static_cast<size_t>(groups) : 1);
    for (float& value : values) value = std::uniform_real_distribution<float>(0.25f, 4.0f)(rng);
    if (scales->scale) {
      scales->scale->assign(encode_floats(values));
    } else {
      scales->scale.emplace(name + " scale", encode_floats(values));
    }
  }
}

void GemmCase::describe_format(gg_tensor* t, const std::optional<QuantizeFormatSpec>& format,
                               const OperandScales& scales, bool device) const {
  if (!format) return;
  t->block_scaling = format->block;
  t->scale_extent = format->extent;
  auto address = [device](const DeviceArray& array) {
    return device ? array.data() : const_cast<uint8_t*>(array.host().data());
  };
  if (scales.block_pointers) {
    t->block_scales = device ? scales.block_pointers->data()
                             : const_cast<void**>(scales.host_block_pointers.data());
  } else if (scales.blocks) {
    t->block_scales = address(*scales.blocks);
  }
  if (scales.scale) t->scale = static_cast<float*>(address(*scales.scale));
}

void GemmCase::upload_all() {
  lhs_.upload();
  rhs_.upload();
  out_.upload();
  if (bias_) bias_->upload();
}

void GemmCase::reroute(const std::vector<int64_t>& sizes, uint64_t round) {
  if (sizes.size() != spec_.sizes.size()) throw std::logic_error("reroute must keep G");
  spec_.sizes = sizes;
  sizes_.assign(encode_indices(spec_.sizes, spec_.index_type));
  compute_extents();
  fill(round);
  upload_all();
}

void GemmCase::move_expert_matrices() {
  Operand& experts = spec_.op == GG_OP_RAGGED_M ? rhs_ : out_;
  experts.move_matrices();
  experts.upload();
}

gg_gemm_desc GemmCase::base_desc(gg_path path) const {
  gg_gemm_desc desc{};
  desc.op = spec_.op;
  desc.num_groups = static_cast<int32_t>(groups_of(spec_));
  desc.group_sizes.type = spec_.index_type;
  desc.lhs_layout = spec_.lhs_layout;
  desc.rhs_layout = spec_.rhs_layout;
  desc.alpha.value = spec_.alpha.value;
  desc.beta.value = spec_.beta.value;
  desc.path = path;
  desc.flags = spec_.zero_unused_rows ? GG_GEMM_ZERO_UNUSED_ROWS : 0u;
  return desc;
}

gg_gemm_desc GemmCase::device_desc() const {
  gg_gemm_desc desc = base_desc(path_);
  desc.group_sizes.sizes = sizes_.data();
  desc.group_sizes.offsets = offsets_ ? offsets_->data() : nullptr;
  desc.lhs = lhs_.device_view();
  desc.rhs = rhs_.device_view();
  describe_format(&desc.lhs, spec_.lhs_format, lhs_scales_, true);
  describe_format(&desc.rhs, spec_.rhs_format, rhs_scales_, true);
  desc.out = out_.device_view();
  if (bias_) desc.bias = bias_->device_view();
  desc.alpha.per_group = alpha_ ? static_cast<const float*>(alpha_->data()) : nullptr;
  desc.beta.per_group = beta_ ? static_cast<const float*>(beta_->data()) : nullptr;
  return desc;
}

void GemmCase::prepare_output() { out_.upload(); }

::testing::AssertionResult GemmCase::launch(cudaStream_t stream) {
  if (!setup_error_.empty()) return ::testing::AssertionFailure() << setup_error_;
  const gg_gemm_desc desc = device_desc();
  const gg_status status = gg_grouped_gemm(&desc, workspace_->data(), workspace_->bytes(), stream);
  last_status_ = status;
  if (status != GG_STATUS_SUCCESS) {
    return ::testing::AssertionFailure()
           << "gg_grouped_gemm: " << gg_status_string(status) << ": " << gg_last_error();
  }
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult GemmCase::run(cudaStream_t stream) {
  prepare_output();
  ::testing::AssertionResult launched = launch(stream);
  if (!launched) return launched;
  const cudaError_t status = cudaStreamSynchronize(stream);
  if (status != cudaSuccess) {
    return ::testing::AssertionFailure()
           << "the GEMM failed on the device: " << cudaGetErrorName(status) << " ("
           << cudaGetErrorString(status) << ")";
  }
  return ::testing::AssertionSuccess();
}

std::optional<HostImage> GemmCase::reference_output(uint32_t* flags) {
  HostImage want = out_.host();
  gg_gemm_desc desc = base_desc(GG_PATH_REFERENCE);
  desc.group_sizes.sizes = sizes_.host().data();
  desc.group_sizes.offsets = offsets_ ? offsets_->host().data() : nullptr;
  desc.lhs = lhs_.view_of(lhs_.host());
  desc.rhs = rhs_.view_of(rhs_.host());
  describe_format(&desc.lhs, spec_.lhs_format, lhs_scales_, false);
  describe_format(&desc.rhs, spec_.rhs_format, rhs_scales_, false);
  desc.out = out_.view_of(want);
  if (bias_) desc.bias = bias_->view_of(bias_->host());
  desc.alpha.per_group = spec_.alpha.per_group.empty() ? nullptr : spec_.alpha.per_group.data();
  desc.beta.per_group = spec_.beta.per_group.empty() ? nullptr : spec_.beta.per_group.data();

  size_t bytes = 0;
  gg_status status = gg_grouped_gemm_workspace_size(&desc, &bytes);
  std::vector<uint64_t> workspace(bytes / sizeof(uint64_t) + 1, 0);
  if (status == GG_STATUS_SUCCESS) {
    status = gg_grouped_gemm(&desc, workspace.data(), bytes, nullptr);
  }
  if (status == GG_STATUS_SUCCESS) {
    status = gg_check(workspace.data(), GG_PATH_REFERENCE, nullptr, flags);
  }
  if (status != GG_STATUS_SUCCESS) {
    ADD_FAILURE() << "the reference failed: " << gg_status_string(status) << ": "
                  << gg_last_error();
    return std::nullopt;
  }
  return want;
}

std::optional<std::vector<float>> GemmCase::reference_magnitudes() const {
  const bool ragged_m = spec_.op == GG_OP_RAGGED_M;
  const int64_t matrices = ragged_m ? 1 : groups_of(spec_);
  const int64_t rows = ragged_m ? spec_.m : spec_.k;
  std::vector<float> sums(static_cast<size_t>(matrices * rows * spec_.n), 0.0f);
  HostImage lhs = lhs_.magnitudes(lhs_.host());
  HostImage rhs = rhs_.magnitudes(rhs_.host());
  gg_gemm_desc desc = base_desc(GG_PATH_REFERENCE);
  desc.alpha.value = 1.0f;
  desc.beta.value = 0.0f;
  desc.flags = 0;
  desc.group_sizes.sizes = sizes_.host().data();
  desc.group_sizes.offsets = offsets_ ? offsets_->host().data() : nullptr;
  desc.lhs = lhs_.view_of(lhs);
  desc.rhs = rhs_.view_of(rhs);
  describe_format(&desc.lhs, spec_.lhs_format, lhs_scales_, false);
  describe_format(&desc.rhs, spec_.rhs_format, rhs_scales_, false);
  desc.out.data = sums.data();
  desc.out.dtype = GG_DTYPE_FP32;
  desc.out.rank = ragged_m ? 2 : 3;
  const int64_t shape[3] = {matrices, rows, spec_.n};
  for (int i = 0; i < desc.out.rank; ++i) desc.out.shape[i] = shape[3 - desc.out.rank + i];
  size_t bytes = 0;
  gg_status status = gg_grouped_gemm_workspace_size(&desc, &bytes);
  std::vector<uint64_t> workspace(bytes / sizeof(uint64_t) + 1, 0);
  if (status == GG_STATUS_SUCCESS) {
    status = gg_grouped_gemm(&desc, workspace.data(), bytes, nullptr);
  }
  if (status != GG_STATUS_SUCCESS) {
    ADD_FAILURE() << "the reference's magnitudes failed: " << gg_status_string(status) << ": "
                  << gg_last_error();
    return std::nullopt;
  }
  return sums;
}

void GemmCase::compare(const HostImage& got, const HostImage& want, Match match) const {
  const HostImage& initial = out_.host();
  // fp8 x fp8 on the sm90 path (or AUTO, which takes it for them) sums on
  // fp8 tensor cores: with fp32 scales or 1x128 blocks, and mxfp8 ragged-M
  // products of K-major e4m3 weights, each 32-deep block promoted times its
  // MX scales; other MX pairs are decoded into bf16 (fp32 sums).
  const auto fp8 = [](const std::optional<QuantizeFormatSpec>& f) {
    return f && (f->dtype == GG_DTYPE_E4M3 || f->dtype == GG_DTYPE_E5M2);
  };
  const bool both_fp8 = fp8(spec_.lhs_format) && fp8(spec_.rhs_format);
  const gg_block_scaling lhs_block = both_fp8 ? spec_.lhs_format->block : GG_BLOCK_NONE;
  const gg_block_scaling rhs_block = both_fp8 ? spec_.rhs_format->block : GG_BLOCK_NONE;
  const auto decoded = [](gg_block_scaling b) { return b == GG_BLOCK_MX32 || b == GG_BLOCK_NV16; };
  const bool mx_on_fp8_wgmma = spec_.op == GG_OP_RAGGED_M && spec_.rhs_layout == GG_LAYOUT_T &&
                               lhs_block == GG_BLOCK_MX32 && rhs_block == GG_BLOCK_MX32 &&
                               spec_.rhs_format->dtype == GG_DTYPE_E4M3;
  const bool fp8_cores = both_fp8 &&
                         ((!decoded(lhs_block) && !decoded(rhs_block)) || mx_on_fp8_wgmma) &&
                         (path_ == GG_PATH_SM90 || path_ == GG_PATH_AUTO);
  OutputCheck check("out", spec_.out, match == Match::kExact,
                    fp8_cores ? Accumulation::kFp8TensorCores : Accumulation::kFp32);
  std::vector<std::vector<bool>> written(initial.blocks.size());
  for (size_t b = 0; b < initial.blocks.size(); ++b) {
    written[b].assign(initial.blocks[b].size() / dtype_size(spec_.out), false);
  }
  // `magnitude` bounds sum|a||b| over the element's products (Cauchy-Schwarz
  // on the two operand vectors); OutputCheck turns the scale into a bound.
  auto visit = [&](size_t g, int64_t batch, int64_t row, int64_t col, double magnitude,
                   int64_t depth) {
    const size_t block = static_cast<size_t>(out_.block_of(batch));
    written[block][static_cast<size_t>(out_.element_of(batch, row, col))] = true;
    const double beta = spec_.beta.of(g);
    double scale = std::fabs(spec_.alpha.of(g)) * magnitude;
    if (beta != 0.0) scale += std::fabs(beta * out_.get(initial, batch, row, col));
    if (bias_) scale += std::fabs(bias_->get(bias_->host(), 0, static_cast<int64_t>(g), col));
    check.add({batch, row, col}, out_.get(got, batch, row, col), out_.get(want, batch, row, col),
              scale, depth);
  };

  // Quantized operands: the reference's own sums of magnitudes (their
  // elements are codes scaled by blocks, which the test does not decode).
  std::optional<std::vector<float>> magnitudes;
  if (quantized()) {
    magnitudes = reference_magnitudes();
    if (!magnitudes) return;
  }
  auto magnitude_at = [&](int64_t batch, int64_t row, int64_t col) {
    const int64_t rows = spec_.op == GG_OP_RAGGED_M ? spec_.m : spec_.k;
    return static_cast<double>((*magnitudes)[static_cast<size_t>((batch * rows + row) * spec_.n +
                                                                 col)]);
  };

  for (size_t g = 0; g < extents_.size(); ++g) {
    const int64_t group = static_cast<int64_t>(g);
    const int64_t first = extents_[g].start;
    const int64_t end = first + extents_[g].size;
    if (magnitudes) {
      if (spec_.op == GG_OP_RAGGED_M) {
        for (int64_t t = first; t < end; ++t) {
          for (int64_t c = 0; c < spec_.n; ++c) visit(g, 0, t, c, magnitude_at(0, t, c), spec_.k);
        }
      } else {
        for (int64_t p = 0; p < spec_.k; ++p) {
          for (int64_t q = 0; q < spec_.n; ++q) {
            visit(g, group, p, q, magnitude_at(group, p, q), end - first);
          }
        }
      }
    } else if (spec_.op == GG_OP_RAGGED_M) {
      // Row t of the group times column c of its rhs.
      if (first == end) continue;
      std::vector<double> col_norms(static_cast<size_t>(spec_.n), 0.0);
      for (int64_t r = 0; r < spec_.k; ++r) {
        for (int64_t c = 0; c < spec_.n; ++c) {
          col_norms[static_cast<size_t>(c)] += square(rhs_at(rhs_.host(), group, r, c));
        }
      }
      for (int64_t t = first; t < end; ++t) {
        double row_norm = 0;
        for (int64_t f = 0; f < spec_.k; ++f) row_norm += square(lhs_at(lhs_.host(), t, f));
        for (int64_t c = 0; c < spec_.n; ++c) {
          visit(g, 0, t, c, std::sqrt(row_norm * col_norms[static_cast<size_t>(c)]), spec_.k);
        }
      }
    } else {
      // Column p of the group's lhs rows times column q of its rhs rows.
      std::vector<double> lhs_norms(static_cast<size_t>(spec_.k), 0.0);
      std::vector<double> rhs_norms(static_cast<size_t>(spec_.n), 0.0);
      for (int64_t t = first; t < end; ++t) {
        for (int64_t p = 0; p < spec_.k; ++p) {
          lhs_norms[static_cast<size_t>(p)] += square(lhs_at(lhs_.host(), t, p));
        }
        for (int64_t q = 0; q < spec_.n; ++q) {
          rhs_norms[static_cast<size_t>(q)] += square(rhs_at(rhs_.host(), 0, t, q));
        }
      }
      for (int64_t p = 0; p < spec_.k; ++p) {
        for (int64_t q = 0; q < spec_.n; ++q) {
          const double squares =
              lhs_norms[static_cast<size_t>(p)] * rhs_norms[static_cast<size_t>(q)];
          visit(g, group, p, q, std::sqrt(squares), end - first);
        }
      }
    }
  }
  check.report();
  if (spec_.zero_unused_rows) expect_zero_rows_past_groups(got, &written);
  expect_untouched(got, written);
}

void GemmCase::expect_zero_rows_past_groups(const HostImage& got,
                                            std::vector<std::vector<bool>>* written) const {
  const int64_t first = extents_.back().start + extents_.back().size;
  const size_t element_bytes = dtype_size(spec_.out);
  const std::vector<char> zero(element_bytes, 0);
  int64_t wrong = 0;
  std::string example;
  for (int64_t row = first; row < spec_.m; ++row) {
    for (int64_t col = 0; col < spec_.n; ++col) {
      const size_t block = static_cast<size_t>(out_.block_of(0));
      const size_t element = static_cast<size_t>(out_.element_of(0, row, col));
      (*written)[block][element] = true;
      if (memcmp(got.blocks[block].data() + element * element_bytes, zero.data(),
                 element_bytes) == 0) {
        continue;
      }
      if (wrong++ == 0) {
        example = "row " + std::to_string(row) + " col " + std::to_string(col) + " holds " +
                  std::to_string(out_.get(got, 0, row, col));
      }
    }
  }
  EXPECT_EQ(wrong, 0) << "rows past the last group (from row " << first
                      << ") must be +0; first: " << example;
}

void GemmCase::expect_untouched(const HostImage& got,
                                const std::vector<std::vector<bool>>& written) const {
  const HostImage& initial = out_.host();
  const size_t element_bytes = dtype_size(spec_.out);
  int64_t changed = 0;
  std::string first;
  for (size_t b = 0; b < written.size(); ++b) {
    for (size_t i = 0; i < written[b].size(); ++i) {
      const size_t at = i * element_bytes;
      if (written[b][i] ||
          memcmp(got.blocks[b].data() + at, initial.blocks[b].data() + at, element_bytes) == 0) {
        continue;
      }
      if (changed++ > 0) continue;
      const int64_t element = static_cast<int64_t>(i);
      const int64_t stride = out_.row_stride();
      const int64_t matrix = out_.layout().rows * stride;
      std::ostringstream where;
      where << "block " << b << " element " << i << " (matrix " << element / matrix << ", row "
            << element % matrix / stride << ", col " << element % stride << ") now holds "
            << load_element(got.blocks[b].data(), spec_.out, element);
      first = where.str();
    }
  }
  EXPECT_EQ(changed, 0) << "output elements outside every group, or in row padding, were "
                           "written; first: "
                        << first;
}

void GemmCase::expect_flags(uint32_t device_flags, uint32_t reference_flags) {
  EXPECT_EQ(reference_flags, spec_.expected_flags)
      << "reference flags " << describe_flags(reference_flags) << ", expected "
      << describe_flags(spec_.expected_flags);
  EXPECT_EQ(device_flags, spec_.expected_flags)
      << "gg_check flags " << describe_flags(device_flags) << ", expected "
      << describe_flags(spec_.expected_flags);
}

void GemmCase::expect_correct(Match match) {
  ASSERT_TRUE(setup_error_.empty()) << setup_error_;
  lhs_.expect_guards_intact();
  rhs_.expect_guards_intact();
  out_.expect_guards_intact();
  if (bias_) bias_->expect_guards_intact();
  workspace_->expect_guards_intact();
  lhs_.expect_device_unchanged();
  rhs_.expect_device_unchanged();
  if (bias_) bias_->expect_device_unchanged();
  sizes_.expect_intact();
  for (const auto* array : {&offsets_, &alpha_, &beta_, &lhs_scales_.blocks, &lhs_scales_.scale,
                            &rhs_scales_.blocks, &rhs_scales_.scale,
                            &rhs_scales_.block_pointers}) {
    if (*array) (*array)->expect_intact();
  }

  uint32_t reference_flags = 0;
  const std::optional<HostImage> want = reference_output(&reference_flags);
  if (!want) return;
  compare(out_.download(), *want, match);

  uint32_t device_flags = 0;
  gg_status status = gg_check(workspace_->data(), path_, nullptr, &device_flags);
  ASSERT_EQ(status, GG_STATUS_SUCCESS) << "gg_check: " << gg_last_error();
  expect_flags(device_flags, reference_flags);
  status = gg_check(workspace_->data(), path_, nullptr, &device_flags);
  ASSERT_EQ(status, GG_STATUS_SUCCESS) << "gg_check: " << gg_last_error();
  EXPECT_EQ(device_flags, 0u) << "gg_check did not clear the flags: "
                              << describe_flags(device_flags);
}

namespace {

// The text a GPU path's refusal of `spec` must hold, for the 16-bit cases it
// is documented not to take (kernels/paths.h); none for the cases it must
// take. sm90 takes at most 2048 groups and no empty dimension of the op
// (ragged-M M, K, N; ragged-K M, P, Q). The portable path takes them all.
std::optional<std::string> documented_refusal(const GemmSpec& spec, gg_path path) {
  if (path != GG_PATH_SM90) return std::nullopt;
  if (static_cast<int64_t>(spec.sizes.size()) > kSm90MaxGroups) return "at most 2048 groups";
  const bool ragged_m = spec.op == GG_OP_RAGGED_M;
  const std::pair<const char*, int64_t> dims[] = {
      {"M", spec.m}, {ragged_m ? "K" : "P", spec.k}, {ragged_m ? "N" : "Q", spec.n}};
  for (const auto& [name, value] : dims) {
    if (value == 0) return std::string(name) + " = 0;";
  }
  return std::nullopt;
}

}  // namespace

void expect_refusal(const GemmCase& gemm, const ::testing::AssertionResult& ran,
                    const std::string& named) {
  EXPECT_FALSE(ran) << "the path took a case it should refuse";
  EXPECT_EQ(gemm.last_status(), GG_STATUS_NOT_SUPPORTED) << ran.message();
  EXPECT_NE(std::string(ran.message()).find(named), std::string::npos)
      << "want \"" << named << "\" in: " << ran.message();
}

void run_and_check(const GemmSpec& spec, gg_path path, cudaStream_t stream, Match match) {
  GemmCase gemm(spec, path);
  SCOPED_TRACE(gemm.label());
  const ::testing::AssertionResult ran = gemm.run(stream);
  if (const std::optional<std::string> refusal = documented_refusal(spec, path)) {
    // The refusal is the behaviour under test; say so in the output (the
    // GPU check counts these lines). Any other refusal fails below.
    expect_refusal(gemm, ran, *refusal);
    std::printf("[ NOT SUPPORTED ] %s: %s\n", gemm.label().c_str(), ran.message());
    return;
  }
  if (!ran) {
    ADD_FAILURE() << ran.message();
    return;
  }
  gemm.expect_correct(match);
}

}  // namespace gg::test
