// Names of the C API's enum values, as messages and log lines print them.
//
// Each function returns nullptr for a value outside its enum, which is also
// how validation tells a known value from garbage: the caller's struct may
// hold any integer in an enum field.
#pragma once

#include "groupgemm/groupgemm.h"

namespace gg::api {

const char* dtype_name(gg_dtype dtype);              // "bf16", "e4m3", ...
const char* scaling_name(gg_block_scaling scaling);  // "none", "mx32", "rowwise", ...
const char* extent_name(gg_scale_extent extent);     // "none", "tensor", "group"
const char* layout_name(gg_layout layout);           // "N", "T"
const char* op_name(gg_op op);                       // "ragged-M", "ragged-K"
const char* index_type_name(gg_index_type type);     // "int32", "int64"
const char* path_name(gg_path path);                 // "auto", "reference", ...

}  // namespace gg::api
