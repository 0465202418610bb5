// Group-size generators: see routing.h.
#include "cli/routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "cli/random.h"

namespace gg::cli {

const std::vector<Name<Routing>> kRoutingNames = {
    {"uniform", Routing::kUniform}, {"skewed", Routing::kSkewed}, {"random", Routing::kRandom},
    {"padded", Routing::kPadded},   {"one-hot", Routing::kOneHot}, {"empty", Routing::kEmpty},
};

namespace {

constexpr double kZipfExponent = 1.2;
constexpr double kEmptyFraction = 0.1;

std::vector<int64_t> uniform_sizes(int64_t rows, int32_t groups) {
  std::vector<int64_t> sizes(groups, rows / groups);
  for (int64_t g = 0; g < rows % groups; ++g) ++sizes[g];
  return sizes;
}

// Largest-remainder apportionment of `rows` by `weights`: exact sum, and
// deterministic (ties go to the lower group index).
std::vector<int64_t> apportion(int64_t rows, const std::vector<double>& weights) {
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<int64_t> sizes(weights.size());
  std::vector<double> remainders(weights.size());
  int64_t given = 0;
  for (size_t g = 0; g < weights.size(); ++g) {
    const double share = static_cast<double>(rows) * weights[g] / total;
    sizes[g] = static_cast<int64_t>(std::floor(share));
    remainders[g] = share - static_cast<double>(sizes[g]);
    given += sizes[g];
  }
  std::vector<size_t> order(weights.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainders[a] > remainders[b]; });
  for (size_t i = 0; given < rows; ++i, ++given) ++sizes[order[i % order.size()]];
  return sizes;
}

std::vector<int64_t> skewed_sizes(int64_t rows, int32_t groups, Random& random) {
  std::vector<int32_t> experts(groups);
  std::iota(experts.begin(), experts.end(), 0);
  for (int32_t i = groups - 1; i > 0; --i) std::swap(experts[i], experts[random.below(i + 1)]);
  const auto empty = static_cast<int32_t>(std::lround(kEmptyFraction * groups));
  std::vector<double> weights(groups, 0.0);
  for (int32_t rank = 0; rank < groups - empty; ++rank) {
    weights[experts[rank]] = 1.0 / std::pow(rank + 1.0, kZipfExponent);
  }
  return apportion(rows, weights);
}

}  // namespace

std::vector<int64_t> route(Routing routing, int64_t rows, int32_t groups, uint64_t seed) {
  Random random(seed);
  std::vector<int64_t> sizes(groups, 0);
  switch (routing) {
    case Routing::kUniform:
      return uniform_sizes(rows, groups);
    case Routing::kSkewed:
      return skewed_sizes(rows, groups, random);
    case Routing::kRandom:
      for (int64_t row = 0; row < rows; ++row) ++sizes[random.below(groups)];
      return sizes;
    case Routing::kPadded:
      for (int64_t unit = 0; unit < rows / kPaddedUnit; ++unit) {
        sizes[random.below(groups)] += kPaddedUnit;
      }
      sizes[groups - 1] += rows % kPaddedUnit;
      return sizes;
    case Routing::kOneHot:
      sizes[random.below(groups)] = rows;
      return sizes;
    case Routing::kEmpty:
      return sizes;
  }
  return sizes;
}

}  // namespace gg::cli
