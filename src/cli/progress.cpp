// Progress line: see progress.h.
#include "cli/progress.h"

#include <unistd.h>

#include <cstdio>

namespace gg::cli {

Progress::Progress(int total) : total_(total), in_place_(isatty(STDERR_FILENO) != 0) {}

void Progress::step(const std::string& label) {
  const std::string line =
      "[" + std::to_string(++done_) + "/" + std::to_string(total_) + "] " + label;
  if (in_place_) {
    // Pad with spaces so a shorter line hides the end of the previous one.
    const size_t pad = last_width_ > line.size() ? last_width_ - line.size() : 0;
    std::fprintf(stderr, "\r%s%*s", line.c_str(), static_cast<int>(pad), "");
    last_width_ = line.size();
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void Progress::finish() {
  if (in_place_ && last_width_ > 0) std::fputc('\n', stderr);
}

}  // namespace gg::cli
