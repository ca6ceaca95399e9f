#!/usr/bin/env bash
# Regenerates the golden traces and their expected outputs after an intended change
# (e.g. a field added to TraceHeader or TestRecord changes the dumps). Review the diff
# before committing: every change in an expected file must be explained by the change.
#   tests/golden/regen.sh            (from the repository root, after make)
set -eu
BUILD=${BUILD:-build}
A=$BUILD/acceltrace
ACCELTRACE_WRITE_GOLDEN=1 "$BUILD/tests/test_trace_golden" > /dev/null
for t in tests/golden/ok/*.atr; do "$A" dump "$t" > "${t%.atr}.jsonl"; done
"$A" dump --hex --type test --step 1 tests/golden/ok/small.atr > tests/golden/ok/small.step1.hex.jsonl
"$A" info tests/golden/ok/small.atr > tests/golden/ok/small.info
"$A" info --json tests/golden/ok/small.atr > tests/golden/ok/small.info.json
git status --short tests/golden
