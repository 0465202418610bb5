// Hopper building blocks the sm_90a kernels share: shared-memory matrix
// descriptors for wgmma, the warpgroup fences, register reallocation, and
// mbarrier waits. TMA and mbarrier operations come from libcu++ cuda::ptx;
// what it lacks (wgmma fences, setmaxnreg, a TMA store with an L2 cache
// hint) is inline PTX here.
#pragma once

#include <cuda.h>
#include <cuda/ptx>
#include <stdint.h>

namespace gg::sm90 {

// Descriptor of a K-major operand tile in shared memory written by TMA with
// the 128-byte swizzle: rows of 64 16-bit elements (128 B), 8-row atoms of
// 1024 B (the stride between atoms, SBO). The leading-byte offset is unused
// for swizzled K-major layouts. The tile must start 1024-byte aligned (the
// swizzle pattern uses absolute address bits).
__device__ __forceinline__ uint64_t kmajor_sw128_desc(const void* smem) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint64_t desc = (addr & 0x3FFFFu) >> 4;
  desc |= uint64_t{1} << 16;           // LBO (ignored), encoded >> 4
  desc |= uint64_t{1024 >> 4} << 32;   // SBO: 8 rows x 128 B
  desc |= uint64_t{1} << 62;           // 128-byte swizzle
  return desc;
}

// Descriptor of an MN-major operand tile (the M or N dim contiguous in
// memory) written by TMA as boxes of 64 MN elements x 64 k-rows, each row 128 B,
// 128-byte swizzled: 8 k-rows form a 1024 B atom (SBO, the step between groups
// of 8 along K); the next 64 MN elements start one box, 8 KB, later (LBO).
__device__ __forceinline__ uint64_t mnmajor_sw128_desc(const void* smem) {
  const uint32_t addr = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  uint64_t desc = (addr & 0x3FFFFu) >> 4;
  desc |= uint64_t{8192 >> 4} << 16;   // LBO: next 64 MN elements
  desc |= uint64_t{1024 >> 4} << 32;   // SBO: next 8 k-rows
  desc |= uint64_t{1} << 62;           // 128-byte swizzle
  return desc;
}

// Moves a descriptor 16 elements along K: inside the 128-byte row of a
// K-major tile (32 B), or 16 rows of 128 B down an MN-major tile (2 KB).
// Descriptor addresses are encoded >> 4.
template <bool kKMajor>
__device__ __forceinline__ uint64_t advance_k16(uint64_t desc, int k16) {
  return desc + static_cast<uint64_t>(k16 * (kKMajor ? 32 : 2048) >> 4);
}

__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
template <int Pending>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
// Keeps the compiler from moving accumulator reads or writes across a
// wgmma boundary.
template <int N>
__device__ __forceinline__ void fence_accumulators(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

template <int Registers>
__device__ __forceinline__ void release_registers() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(Registers));
}
template <int Registers>
__device__ __forceinline__ void claim_registers() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(Registers));
}

// The named barriers of a CTA of one producer and two consumer warpgroups
// (barrier 0 is __syncthreads): one among the 256 consumer threads, one a
// consumer among its own 128, and one a consumer's turn.
constexpr int kConsumersBarrier = 1;
__host__ __device__ constexpr int warpgroup_barrier(int consumer) { return 2 + consumer; }
__host__ __device__ constexpr int turn_barrier(int consumer) { return 4 + consumer; }

__device__ __forceinline__ void sync_consumers() {
  asm volatile("bar.sync %0, 256;\n" ::"n"(kConsumersBarrier) : "memory");
}

// Named barrier `id` (warpgroup_barrier) among one warpgroup's 128 threads.
__device__ __forceinline__ void sync_warpgroup(int id) {
  asm volatile("bar.sync %0, 128;\n" ::"r"(id) : "memory");
}

// A turn passed between the two consumer warpgroups over the 256 consumer
// threads: `consumer` waits for its turn (wait_for_turn) until the other
// hands it over (hand_turn, which does not wait).
__device__ __forceinline__ void wait_for_turn(int consumer) {
  asm volatile("bar.sync %0, 256;\n" ::"r"(turn_barrier(consumer)) : "memory");
}
__device__ __forceinline__ void hand_turn(int consumer) {
  asm volatile("bar.arrive %0, 256;\n" ::"r"(turn_barrier(consumer)) : "memory");
}

__device__ __forceinline__ void wait_barrier(uint64_t* barrier, uint32_t parity) {
  while (!cuda::ptx::mbarrier_try_wait_parity(barrier, parity)) {
  }
}

// Arrives on the mbarrier at `barrier`'s shared-memory offset in CTA `rank`
// of the cluster (this CTA's own included). cuda::ptx has remote arrives
// only with cluster-scope release, a fence this thread need not pay: what
// it orders, its wgmma reads of the stage, have retired (wgmma.wait_group)
// before it arrives. Nor has it `mapa`, which turns the offset into the
// other CTA's address.
__device__ __forceinline__ void arrive_cluster(uint64_t* barrier, uint32_t rank) {
  const uint32_t local = static_cast<uint32_t>(__cvta_generic_to_shared(barrier));
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];\n" ::"r"(remote) : "memory");
}

// The GEMM is launched as the programmatic dependent of the map writer just
// before it (expert_maps.h, token_maps.h), which lets it start at once: its
// CTAs build their group tables and run the tiles that need no written map
// while the writer runs. A thread that is to read a written map first waits
// for the writer's grid to complete and its writes to be visible
// (griddepcontrol.wait; at once when the writer is done, or when the kernel
// was launched without one).
__device__ __forceinline__ void wait_for_map_writer() { cudaGridDependencySynchronize(); }

// Before this thread's first TMA copy through a map that an earlier kernel
// wrote to global memory through the generic proxy (expert_maps.h,
// token_maps.h): the writer is done, and the map's contents, not a stale
// copy, reach the TMA unit.
__device__ __forceinline__ void acquire_written_map(const CUtensorMap* map) {
  wait_for_map_writer();
  cuda::ptx::fence_proxy_tensormap_generic(cuda::ptx::sem_acquire, cuda::ptx::scope_gpu, map,
                                           cuda::ptx::n32_t<128>{});
}

// Brings a map's descriptor into the TMA unit ahead of its first copy.
// Not in cuda::ptx.
__device__ __forceinline__ void prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(map) : "memory");
}

// A TMA store of the 3-D or 4-D box at `coords` from `smem`, its lines
// marked evict-first in L2 (createpolicy.fractional.L2::evict_first over all
// of it): the first lines L2 lets go when it needs room. cuda::ptx has the
// tensor store only without the cache hint.
template <int kRank>
__device__ __forceinline__ void tma_store_evict_first(const CUtensorMap* map,
                                                      const int32_t (&coords)[kRank],
                                                      const void* smem) {
  static_assert(kRank == 3 || kRank == 4, "3-D and 4-D boxes");
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  const uint32_t address = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  if constexpr (kRank == 3) {
    asm volatile(
        "cp.async.bulk.tensor.3d.global.shared::cta.bulk_group.L2::cache_hint"
        " [%0, {%1, %2, %3}], [%4], %5;\n" ::"l"(map),
        "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(address), "l"(policy)
        : "memory");
  } else {
    asm volatile(
        "cp.async.bulk.tensor.4d.global.shared::cta.bulk_group.L2::cache_hint"
        " [%0, {%1, %2, %3, %4}], [%5], %6;\n" ::"l"(map),
        "r"(coords[0]), "r"(coords[1]), "r"(coords[2]), "r"(coords[3]), "r"(address),
        "l"(policy)
        : "memory");
  }
}

}  // namespace gg::sm90
