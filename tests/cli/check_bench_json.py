"""Reads `groupgemm bench --json` on stdin and checks the document's shape.

Usage: check_bench_json.py CASES [gpu]
CASES is the number of cases the command line asked for; with "gpu" the
run must have measured on a GPU (machine rates present, every figure set).
"""
import json
import sys


def main():
    expected_cases = int(sys.argv[1])
    need_gpu = len(sys.argv) > 2 and sys.argv[2] == "gpu"
    document = json.load(sys.stdin)
    cases = document["cases"]
    assert len(cases) == expected_cases, f"{len(cases)} cases, expected {expected_cases}"
    on_gpu = document["mode"] == "gpu"
    assert on_gpu or not need_gpu, f"mode {document['mode']}, expected gpu"
    assert (document["rates"] is not None) == on_gpu, "machine rates go with the GPU mode"
    assert document["output"] in ("bf16", "fp16", "fp32"), document["output"]
    assert isinstance(document["beta"], (int, float)), document["beta"]
    assert document["weights"] in ("stacked", "per-expert"), document["weights"]
    gpu_figures = ("dense_ms", "loop_ms", "x_dense", "x_loop", "roofline_efficiency")
    quantized = document["format"] not in ("bf16", "fp16")
    assert (document["fp8_dense"] is not None) == (on_gpu and quantized), document["fp8_dense"]
    for case in cases:
        assert case["error"] is None, case
        assert case["ms"] > 0 and case["tflops"] > 0 and case["gb_per_s"] > 0, case
        assert case["rows"] > 0 and case["groups"] > 0, case
        for key in gpu_figures:
            assert (case[key] is not None) == on_gpu, (key, case)
        if on_gpu:
            assert 0 < case["roofline_efficiency"] <= 1.5, case
        # A quantized GPU run sets its peers beside ours: our bf16 product,
        # and cuBLASLt's dense fp8 or why it has none.
        for key in ("bf16_ms", "x_bf16"):
            assert (case[key] is not None) == (on_gpu and quantized), (key, case)
        if on_gpu and quantized:
            assert (case["fp8_dense_ms"] is None) != (case["fp8_dense_error"] is None), case
        else:
            assert case["fp8_dense_ms"] is None and case["fp8_dense_error"] is None, case
    print(f"bench JSON: {len(cases)} cases, mode {document['mode']}")


if __name__ == "__main__":
    main()
