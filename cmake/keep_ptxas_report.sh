#!/bin/sh
# keep_ptxas_report.sh COMMAND...
#
# The compiler launcher of the library's CUDA objects (PtxasReports.cmake):
# runs the compile and keeps what ptxas says of each kernel (registers,
# stack frame, spills, and notes such as serialized wgmmas) in
# <object>.ptxas beside the object, where scripts/check_ptxas.py reads it.
# A report beside its object survives incremental builds that do not
# recompile it, and a ccache hit replays the compiler's output, so it is
# written again then. Those report lines, dozens an object, stay out of the
# build's output (the check sums them up); everything else passes through.
# An empty first argument is the place of a compiler launcher (ccache) that
# this build runs without.
[ -z "$1" ] && shift
object=
previous=
for argument in "$@"; do
  [ "$previous" = -o ] && object=$argument
  previous=$argument
done
report=$object.ptxas
"$@" >"$report.new" 2>&1
status=$?
grep -Ev '^(ptxas info|    [0-9]+ bytes stack frame)' "$report.new" >&2
mv "$report.new" "$report"
exit $status
