// See format_spec.h.
#include "gpu/format_spec.h"

#include "api/names.h"

namespace gg::test {
namespace {

const char* scaling_label(gg_block_scaling b) {
  switch (b) {
    case GG_BLOCK_NONE:
      return "";
    case GG_BLOCK_MX32:
      return "_mx32";
    case GG_BLOCK_NV16:
      return "_nv16";
    case GG_BLOCK_1X128:
      return "_1x128";
    case GG_BLOCK_128X128:
      return "_128x128";
    case GG_BLOCK_ROWWISE:
      return "_rowwise";
  }
  return "_?";
}

}  // namespace

std::string format_label(const QuantizeFormatSpec& f) {
  std::string s = api::dtype_name(f.dtype);
  s += scaling_label(f.block);
  if (f.extent == GG_SCALE_TENSOR) s += "_tensor";
  if (f.extent == GG_SCALE_GROUP) s += "_group";
  return s;
}

int64_t scale_entry_bytes(gg_block_scaling b) {
  return b == GG_BLOCK_1X128 || b == GG_BLOCK_128X128 || b == GG_BLOCK_ROWWISE ? 4 : 1;
}

}  // namespace gg::test
