#!/bin/sh
# expect.sh CODE PATTERN... -- COMMAND [ARGS...]
#
# Runs COMMAND, echoes its output (stdout and stderr together), and passes
# when its exit code is CODE and every PATTERN (an extended regular
# expression) matches some line of the output; a PATTERN written !REGEX
# must match none. ctest alone checks either an exit code or an output
# pattern, never both.
expected=$1
shift
patterns=""
while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  patterns="$patterns$1
"
  shift
done
[ "$#" -gt 0 ] && shift
output=$("$@" 2>&1)
code=$?
printf '%s\n' "$output"
status=0
if [ "$code" -ne "$expected" ]; then
  echo "expect.sh: exit code $code, expected $expected"
  status=1
fi
printf '%s' "$patterns" | while IFS= read -r pattern; do
  case $pattern in
    !*)
      if printf '%s\n' "$output" | grep -Eq -- "${pattern#!}"; then
        echo "expect.sh: a line matches: ${pattern#!}"
        exit 1
      fi
      ;;
    *)
      if ! printf '%s\n' "$output" | grep -Eq -- "$pattern"; then
        echo "expect.sh: no line matches: $pattern"
        exit 1
      fi
      ;;
  esac
done || status=1
exit $status
