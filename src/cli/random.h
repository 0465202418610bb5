// Seeded pseudo-random numbers for problem data and routing.
//
// splitmix64 rather than <random>: the standard distributions are
// implementation-defined, and a seed must name the same problem on every
// machine and compiler so a failing `verify` can be reproduced anywhere.
#pragma once

#include <stdint.h>

namespace gg::cli {

class Random {
 public:
  explicit Random(uint64_t seed) : state_(seed) {}

  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }

  // Uniform in [0, 1), from the top 53 bits.
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

  // Uniform in [-1, 1).
  double symmetric() { return 2.0 * uniform() - 1.0; }

  // Uniform integer in [0, n), n > 0.
  int64_t below(int64_t n) { return static_cast<int64_t>(uniform() * static_cast<double>(n)); }

 private:
  uint64_t state_;
};

}  // namespace gg::cli
