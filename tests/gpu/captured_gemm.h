// A CUDA graph of one GemmCase launch, captured once and replayed, and the
// check the graph tests make with it (graph_test.cpp, quantized_test.cpp).
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/cuda_check.h"
#include "gpu/gemm_case.h"

namespace gg::test {

// An instantiated graph of one GemmCase launch.
class CapturedGemm {
 public:
  CapturedGemm(GemmCase& gemm, cudaStream_t stream) {
    check_cuda(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal),
               "cudaStreamBeginCapture");
    launched_ = gemm.launch(stream);
    // End the capture whatever happened, so the stream is usable again; a
    // failed launch explains itself better than the capture's error would.
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph_);
    if (!launched_) return;
    check_cuda(ended, "cudaStreamEndCapture");
    check_cuda(cudaGraphInstantiate(&exec_, graph_, 0), "cudaGraphInstantiate");
  }
  ~CapturedGemm() {
    if (exec_ != nullptr) cudaGraphExecDestroy(exec_);
    if (graph_ != nullptr) cudaGraphDestroy(graph_);
  }
  CapturedGemm(const CapturedGemm&) = delete;
  CapturedGemm& operator=(const CapturedGemm&) = delete;

  const ::testing::AssertionResult& captured() const { return launched_; }
  void replay(cudaStream_t stream) const {
    check_cuda(cudaGraphLaunch(exec_, stream), "cudaGraphLaunch");
    check_cuda(cudaStreamSynchronize(stream), "the replayed GEMM");
  }

 private:
  ::testing::AssertionResult launched_ = ::testing::AssertionFailure();
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

// Captures `spec` on `path` and replays it with the captured sizes, then with
// each routing of `reroutes` (new data too, and, for a pointer array, its
// matrices moved), checking every replay against the reference.
inline void expect_replays_correct(gg_path path, cudaStream_t stream, const GemmSpec& spec,
                                   const std::vector<std::vector<int64_t>>& reroutes) {
  GemmCase gemm(spec, path);
  SCOPED_TRACE(gemm.label());
  const CapturedGemm graph(gemm, stream);
  ASSERT_TRUE(graph.captured());
  for (size_t round = 0; round <= reroutes.size(); ++round) {
    SCOPED_TRACE("replay " + std::to_string(round));
    if (round > 0) gemm.reroute(reroutes[round - 1], round);
    if (round > 0 && spec.pointer_array) gemm.move_expert_matrices();
    gemm.prepare_output();
    graph.replay(stream);
    gemm.expect_correct();
  }
}

}  // namespace gg::test
