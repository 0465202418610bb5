/*
 * The README's "C API in a minute", as a whole program: three experts' rows
 * of x, stored group after group, each multiplied by its expert's weight in
 * one grouped product, y[g rows] = x[g rows] · W[g]ᵀ.
 *
 * With a GPU it runs GG_PATH_AUTO on device buffers; without one it runs the
 * same descriptor on GG_PATH_REFERENCE, the library's CPU oracle, whose
 * pointers are all host memory. Either way the result is checked against a
 * plain loop. The inputs are small integers, so every product and sum is
 * exact in bf16 and fp32 alike and the check asks for equality.
 */
#include <groupgemm/groupgemm.h>

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { G = 3, M = 16, N = 8, K = 32 };

/* bf16 is the top half of an fp32; round to nearest even. */
static uint16_t bf16_from_float(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  bits += 0x7fffu + ((bits >> 16) & 1u);
  return (uint16_t)(bits >> 16);
}

static float float_from_bf16(uint16_t value) {
  const uint32_t bits = (uint32_t)value << 16;
  float result;
  memcpy(&result, &bits, sizeof result);
  return result;
}

static void check_gg(gg_status status, const char* what) {
  if (status != GG_STATUS_SUCCESS) {
    fprintf(stderr, "c_api_minute: %s: %s: %s\n", what, gg_status_string(status), gg_last_error());
    exit(1);
  }
}

static void check_cuda(cudaError_t error, const char* what) {
  if (error != cudaSuccess) {
    fprintf(stderr, "c_api_minute: %s: %s\n", what, cudaGetErrorString(error));
    exit(1);
  }
}

/* A copy of `bytes` of host data where the path reads it: on the GPU, or
 * the host buffer itself for the reference. */
static void* place(void* host, size_t bytes, int on_gpu) {
  if (!on_gpu) return host;
  void* device;
  check_cuda(cudaMalloc(&device, bytes), "cudaMalloc");
  check_cuda(cudaMemcpy(device, host, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to the GPU");
  return device;
}

int main(void) {
  int devices = 0;
  const int on_gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  const gg_path path = on_gpu ? GG_PATH_AUTO : GG_PATH_REFERENCE;

  /* Rows 0-4 are expert 0's, expert 1 has none, rows 5-13 are expert 2's;
   * rows 14-15 belong to no expert and are never written. */
  int32_t group_sizes[G] = {5, 0, 9};
  static uint16_t x_host[M * K], w_host[G * N * K], y_host[M * N];
  for (int i = 0; i < M * K; ++i) x_host[i] = bf16_from_float((float)(i % 5 - 2));
  for (int i = 0; i < G * N * K; ++i) w_host[i] = bf16_from_float((float)(i % 7 - 3));

  void* x = place(x_host, sizeof x_host, on_gpu);
  void* w = place(w_host, sizeof w_host, on_gpu);
  void* y = place(y_host, sizeof y_host, on_gpu);
  void* sizes = place(group_sizes, sizeof group_sizes, on_gpu);
  gg_stream_t stream = NULL; /* the default stream */

  /* The README's snippet, with the path chosen above. */
  gg_gemm_desc d = {0};
  d.op = GG_OP_RAGGED_M;
  d.num_groups = G;
  d.group_sizes = (gg_group_sizes){sizes, NULL, GG_INDEX_INT32};
  d.lhs = (gg_tensor){.data = x, .dtype = GG_DTYPE_BF16, .rank = 2, .shape = {M, K}};
  d.rhs = (gg_tensor){.data = w, .dtype = GG_DTYPE_BF16, .rank = 3, .shape = {G, N, K}};
  d.rhs_layout = GG_LAYOUT_T; /* [G, N, K]: the nn.Linear layout */
  d.out = (gg_tensor){.data = y, .dtype = GG_DTYPE_BF16, .rank = 2, .shape = {M, N}};
  d.alpha.value = 1.0f;
  d.path = path;

  size_t ws_bytes;
  check_gg(gg_grouped_gemm_workspace_size(&d, &ws_bytes), "gg_grouped_gemm_workspace_size");
  void* ws;
  if (on_gpu) {
    check_cuda(cudaMalloc(&ws, ws_bytes), "cudaMalloc");
    check_cuda(cudaMemset(ws, 0, ws_bytes), "cudaMemset");
  } else {
    ws = calloc(1, ws_bytes > 0 ? ws_bytes : 1);
    if (ws == NULL) {
      fprintf(stderr, "c_api_minute: out of host memory for a %zu-byte workspace\n", ws_bytes);
      return 1;
    }
  }
  check_gg(gg_grouped_gemm(&d, ws, ws_bytes, stream), "gg_grouped_gemm");

  /* Outside any graph capture: were the device-side sizes sane? */
  uint32_t flags;
  check_gg(gg_check(ws, path, stream, &flags), "gg_check");
  if (flags != 0) {
    fprintf(stderr, "c_api_minute: gg_check reports flags 0x%x\n", (unsigned)flags);
    return 1;
  }
  if (on_gpu) {
    check_cuda(cudaMemcpy(y_host, y, sizeof y_host, cudaMemcpyDeviceToHost), "cudaMemcpy back");
    void* buffers[] = {x, w, y, sizes, ws};
    for (size_t i = 0; i < sizeof buffers / sizeof buffers[0]; ++i) cudaFree(buffers[i]);
  } else {
    free(ws);
  }

  /* The plain loop: each group's rows times its expert's weight. */
  int mismatches = 0, row = 0;
  for (int g = 0; g < G; ++g) {
    for (int end = row + group_sizes[g]; row < end; ++row) {
      for (int n = 0; n < N; ++n) {
        float expected = 0.0f;
        for (int k = 0; k < K; ++k) {
          expected += float_from_bf16(x_host[row * K + k]) *
                      float_from_bf16(w_host[(g * N + n) * K + k]);
        }
        mismatches += float_from_bf16(y_host[row * N + n]) != expected;
      }
    }
  }
  printf("c_api_minute: %s (%s): %d rows of %d experts, %d of %d outputs differ from a plain "
         "loop\n",
         on_gpu ? "GG_PATH_AUTO" : "GG_PATH_REFERENCE",
         on_gpu ? "GPU buffers" : "no NVIDIA driver/GPU found: host buffers", row, G, mismatches,
         row * N);
  return mismatches == 0 ? 0 : 1;
}
