// See log.h.
#include "api/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace gg::api {

bool log_enabled() {
  const char* value = getenv("GROUPGEMM_LOG");
  return value != nullptr && strcmp(value, "1") == 0;
}

void log_line(const std::string& text) { fprintf(stderr, "groupgemm: %s\n", text.c_str()); }

}  // namespace gg::api
