// Group sizes as a router would produce them, and the awkward ones it might.
//
// Every generator returns G sizes summing to exactly `tokens` (all-empty: 0);
// a test picks the buffer's row capacity M >= tokens separately, so "sum < M"
// is a choice of the test, not of the generator.
#pragma once

#include <stdint.h>

#include <random>
#include <vector>

namespace gg::test {

// Near-equal shares: the first tokens % G groups get one row more.
std::vector<int64_t> uniform_sizes(int32_t groups, int64_t tokens);
// A random split in which about a quarter of the groups (never all) get no
// rows; sizes are unaligned in general.
std::vector<int64_t> random_sizes(int32_t groups, int64_t tokens, std::mt19937_64& rng);
// random_sizes in units of `pad` tokens, the last non-empty group holding
// tokens % pad more: every non-empty group starts on a multiple of `pad`
// (a router that pads each expert to its blocks), the last one partial.
std::vector<int64_t> padded_sizes(int32_t groups, int64_t tokens, int64_t pad,
                                  std::mt19937_64& rng);
// Every token in group `hot`.
std::vector<int64_t> one_hot_sizes(int32_t groups, int64_t tokens, int32_t hot);
// pattern[g % pattern.size()] for group g, e.g. the tile edges
// {63, 64, 65, 127, 128, 129} or all ones.
std::vector<int64_t> cyclic_sizes(int32_t groups, const std::vector<int64_t>& pattern);

int64_t sum_of(const std::vector<int64_t>& sizes);

}  // namespace gg::test
