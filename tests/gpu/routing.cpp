// See routing.h.
#include "gpu/routing.h"

#include <algorithm>
#include <numeric>

namespace gg::test {

std::vector<int64_t> uniform_sizes(int32_t groups, int64_t tokens) {
  std::vector<int64_t> sizes(static_cast<size_t>(groups), tokens / groups);
  for (int64_t g = 0; g < tokens % groups; ++g) ++sizes[static_cast<size_t>(g)];
  return sizes;
}

std::vector<int64_t> random_sizes(int32_t groups, int64_t tokens, std::mt19937_64& rng) {
  std::vector<int64_t> sizes(static_cast<size_t>(groups), 0);
  // Groups that receive tokens: each with probability 3/4, at least one.
  std::vector<size_t> busy;
  std::bernoulli_distribution receives(0.75);
  for (size_t g = 0; g < sizes.size(); ++g) {
    if (receives(rng)) busy.push_back(g);
  }
  if (busy.empty()) busy.push_back(std::uniform_int_distribution<size_t>(0, sizes.size() - 1)(rng));
  // Split [0, tokens) at busy.size() - 1 random cut points.
  std::uniform_int_distribution<int64_t> cut(0, tokens);
  std::vector<int64_t> cuts(busy.size() - 1);
  for (auto& c : cuts) c = cut(rng);
  cuts.push_back(0);
  cuts.push_back(tokens);
  std::sort(cuts.begin(), cuts.end());
  for (size_t i = 0; i < busy.size(); ++i) sizes[busy[i]] = cuts[i + 1] - cuts[i];
  return sizes;
}

std::vector<int64_t> padded_sizes(int32_t groups, int64_t tokens, int64_t pad,
                                  std::mt19937_64& rng) {
  std::vector<int64_t> sizes = random_sizes(groups, tokens / pad, rng);
  for (int64_t& size : sizes) size *= pad;
  const auto last = std::find_if(sizes.rbegin(), sizes.rend(), [](int64_t s) { return s > 0; });
  if (last != sizes.rend()) *last += tokens % pad;
  else sizes.back() = tokens;
  return sizes;
}

std::vector<int64_t> one_hot_sizes(int32_t groups, int64_t tokens, int32_t hot) {
  std::vector<int64_t> sizes(static_cast<size_t>(groups), 0);
  sizes[static_cast<size_t>(hot)] = tokens;
  return sizes;
}

std::vector<int64_t> cyclic_sizes(int32_t groups, const std::vector<int64_t>& pattern) {
  std::vector<int64_t> sizes(static_cast<size_t>(groups));
  for (size_t g = 0; g < sizes.size(); ++g) sizes[g] = pattern[g % pattern.size()];
  return sizes;
}

int64_t sum_of(const std::vector<int64_t>& sizes) {
  return std::accumulate(sizes.begin(), sizes.end(), int64_t{0});
}

}  // namespace gg::test
