#!/usr/bin/env python3
"""The closing summary of a ctest run: why tests were skipped, then the counts.

  scripts/ctest_summary.py <ctest output> <Testing/Temporary/LastTest.log>

ctest's own closing line ("100% tests passed, 0 tests failed out of N")
counts skipped tests as passed. This prints, from ctest's output, one line
that tells them apart, "ctest: P passed, F failed, S skipped", after the
skip reasons (count, reason) read from LastTest.log. A test is skipped when
its output matches its SKIP_REGULAR_EXPRESSION; its reason is the line after
GoogleTest's "<file>:<line>: Skipped" (GTEST_SKIP's message), or else the
output line that the expression matched (a CLI test's own message).
"""

import collections
import re
import sys

# One test's record in LastTest.log: its output, then, for a skipped test,
# the expression that matched it (which may span lines: CMake turns "\n" in a
# quoted argument into a newline).
RECORD = re.compile(
    r"^Output:\n-+\n(?P<output>.*?)<end of output>\n.*?"
    r"(?:Skip regular expression found in output\. Regex=\[(?P<regex>.*?)\]\n\"[^\n]*\" end time"
    r"|\"[^\n]*\" end time)",
    re.S | re.M,
)
TOTALS = re.compile(r"^\d+% tests passed, (\d+) tests? failed out of (\d+)", re.M)
SKIPPED = re.compile(r"^\s*\d+ - .* \((?:Skipped|Disabled)\)$", re.M)


def skip_reason(output: str, regex: str) -> str:
    lines = output.splitlines()
    for line, following in zip(lines, lines[1:]):
        if re.search(r": Skipped$", line):
            return following.strip()
    try:
        matcher = re.compile(regex)
    except re.error:
        matcher = None
    for line in lines:
        if matcher is not None and matcher.search(line):
            return line.strip()
    return lines[0].strip() if lines else "(no output)"


def main(ctest_output: str, last_test_log: str) -> None:
    with open(last_test_log, errors="replace") as f:
        records = RECORD.finditer(f.read())
    reasons = collections.Counter(
        skip_reason(r["output"], r["regex"]) for r in records if r["regex"] is not None
    )
    print("--- why tests were skipped (count, reason):")
    for reason, count in reasons.most_common():
        print("%7d %s" % (count, reason))
    if not reasons:
        print("      0 (none skipped)")

    with open(ctest_output, errors="replace") as f:
        text = f.read()
    totals = TOTALS.search(text)
    if totals is None:
        print("ctest: no closing line in %s (did ctest run?)" % ctest_output)
        return
    failed, total = int(totals[1]), int(totals[2])
    skipped = len(SKIPPED.findall(text))
    print("ctest: %d passed, %d failed, %d skipped" % (total - failed - skipped, failed, skipped))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: scripts/ctest_summary.py <ctest output> <LastTest.log>")
    main(sys.argv[1], sys.argv[2])
