// A progress line on stderr for runs of many cases: rewritten in place
// (carriage return) when stderr is a terminal, one line per case otherwise
// so logs stay readable. stdout carries only the results.
#pragma once

#include <string>

namespace gg::cli {

class Progress {
 public:
  explicit Progress(int total);
  void step(const std::string& label);  // announces the next case
  void finish();                        // ends an in-place line

 private:
  int total_;
  int done_ = 0;
  bool in_place_;
  size_t last_width_ = 0;
};

}  // namespace gg::cli
