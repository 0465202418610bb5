// See names.h. Each enum is a dense range from 0, so a table indexed by the
// value is the whole mapping.
#include "api/names.h"

#include <stddef.h>

namespace gg::api {
namespace {

template <size_t N>
const char* lookup(const char* const (&names)[N], int value) {
  return value >= 0 && static_cast<size_t>(value) < N ? names[value] : nullptr;
}

}  // namespace

const char* dtype_name(gg_dtype dtype) {
  static const char* const names[] = {"bf16", "fp16", "fp32", "e4m3", "e5m2", "e2m1"};
  return lookup(names, dtype);
}

const char* scaling_name(gg_block_scaling scaling) {
  static const char* const names[] = {"none", "mx32", "nv16", "1x128", "128x128", "rowwise"};
  return lookup(names, scaling);
}

const char* extent_name(gg_scale_extent extent) {
  static const char* const names[] = {"none", "tensor", "group"};
  return lookup(names, extent);
}

const char* layout_name(gg_layout layout) {
  static const char* const names[] = {"N", "T"};
  return lookup(names, layout);
}

const char* op_name(gg_op op) {
  static const char* const names[] = {"ragged-M", "ragged-K"};
  return lookup(names, op);
}

const char* index_type_name(gg_index_type type) {
  static const char* const names[] = {"int32", "int64"};
  return lookup(names, type);
}

const char* path_name(gg_path path) {
  static const char* const names[] = {"auto", "reference", "portable", "sm90"};
  return lookup(names, path);
}

}  // namespace gg::api
