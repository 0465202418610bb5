// The benchmark as one JSON document: the device, the measured rates (null
// without a GPU), the shape rule, and one object per case whose missing
// figures are null. Numbers keep 6 significant digits.
#include <cmath>
#include <string>

#include "cli/report.h"

namespace gg::cli {

namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escape[8];
      std::snprintf(escape, sizeof escape, "\\u%04x", static_cast<unsigned>(c));
      out += escape;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string number(const std::optional<double>& value) {
  if (!value || !std::isfinite(*value)) return "null";  // JSON has no NaN or infinity
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", *value);
  return text;
}

std::string integer(int64_t value) { return std::to_string(value); }

std::string text_or_null(const std::string& text) {
  return text.empty() ? std::string("null") : quoted(text);
}

}  // namespace

void print_json(const BenchReport& report, std::FILE* stream) {
  std::string json = "{\n  \"mode\": " + quoted(report.mode) +
                     ",\n  \"device\": " + quoted(report.device) +
                     ",\n  \"path\": " + quoted(report.path) +
                     ",\n  \"output\": " + quoted(report.output) +
                     ",\n  \"beta\": " + number(report.beta) +
                     ",\n  \"weights\": " + quoted(report.weights) +
                     ",\n  \"format\": " + quoted(report.format) +
                     ",\n  \"fp8_dense\": " + text_or_null(report.fp8_dense) +
                     ",\n  \"rates\": ";
  if (report.rates) {
    const std::optional<double>& fp8 = report.rates->fp8_flops_per_s;
    json += "{\"dense_bf16_tflops\": " + number(report.rates->dense_flops_per_s * 1e-12) +
            ", \"dense_fp8_tflops\": " +
            number(fp8 ? std::optional<double>(*fp8 * 1e-12) : std::nullopt) +
            ", \"copy_gb_per_s\": " + number(report.rates->copy_bytes_per_s * 1e-9) +
            ", \"warm_ms\": " + number(report.warm_ms) + "}";
  } else {
    json += "null";
  }
  json += ",\n  \"shape_rule\": " + quoted(kShapeRule) + ",\n  \"cases\": [";
  for (size_t i = 0; i < report.rows.size(); ++i) {
    const BenchRow& row = report.rows[i];
    json += std::string(i == 0 ? "\n" : ",\n") + "    {\"preset\": " + quoted(row.preset) +
            ", \"tokens\": " + integer(row.tokens) + ", \"routing\": " + quoted(row.routing) +
            ", \"op\": " + quoted(row.op) + ", \"groups\": " + integer(row.groups) +
            ", \"rows\": " + integer(row.rows) + ", \"n\": " + integer(row.n) +
            ", \"k\": " + integer(row.k) + ", \"ms\": " + number(row.ms) +
            ", \"tflops\": " + number(row.tflops) + ", \"gb_per_s\": " + number(row.gb_per_s) +
            ", \"dense_ms\": " + number(row.dense_ms) + ", \"loop_ms\": " + number(row.loop_ms) +
            ", \"x_dense\": " + number(row.x_dense) + ", \"x_loop\": " + number(row.x_loop) +
            ", \"roofline_efficiency\": " + number(row.roofline) +
            ", \"bf16_ms\": " + number(row.bf16_ms) + ", \"x_bf16\": " + number(row.x_bf16) +
            ", \"fp8_dense_ms\": " + number(row.fp8_dense_ms) +
            ", \"x_fp8_dense\": " + number(row.x_fp8_dense) +
            ", \"error\": " + text_or_null(row.error) +
            ", \"fp8_dense_error\": " + text_or_null(row.fp8_dense_error) + "}";
  }
  json += "\n  ]\n}\n";
  std::fputs(json.c_str(), stream);
}

}  // namespace gg::cli
