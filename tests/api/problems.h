// Small valid descriptors over host memory, the starting points of the API
// tests: each test changes one field and expects one status and message.
//
// Every buffer is 256-byte aligned, zero-filled and large enough for its
// tensor in any dtype (4 bytes per element), so a test may change a dtype or
// a stride without reallocating. Shapes are multiples of 8 elements, so rows
// also meet the GPU paths' 16-byte alignment.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <memory>
#include <vector>

#include "groupgemm/groupgemm.h"

namespace gg_test {

constexpr int32_t kGroups = 3;
constexpr int64_t kRows = 18;  // M: the ragged capacity
constexpr int64_t kK = 32;     // ragged-M contraction
constexpr int64_t kN = 24;     // ragged-M output columns
constexpr int64_t kP = 32;     // ragged-K output rows
constexpr int64_t kQ = 24;     // ragged-K output columns

// Owns the host memory descriptors point into.
class Arena {
 public:
  // `bytes` of 256-byte aligned, zero-filled memory, alive as long as the arena.
  void* allocate(size_t bytes);

 private:
  struct Free {
    void operator()(void* p) const { free(p); }
  };
  std::vector<std::unique_ptr<void, Free>> blocks_;
};

// A rank-2 or rank-3 view with packed (zero) strides.
gg_tensor view(void* data, gg_dtype dtype, std::vector<int64_t> shape);

struct GemmProblem {
  Arena arena;
  gg_gemm_desc desc{};
};

// ragged-M, bf16: lhs [M, K], rhs [G, N, K] (rhs_layout T), out [M, N] bf16,
// int32 sizes {5, 0, 11}; alpha 1, beta 0; path reference.
GemmProblem ragged_m_problem();

// ragged-K, bf16: lhs [M, P], rhs [M, Q] (both layout N), out [G, P, Q]
// fp32, int32 sizes {5, 0, 11}; alpha 1, beta 0; path reference.
GemmProblem ragged_k_problem();

// Gives an operand (or output) a format, allocating the block scales and the
// fp32 scale it needs.
void set_format(Arena* arena, gg_tensor* tensor, gg_dtype dtype, gg_block_scaling scaling,
                gg_scale_extent extent);

// Makes rhs (ragged-M) or out (ragged-K) an array of G pointers to matrices.
void make_pointer_array(Arena* arena, gg_tensor* tensor);

struct QuantizeProblem {
  Arena arena;
  gg_quantize_desc desc{};
};

// Ragged bf16 input [M, K], int32 sizes {5, 0, 11}: rowwise [M, K] and
// columnwise [K, M] mxfp8 e4m3, and amax; path reference.
QuantizeProblem ragged_quantize_problem();

// Stacked bf16 input [G, N, K]: rowwise [G, N, K] fp8 e4m3 with 128x128
// block scales; path reference.
QuantizeProblem stacked_quantize_problem();

// A host workspace of the reference's size.
struct HostWorkspace {
  Arena arena;
  size_t bytes = 256;
  void* data = arena.allocate(256);
};

// An enum holding a value outside its enumerators, as a C caller may pass
// one: a value of the type, every enum of the header having int as its
// fixed underlying type in C++ (GG_ENUM).
template <class Enum>
Enum raw_enum(int value) {
  static_assert(sizeof(Enum) == sizeof(int), "C enums are int-sized");
  return static_cast<Enum>(value);
}

template <class Enum>
void set_raw(Enum* field, int value) {
  *field = raw_enum<Enum>(value);
}

// Pointer `bytes` bytes past p: misaligns a valid pointer on purpose.
inline void* offset(void* p, size_t bytes) { return static_cast<char*>(p) + bytes; }

}  // namespace gg_test
