// Host buffers sized by a problem, checked before they are allocated.
//
// The sizes the CLI accepts can ask for far more memory than a machine has
// (verify with G = 100000 experts of 512 x 256 weights holds 98 GiB of
// fp64 values). Such a buffer is refused before it is allocated, against
// the memory the kernel reports available now (MemAvailable in
// /proc/meminfo): allocating it anyway ends in std::bad_alloc at best, and
// at worst in the out-of-memory killer once its pages are touched. The
// error says which buffer, and how large. Sizes are doubles, since products
// of accepted dimensions reach 2^68 elements, past int64, and a double
// holds such a product closely enough to refuse it.
#pragma once

#include <new>
#include <string>

#include "cli/checks.h"

namespace gg::cli {

// "97.7 GiB (104857600000 bytes)".
std::string byte_count_text(double bytes);

// Throws Failure for `what` of `bytes`, saying `why`.
[[noreturn]] void throw_host_memory_error(double bytes, const std::string& what,
                                          const std::string& why);
// Bytes of host memory available now; infinity when the system does not say.
double available_host_bytes();

// Runs `allocate` (which makes host buffers of `bytes` in all, for `what`)
// when that much memory is available; throws Failure naming `what`
// when it is not, or when the allocator refuses it all the same.
template <typename Allocate>
void allocate_host(double bytes, const std::string& what, Allocate allocate) {
  const double available = available_host_bytes();
  if (bytes > available) {
    throw_host_memory_error(bytes, what, byte_count_text(available) + " available");
  }
  try {
    allocate();
  } catch (const std::bad_alloc&) {
    throw_host_memory_error(bytes, what, "the allocator refused it");
  }
}

}  // namespace gg::cli
