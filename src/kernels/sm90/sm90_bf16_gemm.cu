// Hopper grouped GEMM, bf16/fp16 in, fp32 accumulate, one launch per op:
//   ragged-M  out[g rows] = alpha_g * lhs[g rows] * op(rhs[g]) + beta_g * out[g rows] + bias[g]
//   ragged-K  out[g]      = alpha_g * lhs[g rows]^T * rhs[g rows] + beta_g * out[g]
//
// Plan of the kernel. A persistent grid (one CTA per SM) of 3 warpgroups;
// for ragged-K with long groups, clusters of two CTAs that share each B tile
// (see grouped_gemm_kernel's kCluster).
// Every CTA first builds the group table from the device sizes
// (group_table.cuh), then takes tiles c, c + grid, ... of BM x BN outputs.
// Ragged-M numbers its tiles group after group, and within a group in bands
// of m-tiles that walk the n-tiles together (tile_order.h), so CTAs running
// together share the group's weights and lhs rows in L2; ragged-K numbers
// them group after group over the static [P/BM, Q/BN] grid of each group's
// output.
//   - Warpgroup 0 is the producer: one thread issues TMA loads of the A and B
//     tiles of each 64-deep k-step into a ring of shared-memory stages, each
//     guarded by a "full" mbarrier (TMA bytes landed) and an "empty" mbarrier
//     (every consumer warp done reading). An operand whose contraction dim is
//     contiguous is loaded K-major in one box; one whose M/N dim is contiguous
//     is loaded MN-major as 64-wide boxes and read by wgmma transposed.
//     Out-of-bounds elements read as zero (TMA), so K and N tails need no code.
//     Per-expert weights (a device array of G pointers) load through a map of
//     their own, which a small kernel writes just before (expert_maps.h).
//   - Warpgroups 1 and 2 are consumers: each owns 64 rows of a 128-row tile
//     (or, in a 64-row tile, the 64 rows and half its columns: the tiles of
//     short ragged-M groups, and in the 128 x 256 instance those of groups
//     of at most 64 rows, which so cost half the wgmma work) and
//     runs wgmma m64nNk16, keeping one wgmma group in flight while releasing the
//     stage of the one before. The epilogue (epilogue.cuh) applies alpha,
//     beta and bias in fp32 and leaves through TMA stores from a staging
//     buffer, draining while the warpgroup starts its next tile; a block that
//     ends inside its group uses masked stores from registers, so no write
//     ever leaves a group or the output. Ragged-K outputs are stored
//     evict-first in L2, so that they do not push out the operands. Ragged-K
//     128 x 256 tiles of a few whole k-steps (groups averaging 128-511
//     tokens) store their two blocks in turn, one under the other's wgmmas.
//   - Ragged-M reads lhs rows of the next group inside its last tile; they
//     only feed output rows that are never stored. Ragged-K contracts over a
//     group's tokens, so the tokens of the next group inside the last k-step
//     must count as zero. Where both operands hold tokens as rows (the usual
//     wgrad), a group that does not start 16-byte aligned and fill whole
//     k-steps loads through maps of its own that start at its first token
//     and end at its last (token_maps.h), written by a small kernel just
//     before, and TMA fills the rows past the end with zeros. Otherwise (a
//     K-major operand, whose boxes must start 16-byte aligned) a group's
//     k-steps begin at its first token rounded down to 8, and the consumers
//     zero the tokens outside the group in shared memory (both operands,
//     since the neighbours' data may hold anything) before the wgmma reads
//     the stage. Group starts need no alignment either way. A step issues
//     only the 16-deep wgmma slices that hold group tokens: a group of a few
//     tokens costs one wgmma per tile, not four.
// Shared memory: the stages, the staging buffer (64 rows x BN 16-bit values
// per consumer), the mbarriers, the group table (plan.h sizes it).
// Register budget (setmaxnreg): producer 40, consumers 232.
#include <cuda.h>
#include <cuda/ptx>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <array>
#include <string>
#include <type_traits>

#include "api/describe.h"
#include "api/error.h"
#include "api/log.h"
#include "common/groups.h"
#include "common/workspace.h"
#include "kernels/device.h"
#include "kernels/paths.h"
#include "kernels/sm90/epilogue.cuh"
#include "kernels/sm90/expert_maps.h"
#include "kernels/sm90/group_table.cuh"
#include "kernels/sm90/sm90_primitives.cuh"
#include "kernels/sm90/tensor_map.h"
#include "kernels/sm90/tile_order.h"
#include "kernels/sm90/token_maps.h"
#include "kernels/sm90/wgmma.h"
#include "kernels/unused_rows.cuh"
#include "plan/plan.h"

namespace gg::sm90 {
namespace {

constexpr int kBlockK = 64;
constexpr int kThreads = 384;
constexpr int kConsumerThreads = 256;
constexpr int kBoxBytes = 64 * 128;  // one 64 x 64 16-bit TMA box

// The layout of one tile shape. A 128-row tile gives each consumer 64 rows of
// all BN columns; a 64-row tile gives each the 64 rows and half the columns.
template <Sm90Tile kShape>
struct Config {
  static constexpr Sm90TileConfig kTile = sm90_tile_config(kShape);
  static_assert(kTile.block_k == kBlockK, "the plan's tile is the kernel's tile");
  static constexpr int kBlockM = kTile.block_m;
  static constexpr int kBlockN = kTile.block_n;
  static constexpr bool kSplitN = kBlockM == 64;
  static constexpr int kConsumerN = kSplitN ? kBlockN / 2 : kBlockN;  // columns per consumer
  static constexpr int kStages = kTile.stages;
  static constexpr int kAStageBytes = kBlockM * kBlockK * 2;
  static constexpr int kBStageBytes = kBlockN * kBlockK * 2;
  static constexpr int kStageBytes = kAStageBytes + kBStageBytes;
  static constexpr size_t kStagingOffset = size_t(kStages) * kStageBytes;
  static constexpr size_t kStagingBytes = sm90_staging_bytes(kTile) / 2;  // per consumer
  static constexpr size_t kBarrierOffset = kStagingOffset + 2 * kStagingBytes;
  static constexpr size_t kTableOffset = kBarrierOffset + 2 * kStages * sizeof(uint64_t);
  static_assert(kStagingOffset % 1024 == 0 && kStagingBytes % 1024 == 0,
                "TMA 128-byte swizzled boxes start 1024-byte aligned");
  static_assert(kStagingBytes == 64 * kConsumerN * 2, "a consumer's 64 rows in 16-bit values");
  static size_t smem_bytes(int groups) { return sm90_smem_bytes(kTile, groups); }
  static_assert(kTableOffset + 1024 == sm90_smem_bytes(kTile, 0) - 4, "plan.h's layout");
};

struct Params {
  CUtensorMap a_map;  // 3-D: {inner, outer, group}
  CUtensorMap b_map;
  const CUtensorMap* b_maps;  // per-expert rhs (ragged-M): group g's map (expert_maps.h); else null
  // Ragged-K with both operands MN-major: [G] lhs maps, then [G] rhs maps,
  // each over its group's tokens (token_maps.h); else null.
  const CUtensorMap* token_maps;
  OutputParams out;
  const void* sizes;
  const void* offsets;
  gg_index_type index_type;
  int64_t rows_capacity;  // M of the ragged operands
  int out_rows;           // ragged-K: P (ragged-M rows come from the group table)
  int k_dim;              // ragged-M: K (ragged-K contracts over group sizes)
  int groups;
  int64_t zero_rows_end;  // GG_GEMM_ZERO_UNUSED_ROWS: M (unused_rows.cuh); else 0
  uint32_t* flags;
};

// Where one output tile's operands come from and where it goes.
struct Tile {
  int group;
  int a_mn;     // first A row (ragged-M: token; ragged-K: p)
  int b_mn;     // first B column (n or q)
  int b_group;  // B's third TMA coordinate (ragged-M: g; ragged-K: 0)
  int k0;       // first contraction index (ragged-K: the group's first token, rounded
                // down to 8 so TMA boxes start 16-byte aligned)
  int k_steps;
  int k_first;  // contraction elements of the first step before the group (ragged-K)
  int k_last;   // contraction elements in the last step that belong to the group
  int rows;     // valid output rows from a_mn
  bool own_maps;  // ragged-K: loads through the group's token maps (token_maps.h)
};

// Tiles are numbered in units of kCluster m-tiles x one n-tile: a cluster
// of two CTAs (ragged-K only) takes a unit, each CTA the m-tile of its rank,
// both reading the unit's B tile. An output of an odd number of m-tiles
// leaves the last unit's second CTA with no rows: it runs the unit's k-steps
// (its peer needs its half of B) and stores nothing.
// kTokenMaps (ragged-K): a group that ends inside a k-step or starts off a
// 16-byte boundary loads through its own maps (token_maps.h), whose token 0
// is its first.
template <gg_op kOp, int kBlockM, int kBlockN, int kCluster, bool kTokenMaps>
struct TileMap {
  static_assert(kCluster == 1 || kOp == GG_OP_RAGGED_K, "ragged-M tiles are not paired");
  const Params& p;
  GroupTable table;
  int n_tiles;
  int rank;  // this CTA's m-tile of each unit

  // Ragged-K: units of one group's output.
  __device__ int units_per_group() const {
    constexpr int kUnitRows = kBlockM * kCluster;
    return (p.out_rows + kUnitRows - 1) / kUnitRows * n_tiles;
  }

  __device__ int count() const {
    if constexpr (kOp == GG_OP_RAGGED_M) return table.tile_prefix[p.groups] * n_tiles;
    return p.groups * units_per_group();
  }

  __device__ Tile at(int unit) const {
    Tile t;
    if constexpr (kOp == GG_OP_RAGGED_M) {
      // Group g owns tiles [tile_prefix[g], tile_prefix[g + 1]) * n_tiles.
      const int g = find_group(table.tile_prefix, p.groups, unit / n_tiles);
      const int first_m_tile = table.tile_prefix[g];
      const TileInGroup in_group = tile_in_group(unit - first_m_tile * n_tiles,
                                                 table.tile_prefix[g + 1] - first_m_tile, n_tiles);
      t.group = g;
      t.a_mn = table.start[g] + in_group.m_tile * kBlockM;
      t.rows = min(kBlockM, table.start[g] + table.rows[g] - t.a_mn);
      t.b_mn = in_group.n_tile * kBlockN;
      t.b_group = p.b_maps != nullptr ? 0 : g;  // per-expert maps hold one matrix
      t.k0 = 0;
      t.k_steps = (p.k_dim + kBlockK - 1) / kBlockK;
      t.k_first = 0;
      t.k_last = kBlockK;
      t.own_maps = false;
    } else {
      const int g = unit / units_per_group();
      const int r = unit - g * units_per_group();
      t.group = g;
      t.a_mn = ((r / n_tiles) * kCluster + rank) * kBlockM;
      t.rows = min(kBlockM, p.out_rows - t.a_mn);
      t.b_mn = (r % n_tiles) * kBlockN;
      t.b_group = 0;
      // A group whose tokens start 16-byte aligned and fill whole k-steps
      // loads through the operand's map, reading nothing outside it, and
      // needs no fence for maps of its own (uniform lists of 64-token
      // multiples ran up to 4% slower through token maps). Any other group
      // loads through its token maps where there are some. Without them
      // (K-major operands: a TMA box must start 16-byte aligned in global
      // memory), its k-steps start at the aligned token before the group,
      // and the tokens before its start and past its end are zeroed.
      t.own_maps = kTokenMaps && ((table.start[g] & 7) != 0 || table.rows[g] % kBlockK != 0);
      const int start = t.own_maps ? 0 : table.start[g];
      const int end = start + table.rows[g];
      t.k0 = start & ~7;
      t.k_first = start - t.k0;
      t.k_steps = table.rows[g] == 0 ? 0 : (end - t.k0 + kBlockK - 1) / kBlockK;
      t.k_last = end - t.k0 - (t.k_steps - 1) * kBlockK;
    }
    return t;
  }
};

// One box into `smem`, or with kMulticast into `smem`'s offset in both CTAs
// of the cluster, each of whose `full` barriers receives its bytes.
template <bool kMulticast>
__device__ __forceinline__ void load_box(const CUtensorMap* map, uint8_t* smem,
                                         const int32_t (&coords)[3], uint64_t* full) {
  if constexpr (kMulticast) {
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, map,
                                    coords, full, uint16_t{0b11});
  } else {
    cuda::ptx::cp_async_bulk_tensor(cuda::ptx::space_cluster, cuda::ptx::space_global, smem, map,
                                    coords, full);
  }
}

// One operand tile of kRows x 64 into `smem`: a single K-major box, or
// kRows / 64 MN-major boxes of 64 x 64.
template <bool kKMajor, int kRows, bool kMulticast = false>
__device__ __forceinline__ void load_operand(const CUtensorMap* map, uint8_t* smem, int mn, int k,
                                             int group, uint64_t* full) {
  if constexpr (kKMajor) {
    load_box<kMulticast>(map, smem, {k, mn, group}, full);
  } else {
#pragma unroll
    for (int box = 0; box < kRows / 64; ++box) {
      load_box<kMulticast>(map, smem + box * kBoxBytes, {mn + 64 * box, k, group}, full);
    }
  }
}

// Zeroes the contraction elements in [k_lo, k_hi) but outside [k_begin,
// k_end) of an operand tile, run by the 256 consumer threads. [k_lo, k_hi)
// are the 16-deep slices the wgmma will read; slices outside it are skipped
// and need no zeros. K-major rows hold 8 16-byte chunks, chunk c of row r
// stored at c ^ (r % 8) (the 128-byte swizzle); MN-major boxes hold one
// 128-byte row per k.
template <bool kKMajor, int kRows>
__device__ __forceinline__ void zero_outside(uint8_t* tile, int k_lo, int k_hi, int k_begin,
                                             int k_end, int thread) {
  if constexpr (kKMajor) {
    for (int i = thread; i < kRows * 8; i += kConsumerThreads) {
      const int row = i / 8;
      const int chunk = i % 8;
      if (chunk * 8 >= k_hi || chunk * 8 + 8 <= k_lo) continue;
      if (chunk * 8 >= k_begin && chunk * 8 + 8 <= k_end) continue;
      uint16_t* elements = reinterpret_cast<uint16_t*>(tile + row * 128 + ((chunk ^ (row & 7)) * 16));
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        const int k = chunk * 8 + e;
        if (k < k_begin || k >= k_end) elements[e] = 0;
      }
    }
  } else {
    const int rows = k_hi - k_lo;
    for (int i = thread; i < (kRows / 64) * rows * 8; i += kConsumerThreads) {
      const int box = i / (rows * 8);
      const int k = k_lo + (i / 8) % rows;
      const int chunk = i % 8;
      if (k >= k_begin && k < k_end) continue;
      *reinterpret_cast<uint4*>(tile + box * kBoxBytes + k * 128 + chunk * 16) = make_uint4(0, 0, 0, 0);
    }
  }
}

template <bool kKMajor>
__device__ __forceinline__ uint64_t operand_desc(const uint8_t* tile) {
  return kKMajor ? kmajor_sw128_desc(tile) : mnmajor_sw128_desc(tile);
}

// 128-byte chunks a box of the staging buffer (epilogue.cuh's StagingLayout).
template <bool kSparseK>
constexpr int kStagingChunks = kSparseK ? 2 : 1;

// kSparseK (ragged-K with groups of a few tokens): a step issues only the
// 16-deep wgmma slices that hold group tokens. The skipped slices are
// predicated off, which makes ptxas serialize the kernel's wgmmas: worth it
// only when steps are mostly empty, so it is an instance of its own.
// Its tiles are nearly all epilogue, and their blocks leave in boxes two
// 128-byte chunks wide (epilogue.cuh); the other instances' in one.
// kCluster 2 (ragged-K): clusters of two CTAs take units of two m-tiles
// (TileMap), each CTA loading half of the shared B tile into both (TMA
// multicast), so B crosses from L2 once per unit; a stage is free again when
// the consumers of both CTAs are done with it.
template <gg_op kOp, bool kSparseK, Sm90Tile kShape, int kCluster, typename T, bool kAKMajor,
          bool kBKMajor>
__global__ void __launch_bounds__(kThreads, 1) grouped_gemm_kernel(const __grid_constant__ Params p) {
  using Cfg = Config<kShape>;
  constexpr int kBlockM = Cfg::kBlockM;
  constexpr int kBlockN = Cfg::kBlockN;
  static_assert(kCluster == 1 || (kCluster == 2 && !Cfg::kSplitN), "pairs of 128-row tiles");
  // The tile of a ragged-M group of at most 64 rows runs as a 64-row tile:
  // half the wgmma work for the same output. Only such groups: run so, the
  // last tile of a longer group also finishes early, and its CTA runs ahead
  // of the others that read the group's weights through L2 in step with it
  // (16384-token skewed lists lost 0.93-0.98x on an H200).
  constexpr bool kSplitShortGroups = kOp == GG_OP_RAGGED_M && kBlockM == 128 && kBlockN == 256;
  // Ragged-K operands with tokens as rows: the host writes every group's
  // token maps (p.token_maps), and a group that needs them loads through
  // them (TileMap), so no k-step reads another group's tokens.
  constexpr bool kTokenMaps = kOp == GG_OP_RAGGED_K && !kAKMajor && !kBKMajor;
  extern __shared__ uint8_t smem_raw[];
  // 1024-byte aligned by an offset from the array, not through an integer
  // cast, so the compiler still knows these are shared-memory addresses (and
  // uses shared-memory loads and stores rather than generic ones).
  const uint32_t raw_address = static_cast<uint32_t>(__cvta_generic_to_shared(smem_raw));
  uint8_t* smem = smem_raw + ((1024 - raw_address % 1024) % 1024);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + Cfg::kBarrierOffset);
  uint64_t* empty = full + Cfg::kStages;
  const GroupTable table = group_table_at(smem + Cfg::kTableOffset, p.groups);
  const int rank = kCluster > 1 ? static_cast<int>(cuda::ptx::get_sreg_cluster_ctarank()) : 0;

  if (threadIdx.x == 0) {
    for (int s = 0; s < Cfg::kStages; ++s) {
      cuda::ptx::mbarrier_init(&full[s], 1);
      // One arrival per consumer warp of every CTA that reads the stage's B.
      cuda::ptx::mbarrier_init(&empty[s], kCluster * kConsumerThreads / 32);
    }
    cuda::ptx::fence_mbarrier_init(cuda::ptx::sem_release, cuda::ptx::scope_cluster);
  }
  const uint32_t flags = build_group_table<kThreads>(table, p.sizes, p.offsets, p.index_type,
                                                     p.groups, p.rows_capacity, kBlockM);
  if (blockIdx.x == 0 && threadIdx.x == 0 && flags != 0) atomicOr(p.flags, flags);
  if constexpr (kCluster > 1) {  // the peer's barriers are initialized before any TMA signals them
    cuda::ptx::barrier_cluster_arrive();
    cuda::ptx::barrier_cluster_wait();
  } else {
    __syncthreads();
  }

  const TileMap<kOp, kBlockM, kBlockN, kCluster, kTokenMaps> tiles{
      p, table, (p.out.cols + kBlockN - 1) / kBlockN, rank};
  const int tile_count = tiles.count();
  const int first_unit = static_cast<int>(blockIdx.x) / kCluster;
  const int unit_stride = static_cast<int>(gridDim.x) / kCluster;

  if (threadIdx.x < 128) {
    release_registers<40>();
    if (threadIdx.x == 0) {
      int stage = 0;
      uint32_t phase = 0;
      int mapped_group = -1;  // the group whose own maps this thread has acquired
      // Token maps: acquired, and their descriptors prefetched into the TMA
      // unit, one tile ahead, while the tile before issues its loads (a CTA
      // may meet a new group at every tile).
      const auto take_token_maps = [&](int group) {
        if (group == mapped_group) return;
        const CUtensorMap* maps = p.token_maps + group;
        acquire_written_map(maps);
        acquire_written_map(maps + p.groups);
        prefetch_map(maps);
        prefetch_map(maps + p.groups);
        mapped_group = group;
      };
      for (int unit = first_unit; unit < tile_count; unit += unit_stride) {
        const Tile t = tiles.at(unit);
        const CUtensorMap* a_map = &p.a_map;
        const CUtensorMap* b_map = &p.b_map;
        if (t.own_maps) {
          a_map = p.token_maps + t.group;
          b_map = a_map + p.groups;
          take_token_maps(t.group);
        } else if (p.b_maps != nullptr) {
          b_map = p.b_maps + t.group;
          if (t.group != mapped_group) acquire_written_map(b_map);
          mapped_group = t.group;
        }
        for (int ks = 0; ks < t.k_steps; ++ks) {
          wait_barrier(&empty[stage], phase ^ 1);
          uint8_t* a_stage = smem + size_t(stage) * Cfg::kStageBytes;
          cuda::ptx::mbarrier_arrive_expect_tx(cuda::ptx::sem_release, cuda::ptx::scope_cta,
                                               cuda::ptx::space_shared, &full[stage],
                                               Cfg::kStageBytes);
          const int k = t.k0 + ks * kBlockK;
          load_operand<kAKMajor, kBlockM>(a_map, a_stage, t.a_mn, k, 0, &full[stage]);
          uint8_t* b_stage = a_stage + Cfg::kAStageBytes;
          if constexpr (kCluster == 1) {
            load_operand<kBKMajor, kBlockN>(b_map, b_stage, t.b_mn, k, t.b_group, &full[stage]);
          } else {  // this CTA's half of B, into both CTAs
            constexpr int kHalf = kBlockN / 2;
            load_operand<kBKMajor, kHalf, true>(b_map, b_stage + rank * (Cfg::kBStageBytes / 2),
                                                t.b_mn + rank * kHalf, k, t.b_group, &full[stage]);
          }
          if constexpr (kTokenMaps) {
            if (ks == 0 && unit + unit_stride < tile_count) {
              const Tile next = tiles.at(unit + unit_stride);
              if (next.own_maps) take_token_maps(next.group);
            }
          }
          if (++stage == Cfg::kStages) {
            stage = 0;
            phase ^= 1;
          }
        }
      }
      // Work after this launch on the stream waits for it alone, so it does
      // not end before the map writer it may not have waited for.
      wait_for_map_writer();
    }
  } else {
    claim_registers<232>();
    const int consumer = static_cast<int>(threadIdx.x) / 128 - 1;  // which 64 rows of the tile
    const int thread = static_cast<int>(threadIdx.x) % 128;
    // A warp is done with a stage: its arrival on the stage's empty barrier
    // in every CTA whose producer loads into it.
    const auto release = [&](int done_stage) {
      if (thread % 32 != 0) return;
      if constexpr (kCluster == 1) {
        cuda::ptx::mbarrier_arrive(&empty[done_stage]);
      } else {
#pragma unroll
        for (int r = 0; r < kCluster; ++r) arrive_cluster(&empty[done_stage], r);
      }
    };
    int stage = 0;
    uint32_t phase = 0;
    int mapped_group = -1;  // the per-expert output map this thread has acquired
    // Epilogues in turn: a consumer stores a tile's block only after the
    // other consumer has stored its block of the tile before, and hands the
    // turn back when done.
    // Otherwise the two finish a tile's wgmmas together and store together,
    // leaving the tensor cores idle; in turn, one stores while the other's
    // wgmmas have the tensor cores to themselves. Only for ragged-K 128 x 256
    // tiles of whole k-steps outside cluster pairs (groups averaging 128-511
    // tokens): there it gained 1.03-1.05x; sparse-K tiles are nearly all
    // epilogue, and longer tiles, which run at the power cap, read
    // 0.97-1.02x (on an H200).
    constexpr bool kEpiloguesInTurn =
        kOp == GG_OP_RAGGED_K && !kSparseK && kCluster == 1 && kShape == Sm90Tile::k128x256;
    if (kEpiloguesInTurn && consumer == 1) hand_turn(0);  // consumer 0 stores first
    // The accumulators of every tile, whichever layout: declared here, not
    // in run_tile, where ptxas gave the 128 x 256 instances a 592-byte stack
    // and spilled; a split tile uses the first half.
    float tile_acc[Cfg::kConsumerN / 2];
    // One tile's mainloop and epilogue. `split` (a std::bool_constant): the
    // consumers share the tile's first 64 rows, each taking half its
    // columns, as in a 64-row tile; else each takes 64 rows of all BN.
    // Inlined at both calls, so no wgmma crosses a function boundary.
    const auto run_tile = [&](const Tile& t, auto split) __attribute__((always_inline)) {
      constexpr bool kSplit = decltype(split)::value;
      constexpr int kConsumerN = kSplit ? kBlockN / 2 : kBlockN;  // columns per consumer
      float (&acc)[kConsumerN / 2] = *reinterpret_cast<float(*)[kConsumerN / 2]>(tile_acc);
      int previous_stage = -1;
      for (int ks = 0; ks < t.k_steps; ++ks) {
        wait_barrier(&full[stage], phase);
        uint8_t* a_stage = smem + size_t(stage) * Cfg::kStageBytes;
        uint8_t* b_stage = a_stage + Cfg::kAStageBytes;
        // The group's elements of this step, [k_begin, k_end), and the
        // 16-deep slices the step reads, [k_lo, k_hi): with kSparseK only
        // those holding group tokens (a group of a few tokens costs one wgmma
        // per step, not four). Their elements outside the group must be zero:
        // past a token map's end TMA fills them; without token maps
        // (K-major operands) the consumers zero them here.
        const int k_begin = ks == 0 ? t.k_first : 0;
        const int k_end = ks == t.k_steps - 1 ? t.k_last : kBlockK;
        const int k_lo = kSparseK ? k_begin / 16 * 16 : 0;
        const int k_hi = kSparseK ? (k_end + 15) / 16 * 16 : kBlockK;
        if (kOp == GG_OP_RAGGED_K && !kTokenMaps && (k_begin > k_lo || k_end < k_hi)) {
          const int zeroing_thread = static_cast<int>(threadIdx.x) - 128;
          zero_outside<kAKMajor, kBlockM>(a_stage, k_lo, k_hi, k_begin, k_end, zeroing_thread);
          zero_outside<kBKMajor, kBlockN>(b_stage, k_lo, k_hi, k_begin, k_end, zeroing_thread);
          cuda::ptx::fence_proxy_async(cuda::ptx::space_shared);
          sync_consumers();
          __syncwarp();  // wgmma's .aligned forms need the warp converged again
        }
        // This consumer's 64 rows of A and columns of B: rows 64 * consumer
        // of all columns, or (split) the first 64 rows and columns
        // kConsumerN * consumer (K-major rows of 128 bytes; MN-major boxes of 64).
        const int a_part = kSplit ? 0 : consumer;
        const int b_part = kSplit ? consumer : 0;
        const uint64_t desc_a =
            operand_desc<kAKMajor>(a_stage + a_part * (kAKMajor ? 64 * 128 : kBoxBytes));
        const uint64_t desc_b = operand_desc<kBKMajor>(
            b_stage + b_part * (kBKMajor ? kConsumerN * 128 : kConsumerN / 64 * kBoxBytes));
        fence_accumulators(acc);
        wgmma_fence();
#pragma unroll
        for (int k16 = 0; k16 < kBlockK / 16; ++k16) {
          wgmma<kConsumerN, T, kAKMajor ? 0 : 1, kBKMajor ? 0 : 1>(
              acc, advance_k16<kAKMajor>(desc_a, k16), advance_k16<kBKMajor>(desc_b, k16),
              ks > 0 || k16 * 16 > k_lo, k16 * 16 >= k_lo && k16 * 16 < k_hi);
        }
        wgmma_commit();
        fence_accumulators(acc);
        // The wgmma group of the step before has now finished reading its stage.
        wgmma_wait<1>();
        if (previous_stage >= 0) release(previous_stage);
        previous_stage = stage;
        if (++stage == Cfg::kStages) {
          stage = 0;
          phase ^= 1;
        }
      }
      wgmma_wait<0>();
      fence_accumulators(acc);
      if (previous_stage >= 0) release(previous_stage);
      if (t.k_steps == 0) {
#pragma unroll
        for (int i = 0; i < kConsumerN / 2; ++i) acc[i] = 0.0f;
      }
      if (p.out.maps != nullptr && thread == 0 && t.group != mapped_group) {
        acquire_written_map(p.out.maps + t.group);  // thread 0 issues the block's TMA stores
        mapped_group = t.group;
      }
      const int first_row = kSplit ? 0 : consumer * 64;
      if (kEpiloguesInTurn) wait_for_turn(consumer);
      store_block<kOp == GG_OP_RAGGED_K, kConsumerN, kStagingChunks<kSparseK>>(
          p.out, t.group, t.a_mn + first_row, min(64, t.rows - first_row),
          t.b_mn + (kSplit ? consumer * kConsumerN : 0), thread, warpgroup_barrier(consumer),
          smem + Cfg::kStagingOffset + consumer * Cfg::kStagingBytes, acc);
      if (kEpiloguesInTurn) hand_turn(1 - consumer);
    };
    for (int unit = first_unit; unit < tile_count; unit += unit_stride) {
      const Tile t = tiles.at(unit);
      __syncwarp();  // reconverge after the previous tile's masked epilogue
      if constexpr (kSplitShortGroups) {
        // The same for the whole CTA; the vote lets the compiler see it is
        // warp-uniform, so the wgmmas stay in convergent code (without it,
        // ptxas put a warp sync into every k-step).
        if (__all_sync(0xffffffffu, table.rows[t.group] <= 64)) {
          run_tile(t, std::true_type{});
        } else {
          run_tile(t, std::false_type{});
        }
      } else {
        run_tile(t, std::bool_constant<Cfg::kSplitN>{});
      }
    }
    if (kEpiloguesInTurn && consumer == 0) wait_for_turn(0);  // consumer 1's last hand-over
    if (p.zero_rows_end > 0) {
      const int last = p.groups - 1;
      zero_rows(p.out.data, p.out.dtype, p.out.ld, p.out.cols,
                table.start[last] + table.rows[last], p.zero_rows_end,
                int64_t{blockIdx.x} * kConsumerThreads + (threadIdx.x - 128),
                int64_t{gridDim.x} * kConsumerThreads);
    }
    drain_stores(thread);
  }
  if constexpr (kCluster > 1) {  // the peer's last arrivals on this CTA's barriers have landed
    cuda::ptx::barrier_cluster_arrive();
    cuda::ptx::barrier_cluster_wait();
  }
}

// ---------------------------------------------------------------- host side

// A 3-D map {inner, outer, groups} over a matrix view with rows of `ld`
// elements and matrices `group_stride` elements apart, boxed as one operand
// tile: K-major {64, rows} or MN-major {64, 64}.
bool operand_map(CUtensorMap* map, gg_dtype type, const void* base, int64_t inner, int64_t outer,
                 int64_t groups, int64_t ld, int64_t group_stride, bool k_major, int tile_rows,
                 std::string* why_not) {
  const uint64_t dims[3] = {uint64_t(inner), uint64_t(outer), uint64_t(groups)};
  const uint64_t strides[2] = {uint64_t(ld) * 2,
                               uint64_t(groups > 1 ? group_stride : ld * outer) * 2};
  const uint32_t box[3] = {64, uint32_t(k_major ? tile_rows : 64), 1};
  const CUtensorMapDataType dtype =
      type == GG_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  return encode_tile_map(map, dtype, 3, base, dims, strides, box, why_not);
}

// The output's TMA-store map for boxes of `chunks` 128-byte chunks x 64 rows
// (epilogue.cuh's StagingLayout): 3-D {cols, rows, groups} for one, 4-D
// {chunk, chunks, rows, groups} over the row's whole chunks for two.
// Per-expert outputs (a pointer array) are given `maps`, the workspace's:
// their map is one expert's matrix, encoded over that aligned address, whose
// copies take each expert's own (expert_maps.h). Without a map (`bulk`
// false, `maps` null) the epilogue copies blocks out itself: for rows TMA
// cannot address exactly (a 3-D map's store clips the row's end only to 16
// bytes: it would write into the padding after a row of, say, 100 bf16
// values), as for the blocks that reach into a 4-D map's last, partial chunk.
void output_map(OutputParams* o, int64_t rows, int64_t groups, int chunks) {
  const int64_t bytes = o->dtype == GG_DTYPE_FP32 ? 4 : 2;
  const int64_t chunk_cols = 128 / bytes;
  const void* base = o->pointer_array ? static_cast<const void*>(o->maps) : o->data;
  const int64_t matrices = o->pointer_array ? 1 : groups;
  const int64_t whole_chunks = o->cols / chunk_cols;
  const bool addressable = base != nullptr && reinterpret_cast<uintptr_t>(base) % 16 == 0 &&
                           (o->ld * bytes) % 16 == 0 &&
                           (chunks == 1 ? (o->cols * bytes) % 16 == 0 : whole_chunks > 0) &&
                           (matrices == 1 || (o->group_stride * bytes) % 16 == 0);
  o->bulk = false;
  o->tma_cols = chunks == 1 ? o->cols : int(whole_chunks * chunk_cols);
  if (addressable) {
    const uint64_t matrix_stride =
        uint64_t((matrices > 1 ? o->group_stride : o->ld * rows) * bytes);
    const uint64_t dims3[3] = {uint64_t(o->cols), uint64_t(rows), uint64_t(matrices)};
    const uint64_t strides3[2] = {uint64_t(o->ld * bytes), matrix_stride};
    const uint32_t box3[3] = {uint32_t(chunk_cols), 64, 1};
    const uint64_t dims4[4] = {uint64_t(chunk_cols), uint64_t(whole_chunks), uint64_t(rows),
                               uint64_t(matrices)};
    const uint64_t strides4[3] = {128, uint64_t(o->ld * bytes), matrix_stride};
    const uint32_t box4[4] = {uint32_t(chunk_cols), 2, 64, 1};
    const CUtensorMapDataType type = o->dtype == GG_DTYPE_FP32   ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                     : o->dtype == GG_DTYPE_BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    std::string why_not;
    o->bulk = chunks == 1
                  ? encode_tile_map(&o->map, type, 3, base, dims3, strides3, box3, &why_not)
                  : encode_tile_map(&o->map, type, 4, base, dims4, strides4, box4, &why_not);
  }
  if (!o->bulk) o->maps = nullptr;
}

// Writes the per-expert copies of `matrix` (expert_maps.h), on the stream
// of the launch that reads them.
gg_status maps_of_experts(const CUtensorMap& matrix, const void* pointers, CUtensorMap* maps,
                          int groups, cudaStream_t stream) {
  const cudaError_t error = write_expert_maps(matrix, pointers, maps, groups, stream);
  if (error == cudaSuccess) return GG_STATUS_SUCCESS;
  return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: per-expert maps: %s",
                   cudaGetErrorString(error));
}

void log_choice(const Sm90Plan& plan, const OutputParams& o) {
  if (!api::log_enabled()) return;
  api::log_line(plan.describe() + (o.bulk ? ", TMA-store epilogue" : ", direct-store epilogue"));
}

// One CTA per SM; with clusters of two, as many clusters as fit at once
// (a cluster's CTAs share a GPC, and GPCs need not have an even number of
// free SMs).
template <gg_op kOp, bool kSparseK, Sm90Tile kShape, int kCluster, typename T, bool kAKMajor,
          bool kBKMajor>
gg_status launch(Params& p, int groups, int sm_count, cudaStream_t stream) {
  const size_t smem = Config<kShape>::smem_bytes(groups);
  auto kernel = grouped_gemm_kernel<kOp, kSparseK, kShape, kCluster, T, kAKMajor, kBKMajor>;
  if (cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)) !=
      cudaSuccess) {
    return GG_STATUS_CUDA_ERROR;
  }
  cudaLaunchAttribute attrs[2]{};
  unsigned count = 0;
  if (p.token_maps != nullptr || p.b_maps != nullptr || p.out.maps != nullptr) {
    // After a map writer, the kernel may start while it runs (wait_for_map_writer).
    attrs[count].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[count++].val.programmaticStreamSerializationAllowed = 1;
  }
  if constexpr (kCluster > 1) {
    attrs[count].id = cudaLaunchAttributeClusterDimension;
    attrs[count].val.clusterDim.x = kCluster;
    attrs[count].val.clusterDim.y = 1;
    attrs[count++].val.clusterDim.z = 1;
  }
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(sm_count / kCluster * kCluster);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attrs;
  config.numAttrs = count;
  if constexpr (kCluster > 1) {
    int clusters = 0;
    if (cudaOccupancyMaxActiveClusters(&clusters, kernel, &config) != cudaSuccess || clusters < 1) {
      return GG_STATUS_CUDA_ERROR;
    }
    config.gridDim = dim3(clusters * kCluster);
  }
  return cudaLaunchKernelEx(&config, kernel, p) == cudaSuccess ? GG_STATUS_SUCCESS
                                                               : GG_STATUS_CUDA_ERROR;
}

// Picks the template instance: element type, operand majors.
template <gg_op kOp, bool kSparseK, Sm90Tile kShape, int kCluster = 1>
gg_status dispatch_type(Params& p, const gg_gemm_desc& d, bool a_kmajor, bool b_kmajor, int sm_count,
                        cudaStream_t stream) {
  const bool bf16 = d.lhs.dtype == GG_DTYPE_BF16;
  const int g = d.num_groups;
#define GG_SM90_CASE(A, B)                                                                        \
  if (a_kmajor == A && b_kmajor == B) {                                                           \
    return bf16 ? launch<kOp, kSparseK, kShape, kCluster, __nv_bfloat16, A, B>(p, g, sm_count,    \
                                                                               stream)            \
                : launch<kOp, kSparseK, kShape, kCluster, __half, A, B>(p, g, sm_count, stream);  \
  }
  if constexpr (kOp == GG_OP_RAGGED_M) {
    GG_SM90_CASE(true, true)
    GG_SM90_CASE(true, false)
  } else {
    GG_SM90_CASE(true, true)
    GG_SM90_CASE(true, false)
    GG_SM90_CASE(false, true)
    GG_SM90_CASE(false, false)
  }
#undef GG_SM90_CASE
  return GG_STATUS_INTERNAL_ERROR;
}

}  // namespace
}  // namespace gg::sm90

namespace gg {

bool sm90_gemm_supports(const gg_gemm_desc& d, std::string* why_not) {
  const bool sixteen_bit = d.lhs.dtype == GG_DTYPE_BF16 || d.lhs.dtype == GG_DTYPE_FP16;
  if (!sixteen_bit || d.rhs.dtype != d.lhs.dtype) {
    *why_not = "sm90 path: lhs " + api::format_name(d.lhs) + " x rhs " + api::format_name(d.rhs) +
               " is not supported (bf16 or fp16 inputs of one type only; GG_PATH_REFERENCE "
               "computes every format)";
    return false;
  }
  if (d.num_groups > kSm90MaxGroups) {
    *why_not = "sm90 path: at most 2048 groups";
    return false;
  }
  // The problem's own dimensions, as sm90_gemm_run reads them: the kernel
  // counts them in int, and a TMA map cannot span an empty one (an empty
  // problem is the portable path's).
  const bool lhs_t = d.lhs_layout == GG_LAYOUT_T;
  const bool rhs_t = d.rhs_layout == GG_LAYOUT_T;
  struct Dim {
    const char* name;
    int64_t value;
  };
  // Ragged-M: lhs [M, K], rhs [G, N, K] (T) or [G, K, N]. Ragged-K: lhs
  // [M, P] or [P, M] (T), rhs [M, Q] or [Q, M] (T).
  const std::array<Dim, 3> dims =
      d.op == GG_OP_RAGGED_M
          ? std::array<Dim, 3>{{{"M", d.lhs.shape[0]},
                                {"K", d.lhs.shape[1]},
                                {"N", d.rhs.shape[rhs_t ? 1 : 2]}}}
          : std::array<Dim, 3>{{{"M", d.lhs.shape[lhs_t ? 1 : 0]},
                                {"P", d.lhs.shape[lhs_t ? 0 : 1]},
                                {"Q", d.rhs.shape[rhs_t ? 0 : 1]}}};
  for (const auto& dim : dims) {
    if (dim.value == 0 || dim.value >= int64_t{1} << 31) {
      *why_not = api::text_printf("sm90 path: %s = %lld; it takes dimensions in [1, 2^31)",
                                  dim.name, static_cast<long long>(dim.value));
      return false;
    }
  }
  return true;
}

namespace {

// Whether the op's per-group operand (ragged-M rhs, ragged-K out) is a
// device array of G pointers.
bool per_expert(const gg_gemm_desc& d) {
  const gg_tensor& t = d.op == GG_OP_RAGGED_M ? d.rhs : d.out;
  return (t.flags & GG_TENSOR_POINTER_ARRAY) != 0;
}

// Whether a ragged-K product loads its operands through per-group token
// maps: both hold tokens as rows (layout N, MN-major).
bool token_maps(const gg_gemm_desc& d) {
  return d.op == GG_OP_RAGGED_K && d.lhs_layout != GG_LAYOUT_T && d.rhs_layout != GG_LAYOUT_T;
}

}  // namespace

// The scratch holds the per-expert maps (expert_maps.h), then the token
// maps (token_maps.h), each where the problem takes them.
size_t sm90_gemm_scratch_bytes(const gg_gemm_desc& d) {
  return (per_expert(d) ? sm90::expert_maps_bytes(d.num_groups) : 0) +
         (token_maps(d) ? sm90::token_maps_bytes(d.num_groups) : 0);
}

gg_status sm90_gemm_run(const gg_gemm_desc& d, void* workspace, size_t, cudaStream_t stream) {
  using namespace sm90;
  DeviceInfo info;
  std::string why;
  if (!query_device(-1, &info, &why)) return GG_STATUS_NO_DEVICE;
  // The tensor maps are encoded by the driver API, which needs the device's
  // context current on this thread; a thread that has made no runtime call
  // yet (torch's autograd thread, for one) has none until cudaSetDevice
  // binds the primary context.
  if (const cudaError_t error = cudaSetDevice(info.ordinal); error != cudaSuccess) {
    return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: cudaSetDevice(%d): %s", info.ordinal,
                     cudaGetErrorString(error));
  }

  Params p{};
  p.out.data = d.out.data;
  p.out.dtype = d.out.dtype;
  p.out.pointer_array = (d.out.flags & GG_TENSOR_POINTER_ARRAY) != 0;
  p.out.alpha = d.alpha.value;
  p.out.beta = d.beta.value;
  p.out.alpha_per_group = d.alpha.per_group;
  p.out.beta_per_group = d.beta.per_group;
  p.sizes = d.group_sizes.sizes;
  p.offsets = d.group_sizes.offsets;
  p.index_type = d.group_sizes.type;
  p.rows_capacity = d.lhs_layout == GG_LAYOUT_T && d.op == GG_OP_RAGGED_K ? d.lhs.shape[1]
                                                                           : d.lhs.shape[0];
  p.groups = d.num_groups;
  p.flags = workspace_flags(workspace);
  char* scratch = static_cast<char*>(workspace) + kWorkspaceScratchOffset;
  CUtensorMap* expert_maps = per_expert(d) ? reinterpret_cast<CUtensorMap*>(scratch) : nullptr;

  const Sm90Plan plan =
      plan_sm90_gemm(gemm_shape(d, info.sm_count, info.compute_capability));
  const int block_m = plan.config.block_m;
  const int block_n = plan.config.block_n;
  const int64_t m = p.rows_capacity;
  const int sm_count = info.sm_count;
  bool a_kmajor;
  bool b_kmajor;
  bool ok;
  if (d.op == GG_OP_RAGGED_M) {
    // lhs [M, K]; rhs [G, N, K] (T, K-major) or [G, K, N] (N, MN-major).
    const int64_t k = d.lhs.shape[1];
    b_kmajor = d.rhs_layout == GG_LAYOUT_T;
    const int64_t n = b_kmajor ? d.rhs.shape[1] : d.rhs.shape[2];
    p.out_rows = 0;
    p.k_dim = int(k);
    p.out.cols = int(n);
    p.out.ld = d.out.strides[0];
    p.zero_rows_end = (d.flags & GG_GEMM_ZERO_UNUSED_ROWS) ? d.out.shape[0] : 0;
    p.out.bias = d.bias.data;
    p.out.bias_ld = d.bias.data ? d.bias.strides[0] : 0;
    p.out.bias_dtype = d.bias.dtype;
    output_map(&p.out, d.out.shape[0], 1, kStagingChunks<false>);
    log_choice(plan, p.out);
    a_kmajor = true;
    // Per-expert weights: one expert's matrix, over the maps' own address
    // until each copy takes its expert's (expert_maps.h).
    ok = operand_map(&p.a_map, d.lhs.dtype, d.lhs.data, k, m, 1, d.lhs.strides[0], 0, true,
                     block_m, &why) &&
         operand_map(&p.b_map, d.rhs.dtype, expert_maps ? expert_maps : d.rhs.data,
                     b_kmajor ? k : n, b_kmajor ? n : k, expert_maps ? 1 : d.num_groups,
                     d.rhs.strides[1], d.rhs.strides[0], b_kmajor, block_n, &why);
    if (!ok) return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: %s", why.c_str());
    if (expert_maps != nullptr) {
      const gg_status status =
          maps_of_experts(p.b_map, d.rhs.data, expert_maps, d.num_groups, stream);
      if (status != GG_STATUS_SUCCESS) return status;
      p.b_maps = expert_maps;
    }
    switch (plan.tile) {
      case Sm90Tile::k64x256:
        return dispatch_type<GG_OP_RAGGED_M, false, Sm90Tile::k64x256>(p, d, a_kmajor, b_kmajor,
                                                                       sm_count, stream);
      case Sm90Tile::k128x256:
        return dispatch_type<GG_OP_RAGGED_M, false, Sm90Tile::k128x256>(p, d, a_kmajor, b_kmajor,
                                                                        sm_count, stream);
      case Sm90Tile::k128x128:
        return dispatch_type<GG_OP_RAGGED_M, false, Sm90Tile::k128x128>(p, d, a_kmajor, b_kmajor,
                                                                        sm_count, stream);
    }
    return GG_STATUS_INTERNAL_ERROR;
  }
  // Ragged-K: lhs [M, P] (N, MN-major) or [P, M] (T, K-major); rhs [M, Q] or [Q, M].
  a_kmajor = d.lhs_layout == GG_LAYOUT_T;
  b_kmajor = d.rhs_layout == GG_LAYOUT_T;
  const int64_t pdim = a_kmajor ? d.lhs.shape[0] : d.lhs.shape[1];
  const int64_t qdim = b_kmajor ? d.rhs.shape[0] : d.rhs.shape[1];
  p.out_rows = int(pdim);
  p.k_dim = 0;
  // In a cluster pair each CTA loads half of the B tile.
  const int b_box_rows = plan.multicast ? block_n / 2 : block_n;
  p.out.cols = int(qdim);
  p.out.ld = d.out.strides[1];
  p.out.group_stride = p.out.pointer_array ? 0 : d.out.strides[0];
  p.out.maps = expert_maps;
  output_map(&p.out, pdim, d.num_groups,
             plan.sparse_k ? kStagingChunks<true> : kStagingChunks<false>);
  // G weight-sized outputs stream through L2 while the CTAs of a wave keep
  // re-reading the group's token rows from it; the outputs are not read
  // again by this launch, so their lines go first (on an H100:
  // decode wgrad 1.01-1.16x faster, 0.84-0.98 of the roofline; compute-bound
  // prefill within the noise).
  p.out.evict_first = true;
  log_choice(plan, p.out);
  ok = operand_map(&p.a_map, d.lhs.dtype, d.lhs.data, a_kmajor ? m : pdim, a_kmajor ? pdim : m, 1,
                   d.lhs.strides[0], 0, a_kmajor, block_m, &why) &&
       operand_map(&p.b_map, d.rhs.dtype, d.rhs.data, b_kmajor ? m : qdim, b_kmajor ? qdim : m, 1,
                   d.rhs.strides[0], 0, b_kmajor, b_box_rows, &why);
  if (!ok) return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: %s", why.c_str());
  if (p.out.maps != nullptr) {
    const gg_status status =
        maps_of_experts(p.out.map, d.out.data, expert_maps, d.num_groups, stream);
    if (status != GG_STATUS_SUCCESS) return status;
  }
  if (token_maps(d)) {
    CUtensorMap* maps = reinterpret_cast<CUtensorMap*>(
        scratch + (expert_maps != nullptr ? expert_maps_bytes(d.num_groups) : 0));
    const TokenOperand lhs{p.a_map, d.lhs.data, d.lhs.strides[0] * 2};
    const TokenOperand rhs{p.b_map, d.rhs.data, d.rhs.strides[0] * 2};
    const cudaError_t error = write_token_maps(lhs, rhs, p.sizes, p.offsets, p.index_type,
                                               p.groups, p.rows_capacity, maps, stream);
    if (error != cudaSuccess) {
      return api::fail(GG_STATUS_CUDA_ERROR, "sm90 path: per-group token maps: %s",
                       cudaGetErrorString(error));
    }
    p.token_maps = maps;
  }
  // Ragged-K outputs are not ragged: the plan gives them 128-row tiles.
  constexpr Sm90Tile kWide = Sm90Tile::k128x256;
  constexpr Sm90Tile kNarrow = Sm90Tile::k128x128;
  const bool wide = plan.tile == kWide;
  if (plan.sparse_k) {
    return wide ? dispatch_type<GG_OP_RAGGED_K, true, kWide>(p, d, a_kmajor, b_kmajor, sm_count, stream)
                : dispatch_type<GG_OP_RAGGED_K, true, kNarrow>(p, d, a_kmajor, b_kmajor, sm_count,
                                                                stream);
  }
  if (plan.multicast) {
    return dispatch_type<GG_OP_RAGGED_K, false, kWide, 2>(p, d, a_kmajor, b_kmajor, sm_count,
                                                          stream);
  }
  return wide ? dispatch_type<GG_OP_RAGGED_K, false, kWide>(p, d, a_kmajor, b_kmajor, sm_count, stream)
              : dispatch_type<GG_OP_RAGGED_K, false, kNarrow>(p, d, a_kmajor, b_kmajor, sm_count,
                                                               stream);
}

}  // namespace gg
