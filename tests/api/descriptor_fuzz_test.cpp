// Descriptors with random fields through the workspace queries of every
// path: whatever a C caller leaves in a descriptor, a query returns one of
// the documented statuses and never crashes; a failure carries a message,
// a success none. Each case starts from a valid problem (ragged-M, ragged-K,
// low-precision formats, pointer arrays, ragged and stacked quantize) and
// sets one to four fields to values at the edges of their types (0, -1,
// 2^31, 2^61, INT64_MAX, INT64_MIN, ...), enums outside their enumerators,
// pointers NULL or misaligned, scalars NaN or infinite. A query reads no
// memory through the descriptor's pointers, so any shape is safe to ask
// about; the sequence is fixed by the seed, and a failure names its case.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "problems.h"

namespace gg_test {
namespace {

constexpr int kCases = 20000;

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  int64_t extent() {
    static const int64_t kValues[] = {0,
                                      1,
                                      -1,
                                      2,
                                      7,
                                      8,
                                      16,
                                      128,
                                      (int64_t{1} << 31) - 1,
                                      int64_t{1} << 31,
                                      int64_t{1} << 32,
                                      int64_t{1} << 61,
                                      (int64_t{1} << 61) + 1,
                                      int64_t{1} << 62,
                                      std::numeric_limits<int64_t>::max(),
                                      std::numeric_limits<int64_t>::min()};
    return pick(kValues);
  }

  int32_t count() {
    static const int32_t kValues[] = {0,    1,    -1,   2,    3,    2048,
                                      2049, 4096, std::numeric_limits<int32_t>::max(),
                                      std::numeric_limits<int32_t>::min()};
    return pick(kValues);
  }

  int enumerator() {
    static const int kValues[] = {-1, 0, 1, 2, 3, 4, 5, 6, 7, 64, std::numeric_limits<int>::max()};
    return pick(kValues);
  }

  uint32_t bits() {
    static const uint32_t kValues[] = {0, 1, 2, 3, 0x80000000u, 0xffffffffu};
    return pick(kValues);
  }

  float scalar() {
    static const float kValues[] = {0.0f, 1.0f, -1.0f, NAN, INFINITY, -INFINITY, 3e38f};
    return pick(kValues);
  }

  // NULL, misaligned by 1, 2 or 8 bytes, or `valid` as it was.
  template <class T>
  T* pointer(T* valid) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(valid);
    const uintptr_t values[] = {0, base + 1, base + 2, base + 8, base};
    return reinterpret_cast<T*>(pick(values));
  }

  size_t below(size_t n) { return std::uniform_int_distribution<size_t>(0, n - 1)(rng_); }

 private:
  template <class T, size_t N>
  T pick(const T (&values)[N]) {
    return values[below(N)];
  }

  std::mt19937_64 rng_;
};

// One field of a tensor set to an edge value.
void mutate_tensor(Mutator& m, gg_tensor* t) {
  switch (m.below(9)) {
    case 0:
      t->data = m.pointer(t->data);
      break;
    case 1:
      set_raw(&t->dtype, m.enumerator());
      break;
    case 2:
      t->rank = m.count();
      break;
    case 3:
      t->shape[m.below(3)] = m.extent();
      break;
    case 4:
      t->strides[m.below(3)] = m.extent();
      break;
    case 5:
      t->flags = m.bits();
      break;
    case 6:
      set_raw(&t->block_scaling, m.enumerator());
      break;
    case 7:
      t->block_scales = m.pointer(t->block_scales);
      break;
    default:
      if (m.below(2) == 0) {
        set_raw(&t->scale_extent, m.enumerator());
      } else {
        t->scale = m.pointer(t->scale);
      }
      break;
  }
}

void mutate_sizes(Mutator& m, gg_group_sizes* s) {
  switch (m.below(3)) {
    case 0:
      s->sizes = m.pointer(s->sizes);
      break;
    case 1:
      s->offsets = m.pointer(s->sizes);  // the sizes' array, or a bad one
      break;
    default:
      set_raw(&s->type, m.enumerator());
      break;
  }
}

void mutate_gemm(Mutator& m, gg_gemm_desc* d) {
  switch (m.below(12)) {
    case 0:
      set_raw(&d->op, m.enumerator());
      break;
    case 1:
      d->num_groups = m.count();
      break;
    case 2:
      mutate_sizes(m, &d->group_sizes);
      break;
    case 3:
      mutate_tensor(m, &d->lhs);
      break;
    case 4:
      mutate_tensor(m, &d->rhs);
      break;
    case 5:
      mutate_tensor(m, &d->out);
      break;
    case 6:
      if (d->bias.data == nullptr) d->bias = view(d->rhs.data, GG_DTYPE_BF16, {kGroups, kN});
      mutate_tensor(m, &d->bias);
      break;
    case 7:
      set_raw(m.below(2) == 0 ? &d->lhs_layout : &d->rhs_layout, m.enumerator());
      break;
    case 8:
      (m.below(2) == 0 ? d->alpha : d->beta).value = m.scalar();
      break;
    case 9: {
      gg_scalar& s = m.below(2) == 0 ? d->alpha : d->beta;
      s.per_group = m.pointer(static_cast<const float*>(d->out.data));
      break;
    }
    case 10:
      d->flags = m.bits();
      break;
    default:
      set_raw(&d->path, m.enumerator());
      break;
  }
}

void mutate_quantize(Mutator& m, gg_quantize_desc* d) {
  switch (m.below(7)) {
    case 0:
      d->num_groups = m.count();
      break;
    case 1:
      mutate_sizes(m, &d->group_sizes);
      break;
    case 2:
      mutate_tensor(m, &d->input);
      break;
    case 3:
      mutate_tensor(m, &d->rowwise);
      break;
    case 4:
      mutate_tensor(m, &d->columnwise);
      break;
    case 5:
      d->amax = m.pointer(d->amax);
      break;
    default:
      set_raw(&d->path, m.enumerator());
      break;
  }
}

GemmProblem gemm_start(Mutator& m) {
  switch (m.below(5)) {
    case 0:
      return ragged_m_problem();
    case 1:
      return ragged_k_problem();
    case 2: {
      GemmProblem p = ragged_m_problem();
      set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
      set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E4M3, GG_BLOCK_MX32, GG_SCALE_NONE);
      return p;
    }
    case 3: {
      GemmProblem p = ragged_k_problem();
      set_format(&p.arena, &p.desc.lhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
      set_format(&p.arena, &p.desc.rhs, GG_DTYPE_E2M1, GG_BLOCK_NV16, GG_SCALE_GROUP);
      return p;
    }
    default: {
      GemmProblem p = ragged_m_problem();
      make_pointer_array(&p.arena, &p.desc.rhs);
      return p;
    }
  }
}

const gg_path kPaths[] = {GG_PATH_AUTO, GG_PATH_REFERENCE, GG_PATH_PORTABLE, GG_PATH_SM90};

// How many queries answered with each status, [GG_STATUS_SUCCESS ..
// GG_STATUS_INTERNAL_ERROR]: a run must see successes as well as both kinds
// of refusal, or its mutations reach too little of the checks (or too much).
using Tally = std::array<int, GG_STATUS_INTERNAL_ERROR + 1>;

void expect_a_mix(const Tally& tally) {
  EXPECT_GT(tally[GG_STATUS_SUCCESS], 0);
  EXPECT_GT(tally[GG_STATUS_INVALID_ARGUMENT], 0);
  EXPECT_GT(tally[GG_STATUS_NOT_SUPPORTED], 0);
}

// The query's status is documented and agrees with gg_last_error.
void expect_answered(gg_status status, const std::string& what, Tally* tally) {
  if (status >= GG_STATUS_SUCCESS && status <= GG_STATUS_INTERNAL_ERROR) ++(*tally)[status];
  switch (status) {
    case GG_STATUS_SUCCESS:
      EXPECT_STREQ(gg_last_error(), "") << what;
      return;
    case GG_STATUS_INVALID_ARGUMENT:
    case GG_STATUS_NOT_SUPPORTED:
    case GG_STATUS_NO_DEVICE:
    case GG_STATUS_CUDA_ERROR:
      EXPECT_STRNE(gg_last_error(), "") << what << ": status " << status << " without a message";
      return;
    default:
      ADD_FAILURE() << what << ": status " << status << ": " << gg_last_error();
  }
}

TEST(DescriptorFuzz, GemmWorkspaceQueriesAnswerEveryDescriptor) {
  Mutator m(1);
  Tally tally{};
  for (int c = 0; c < kCases && !::testing::Test::HasFailure(); ++c) {
    GemmProblem p = gemm_start(m);
    const size_t mutations = 1 + m.below(4);
    for (size_t i = 0; i < mutations; ++i) mutate_gemm(m, &p.desc);
    for (gg_path path : kPaths) {
      gg_gemm_desc d = p.desc;
      if (d.path == GG_PATH_REFERENCE) d.path = path;  // unless a mutation set it
      size_t bytes = 0;
      expect_answered(gg_grouped_gemm_workspace_size(&d, &bytes),
                      "gemm case " + std::to_string(c) + " path " + std::to_string(d.path), &tally);
    }
  }
  expect_a_mix(tally);
}

TEST(DescriptorFuzz, QuantizeWorkspaceQueriesAnswerEveryDescriptor) {
  Mutator m(2);
  Tally tally{};
  for (int c = 0; c < kCases && !::testing::Test::HasFailure(); ++c) {
    QuantizeProblem p = m.below(2) == 0 ? ragged_quantize_problem() : stacked_quantize_problem();
    const size_t mutations = 1 + m.below(4);
    for (size_t i = 0; i < mutations; ++i) mutate_quantize(m, &p.desc);
    for (gg_path path : kPaths) {
      gg_quantize_desc d = p.desc;
      if (d.path == GG_PATH_REFERENCE) d.path = path;
      size_t bytes = 0;
      expect_answered(gg_grouped_quantize_workspace_size(&d, &bytes),
                      "quantize case " + std::to_string(c) + " path " + std::to_string(d.path),
                      &tally);
    }
  }
  expect_a_mix(tally);
}

}  // namespace
}  // namespace gg_test
