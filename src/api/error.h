// The thread-local message behind gg_last_error(), and printf-style text.
//
// Every entry point that returns a gg_status clears the message on entry, so
// a successful call leaves "" behind; a failing check sets it with fail(),
// which also returns the status, so a check reads as one line:
// `return fail(STATUS, "...", ...)`. Messages name the argument by its path
// from the caller's pointer ("desc->rhs.shape[0]"), so the caller can find
// the field without reading the library.
#pragma once

#include <string>

#include "groupgemm/groupgemm.h"

#define GG_PRINTF_FORMAT(format_index, first_arg) \
  __attribute__((format(printf, format_index, first_arg)))

namespace gg::api {

// The type %lld prints; int64_t is `long` on LP64 Linux.
using ll = long long;

void clear_error();
const char* last_error();

// Sets the message, printf-style, and returns `status`.
gg_status fail(gg_status status, const char* format, ...) GG_PRINTF_FORMAT(2, 3);

// Sets a message without a failure: gg_path_available reports why a path is
// unavailable while itself succeeding.
void set_error(const std::string& message);

// printf into a std::string.
std::string text_printf(const char* format, ...) GG_PRINTF_FORMAT(1, 2);

}  // namespace gg::api

// Propagates the first failing status of a sequence of checks.
#define GG_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    const gg_status gg_check_status_ = (expr);   \
    if (gg_check_status_ != GG_STATUS_SUCCESS) { \
      return gg_check_status_;                   \
    }                                            \
  } while (0)
