// How many rows each expert receives: the group sizes of a problem.
//
//   uniform  rows / G each, the remainder spread one by one over the first
//            groups, as a balanced router would;
//   skewed   Zipf-like (weight 1 / rank^1.2 over a seeded order of experts)
//            with the last ~10% of that order empty, as real routers are
//            when a few experts are popular;
//   random   every row sent to a uniformly drawn expert;
//   padded   random in units of kPaddedUnit rows, so that every count is
//            a multiple of it (the last expert also takes rows mod the
//            unit): the counts of a pipeline that pads each expert's rows
//            to an aligned count, whose groups then start on 32 rows;
//   one-hot  every row sent to one seeded expert;
//   empty    no rows at all.
// Sizes always sum to `rows` (zero for empty), and a seed gives the same
// sizes everywhere.
#pragma once

#include <stdint.h>

#include <vector>

#include "cli/args.h"

namespace gg::cli {

enum class Routing { kUniform, kSkewed, kRandom, kPadded, kOneHot, kEmpty };

// Rows of the padded routing's units: a 16-byte chunk of e2m1 codes, so
// every group starts on a chunk of every columnwise output.
constexpr int64_t kPaddedUnit = 32;

extern const std::vector<Name<Routing>> kRoutingNames;

std::vector<int64_t> route(Routing routing, int64_t rows, int32_t groups, uint64_t seed);

}  // namespace gg::cli
