// The benchmark table: a '#' header that names the device, the measured
// rates and how to read the ratios, then one row per case with every column
// as wide as its widest cell (names left-aligned, numbers right-aligned).
#include <algorithm>
#include <string>

#include "cli/report.h"

namespace gg::cli {

const char* const kShapeRule =
    "n = 2*ffn (gate and up projections fused), k = hidden, rows = tokens*top_k";

namespace {

// Four significant digits, without an exponent for the large figures a
// table holds (GB/s, TFLOP/s, ms of a long run).
std::string figure(const std::optional<double>& value) {
  if (!value) return "-";
  char text[32];
  std::snprintf(text, sizeof text, *value >= 1e4 ? "%.0f" : "%.4g", *value);
  return text;
}

}  // namespace

void print_table(const BenchReport& report, std::FILE* stream) {
  std::fprintf(stream, "# device: %s (%s); path: %s\n", report.device.c_str(), report.mode.c_str(),
               report.path.c_str());
  std::fprintf(stream, "# output: %s, beta %g\n", report.output.c_str(), report.beta);
  std::fprintf(stream, "# weights: %s\n", report.weights.c_str());
  std::fprintf(stream, "# operands: %s%s\n", report.format.c_str(),
               report.quantized ? ", K-major (the quantizer's copies)" : "");
  const bool peers = !report.fp8_dense.empty();  // a quantized GPU run's
  if (peers) {
    std::fprintf(stream,
                 "# bf16 ms: ours on bf16 operands; fp8 dense ms: cuBLASLt e4m3 x e4m3, %s, "
                 "all routed rows as one product; dense and loop ms: cuBLAS bf16\n",
                 report.fp8_dense.c_str());
  }
  if (report.rates) {
    std::fprintf(
        stream, "# dense cuBLAS bf16 8192^3: %.1f TFLOP/s; device copy: %.0f GB/s (read + write)\n",
        report.rates->dense_flops_per_s * 1e-12, report.rates->copy_bytes_per_s * 1e-9);
    if (report.rates->fp8_flops_per_s) {
      std::fprintf(stream,
                   "# dense cuBLASLt e4m3 8192^3: %.1f TFLOP/s (the compute floor of products "
                   "on fp8 tensor cores)\n",
                   *report.rates->fp8_flops_per_s * 1e-12);
    }
    if (report.warm_ms > 0) {
      std::fprintf(stream,
                   "# each figure timed after %d ms of the same work, at the clock the GPU "
                   "sustains\n",
                   report.warm_ms);
    } else {
      std::fprintf(stream, "# each figure timed after its warm-up calls only (--warm-ms 0)\n");
    }
  }
  std::fprintf(stream, "# %s\n", kShapeRule);
  std::fprintf(stream,
               "# x dense = dense ms / ms; x loop = loop ms / ms (above 1: faster); "
               "roofline eff = max(FLOPs / dense rate, bytes / copy rate) / ms\n");

  std::vector<std::string> header = {
      "preset", "tokens",  "routing", "op",       "G",       "rows",    "n",      "k",
      "ms",     "TFLOP/s", "GB/s",    "dense ms", "loop ms", "x dense", "x loop", "roofline eff"};
  if (peers) {
    for (const char* column : {"bf16 ms", "x bf16", "fp8 dense ms", "x fp8 dense"})
      header.push_back(column);
  }
  const auto is_text = [](size_t column) {
    return column == 0 || column == 2 || column == 3;
  };  // left-aligned
  std::vector<std::vector<std::string>> cells = {header};
  for (const BenchRow& row : report.rows) {
    cells.push_back({row.preset, std::to_string(row.tokens), row.routing, row.op,
                     std::to_string(row.groups), std::to_string(row.rows), std::to_string(row.n),
                     std::to_string(row.k), figure(row.ms), figure(row.tflops),
                     figure(row.gb_per_s), figure(row.dense_ms), figure(row.loop_ms),
                     figure(row.x_dense), figure(row.x_loop), figure(row.roofline)});
    if (peers) {
      for (const auto& value : {row.bf16_ms, row.x_bf16, row.fp8_dense_ms, row.x_fp8_dense})
        cells.back().push_back(figure(value));
    }
  }
  std::vector<size_t> widths(header.size(), 0);
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) widths[c] = std::max(widths[c], line[c].size());
  }
  for (const auto& line : cells) {
    for (size_t c = 0; c < line.size(); ++c) {
      const int width = static_cast<int>(widths[c]);
      std::fprintf(stream, is_text(c) ? "%-*s" : "%*s", width, line[c].c_str());
      std::fputs(c + 1 < line.size() ? "  " : "\n", stream);
    }
  }
  for (const BenchRow& row : report.rows) {
    for (const std::string& error : {row.error, row.fp8_dense_error}) {
      if (error.empty()) continue;
      std::fprintf(stream, "# %s %lld %s %s: %s\n", row.preset.c_str(),
                   static_cast<long long>(row.tokens), row.routing.c_str(), row.op.c_str(),
                   error.c_str());
    }
  }
}

}  // namespace gg::cli
