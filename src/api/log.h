// GROUPGEMM_LOG=1 prints one line per call to stderr: the problem and where it
// runs, e.g. "groupgemm: ragged-M bf16 G=8 M=4096 N=2048 K=7168 rhs=T
// out=bf16 -> portable". Only the value 1 turns it on. The variable is read on
// every call (a getenv is nothing beside a launch), so a process can turn the
// log on and off; callers test log_enabled() first so that a silent call
// builds no text.
#pragma once

#include <string>

namespace gg::api {

bool log_enabled();

// Prints "groupgemm: <text>".
void log_line(const std::string& text);

}  // namespace gg::api
