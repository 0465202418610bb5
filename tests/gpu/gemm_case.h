// One grouped GEMM problem, run on a GPU path and checked against the CPU
// reference (GG_PATH_REFERENCE, through the same C API, on host copies).
//
// A GemmCase owns every operand on both sides. Its data are fresh random
// values from a seed derived from the test's name and the case's name, so
// cases differ from one another and every run of a case is the same. Rows
// outside every group, and row padding, hold NaN poison in the inputs (they
// must not reach any result); the output is poisoned everywhere except where
// beta != 0 makes the previous value an input. After a run, expect_correct
// checks, in this order: guard bands of every buffer, inputs unchanged on the
// device, every element of every group against the reference, every other
// output element (rows outside the groups, padding) unchanged bit for bit,
// and the device-side flags gg_check reports (then that it cleared them).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>
#include <stdint.h>

#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/groups.h"
#include "gpu/format_spec.h"
#include "gpu/guarded_buffer.h"
#include "gpu/operand.h"
#include "gpu/values.h"
#include "groupgemm/groupgemm.h"

namespace gg::test {

// alpha or beta: one value, or (per_group not empty) a device array [G].
struct ScalarSpec {
  float value = 1.0f;
  std::vector<float> per_group;

  float of(size_t group) const { return per_group.empty() ? value : per_group[group]; }
};

struct GemmSpec {
  std::string name;  // shown with every failure; with describe(), seeds the data
  gg_op op = GG_OP_RAGGED_M;
  // ragged-M: lhs [m, k], rhs [G, k, n] (T: [G, n, k]), out [m, n].
  // ragged-K: lhs [m, k] (T: [k, m]), rhs [m, n] (T: [n, m]), out [G, k, n].
  int64_t m = 0, n = 0, k = 0;
  std::vector<int64_t> sizes;    // G = sizes.size()
  std::vector<int64_t> offsets;  // empty: the prefix sum of the sizes
  gg_index_type index_type = GG_INDEX_INT32;
  gg_dtype input = GG_DTYPE_BF16;  // lhs and rhs
  gg_dtype out = GG_DTYPE_BF16;
  gg_layout lhs_layout = GG_LAYOUT_N;
  gg_layout rhs_layout = GG_LAYOUT_N;
  bool pointer_array = false;  // ragged-M: rhs; ragged-K: out, as G separate matrices
  int64_t padding = 0;         // extra elements at the end of every operand row
  ScalarSpec alpha{1.0f, {}};
  ScalarSpec beta{0.0f, {}};
  std::optional<gg_dtype> bias;  // ragged-M only: [G, n]
  ValueSet values = ValueSet::kUniform;
  uint32_t expected_flags = 0;  // GG_DEVICE_* bits these sizes must raise
  bool zero_unused_rows = false;  // ragged-M: GG_GEMM_ZERO_UNUSED_ROWS
  // Quantized operands: random finite codes of the format's dtype, random
  // block scales (e8m0 2^-4..2^4, ue4m3 2^-2..2^2, fp32 rowwise, 1x128 and
  // 128x128 scales 0.5..2) and
  // fp32 scales (0.25..4); `input` is then the other operand's dtype. Not
  // with pointer_array.
  std::optional<QuantizeFormatSpec> lhs_format;
  std::optional<QuantizeFormatSpec> rhs_format;
};

// A generator seeded from the running test's name and `salt`: fixed for a
// case, different across cases.
std::mt19937_64 test_rng(const std::string& salt);

// "ragged-M bf16->fp32 lhs=N rhs=T m=.. n=.. k=.. G=.. sum(sizes)=.." and the
// options set, for failure messages.
std::string describe(const GemmSpec& spec);

enum class Match { kBounded, kExact };

class GemmCase {
 public:
  GemmCase(GemmSpec spec, gg_path path);

  const std::string& label() const { return label_; }

  // Restores the output to its initial contents on the device.
  void prepare_output();
  // Enqueues the GEMM on `stream`; no synchronization (graph capture).
  ::testing::AssertionResult launch(cudaStream_t stream);
  // Status of the last launch's gg_grouped_gemm.
  gg_status last_status() const { return last_status_; }
  // prepare_output, launch, synchronize.
  ::testing::AssertionResult run(cudaStream_t stream);

  // New device-side sizes (same G) and fresh data from round `round` of the
  // seed, written into the same device buffers.
  void reroute(const std::vector<int64_t>& sizes, uint64_t round);
  // The per-expert operand (spec.pointer_array) changes allocations on the
  // device (Operand::move_matrices), with its contents uploaded again: what
  // a framework does when it reallocates one expert's parameter.
  void move_expert_matrices();

  void expect_correct(Match match = Match::kBounded);
  HostImage download_output() const { return out_.download(); }

 private:
  // A quantized operand's scales: block scales, fp32 tensor or group scale.
  struct OperandScales {
    std::optional<DeviceArray> blocks;
    std::optional<DeviceArray> scale;
    // Per-expert weights (a pointer array): the address of each matrix's
    // block scales in `blocks`, on the device and on the host.
    std::optional<DeviceArray> block_pointers;
    std::vector<void*> host_block_pointers;
  };

  gg_status last_status_ = GG_STATUS_SUCCESS;
  gg_gemm_desc base_desc(gg_path path) const;
  bool quantized() const { return spec_.lhs_format || spec_.rhs_format; }
  void fill_scales(const Operand& operand, const std::string& name,
                   const std::optional<QuantizeFormatSpec>& format, bool contraction_along_cols,
                   std::mt19937_64& rng, OperandScales* scales);
  // Names the format and scales of a quantized operand in its view (host
  // copies for the reference, device copies else).
  void describe_format(gg_tensor* t, const std::optional<QuantizeFormatSpec>& format,
                       const OperandScales& scales, bool device) const;
  // The reference's sum of |lhs| |rhs| over each output element's products
  // (the operands' codes replaced by their magnitudes, alpha 1, no beta or
  // bias), in fp32 as `out` is laid out: the scale of its rounding errors.
  std::optional<std::vector<float>> reference_magnitudes() const;
  gg_gemm_desc device_desc() const;
  void compute_extents();
  void fill(uint64_t round);
  void upload_all();
  // The reference's output (nullopt after a reported failure) and flags.
  std::optional<HostImage> reference_output(uint32_t* flags);
  void compare(const HostImage& got, const HostImage& want, Match match) const;
  void expect_untouched(const HostImage& got, const std::vector<std::vector<bool>>& written) const;
  // GG_GEMM_ZERO_UNUSED_ROWS: the rows past the last group hold +0; marks them written.
  void expect_zero_rows_past_groups(const HostImage& got,
                                    std::vector<std::vector<bool>>* written) const;
  void expect_flags(uint32_t device_flags, uint32_t reference_flags);

  // Logical operand elements: a token row and a feature of lhs, the
  // (k, n) element of group g's rhs (ragged-M) or a token row's n feature
  // (ragged-K), whatever the stored layout.
  float lhs_at(const HostImage& image, int64_t token, int64_t feature) const;
  float rhs_at(const HostImage& image, int64_t group, int64_t row, int64_t col) const;
  void set_lhs(int64_t token, int64_t feature, float value);
  void set_rhs(int64_t group, int64_t row, int64_t col, float value);
  // The stored (row, col) of a logical lhs element, and (batch, row, col) of an rhs one.
  std::pair<int64_t, int64_t> lhs_position(int64_t token, int64_t feature) const;
  std::tuple<int64_t, int64_t, int64_t> rhs_position(int64_t group, int64_t row,
                                                     int64_t col) const;

  GemmSpec spec_;
  gg_path path_;
  std::string label_;
  uint64_t seed_;
  std::vector<GroupExtent> extents_;

  Operand lhs_, rhs_, out_;
  std::optional<Operand> bias_;
  OperandScales lhs_scales_, rhs_scales_;
  DeviceArray sizes_;
  std::optional<DeviceArray> offsets_, alpha_, beta_;  // when given
  std::optional<GuardedBuffer> workspace_;
  std::string setup_error_;  // why no workspace could be sized, if so
};

// Expects `ran`, `gemm`'s run, refused with GG_STATUS_NOT_SUPPORTED and a
// message that names `named`.
void expect_refusal(const GemmCase& gemm, const ::testing::AssertionResult& ran,
                    const std::string& named);

// Runs `spec` on `path` and checks it: the body of most GPU tests.
void run_and_check(const GemmSpec& spec, gg_path path, cudaStream_t stream,
                   Match match = Match::kBounded);

}  // namespace gg::test
