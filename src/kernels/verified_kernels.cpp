// The kernels whose GPU tests have passed on a device (verified_kernels.h).
#include "kernels/verified_kernels.h"

#include <stdlib.h>
#include <string.h>

#include <algorithm>
#include <iterator>

namespace gg {
namespace {

// Kernels by the names their paths give them. The portable decode kernels
// passed tests/gpu/quantized_test.cpp and python/tests/test_torch_
// {quantized,recipes}_cuda.py on an H100 80GB HBM3 on 2026-12-06.
constexpr const char* kVerified[] = {
    "the decode kernel for fp8 x fp8",
    "the decode kernel for fp8 rowwise x fp8 rowwise",
    "the decode kernel for mxfp8 x mxfp8",
    "the decode kernel for mxfp8 x mxfp4",
    "the decode kernel for mxfp4 x mxfp4",
    "the decode kernel for nvfp4 x nvfp4",
    "the decode kernel for bf16 x fp8",
    "the decode kernel for bf16 x fp8 rowwise",
    "the decode kernel for bf16 x mxfp8",
    "the decode kernel for bf16 x mxfp4",
    "the decode kernel for bf16 x nvfp4",
    // The sm90 fp8 kernels (e4m3 x e4m3, e5m2 x e4m3; tensor, group and
    // rowwise scales, 1x128 x 128x128 blocks) passed tests/gpu/
    // sm90_fp8_test.cpp, quantized_test.cpp and the torch CUDA tests on an
    // H100 80GB HBM3 on 2026-12-06; the 1x128 x 128x128 revision whose
    // step scales load after the step's wgmmas (StepScaleFeed) passed the
    // whole GPU gemm suite, the compute-sanitizer runs of its cases and the
    // Python blockwise tests on CUDA on an H100 80GB HBM3 on 2026-12-07.
    "the sm90 fp8 kernels",
    // The sm90 decoding kernels (mxfp8, mxfp4, nvfp4 and mixes, quantized
    // weights with bf16 activations; ragged-M, K-major weights) passed
    // tests/gpu/sm90_decoded_test.cpp, quantized_test.cpp and the torch CUDA
    // tests on an H100 80GB HBM3 on 2026-12-06.
    "the sm90 decoding kernels",
    // The sm90 decoding kernels of the weight gradient (MX and NV blocks
    // along the tokens of columnwise copies) passed tests/gpu/
    // sm90_decoded_test.cpp, quantized_test.cpp, their compute-sanitizer
    // runs and the torch CUDA tests on an H100 80GB HBM3 on 2026-12-07.
    "the sm90 decoding kernels for the weight gradient",
    // Per-expert matrices (pointer arrays) on the sm90 kernels: the decoded
    // weight gradient's outputs, and quantized weights on the fp8 and
    // decoding kernels (with their block scales as pointer arrays) passed
    // tests/gpu/sm90_decoded_test.cpp, sm90_fp8_test.cpp, quantized_test.cpp
    // and graph_test.cpp, and their compute-sanitizer runs, on an H100 80GB
    // HBM3 on 2026-12-07.
    "the sm90 decoding kernels for per-expert weight gradients",
    "the sm90 fp8 kernels for per-expert weights",
    "the sm90 decoding kernels for per-expert weights",
    // The sm90 fp8 weight gradient with 1x128 blocks along the tokens, on
    // 128-token windows loaded straight into the fp8 tiles, each block's
    // first tokens split off at the window's start (the revision after the
    // one whose consumers moved every step's codes in place), with the
    // ragged-K consumers' masked 16-byte zeroing: tests/gpu/sm90_fp8_test.cpp
    // (sm90 and auto), the ragged-K, graph, exact, size, determinism and
    // bad-size suites of every path, the TMA coordinates probe, the
    // compute-sanitizer runs (memcheck, racecheck, synccheck) of the fp8
    // small cases and the torch CUDA blockwise tests passed on an H100 80GB
    // HBM3 on 2026-12-08.
    "the sm90 fp8 kernels for 1x128 x 1x128 weight gradients on split windows",
    // The sm90 mxfp8 kernels (fp8 wgmma, each 32-deep block promoted times
    // its MX scales; ragged-M, e4m3 or e5m2 x K-major e4m3 weights, stacked
    // or per expert) passed tests/gpu/sm90_decoded_test.cpp, their
    // compute-sanitizer runs (memcheck, racecheck, synccheck) and the torch
    // CUDA tests of the mxfp8 products and recipe on an H100 80GB HBM3 on
    // 2026-12-07.
    "the sm90 fp8 kernels for mxfp8",
};

bool opted_in() {
  const char* value = getenv(kUnverifiedKernelsVariable);
  return value != nullptr && strcmp(value, "1") == 0;
}

}  // namespace

std::string unverified_kernel_refusal(const std::string& kernel) {
  const bool verified = std::any_of(std::begin(kVerified), std::end(kVerified),
                                    [&](const char* name) { return kernel == name; });
  if (verified || opted_in()) return "";
  return kernel + " has not yet passed its GPU tests on a device, so it does not run by "
         "default; " + kUnverifiedKernelsVariable + "=1 runs it anyway";
}

}  // namespace gg
