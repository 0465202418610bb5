// Host memory checks: see host_memory.h.
#include "cli/host_memory.h"

#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

namespace gg::cli {

std::string byte_count_text(double bytes) {
  char text[96];
  std::snprintf(text, sizeof text, "%.1f GiB (%.0f bytes)", bytes / (1u << 30), bytes);
  return text;
}

void throw_host_memory_error(double bytes, const std::string& what, const std::string& why) {
  throw Failure("cannot allocate " + byte_count_text(bytes) + " of host memory for " + what + ": " +
                why);
}

double available_host_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string line;
  while (std::getline(meminfo, line)) {
    std::istringstream fields(line);
    std::string name;
    double kib = 0.0;
    if (fields >> name >> kib && name == "MemAvailable:") return kib * 1024.0;
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace gg::cli
