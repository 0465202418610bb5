// See error.h.
#include "api/error.h"

#include <stdarg.h>
#include <stdio.h>

namespace gg::api {
namespace {

thread_local std::string message;

std::string text_vprintf(const char* format, va_list args) {
  va_list again;
  va_copy(again, args);
  const int length = vsnprintf(nullptr, 0, format, args);
  std::string text;
  if (length < 0) {
    text = format;  // an encoding error: the bare format still says which check failed
  } else {
    text.resize(static_cast<size_t>(length) + 1);
    vsnprintf(&text[0], text.size(), format, again);
    text.resize(static_cast<size_t>(length));
  }
  va_end(again);
  return text;
}

}  // namespace

void clear_error() { message.clear(); }

const char* last_error() { return message.c_str(); }

void set_error(const std::string& text) { message = text; }

gg_status fail(gg_status status, const char* format, ...) {
  va_list args;
  va_start(args, format);
  message = text_vprintf(format, args);
  va_end(args);
  return status;
}

std::string text_printf(const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::string text = text_vprintf(format, args);
  va_end(args);
  return text;
}

}  // namespace gg::api
