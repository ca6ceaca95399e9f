#!/usr/bin/env bash
# scripts/layering.sh on tiny fake trees: a clean tree passes; a tree with a floor
# violation, capture <-> replay includes, an analysis -> capture include, an include cycle,
# long functions on every floor, a long file, a long python def and a long python file
# reports each of them and exits 1 (an 801-line analysis file and a 150-line def do not);
# the same tree
# passes with an allow-list naming them, and a stale allow-list entry is reported.
set -eu
S="$PWD/scripts/layering.sh"
command -v git > /dev/null || { echo "SKIP: no git"; exit 77; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# body N: a function of exactly N lines (signature to closing brace), with braces in a
# string, a character constant and comments that must not count.
body() { # name n
    echo "int $1(int x,"
    echo "       int y)"
    echo "{"
    echo "    const char *s = \"{{{\"; /* } */"
    echo "    char c = '}';"
    local i
    for ((i = 6; i < $2; i++)); do echo "    x += y; // {"; done
    echo "}"
}

mk_clean() { # dir
    mkdir -p "$1"/common "$1"/formats "$1"/traces "$1"/capture/w "$1"/replay "$1"/analysis \
        "$1"/cli "$1"/tests "$1"/scripts
    cd "$1"
    git init -q .
    printf '#include "common/a.h"\n' > common/a.c
    printf '#ifndef A_H\n#define A_H\nint a(void);\n#endif\n' > common/a.h
    printf '#include "common/a.h"\n#include "formats/f.h"\n' > formats/f.c
    printf '#include "common/a.h"\n' > formats/f.h
    printf '#include "formats/f.h"\n#include "t.h"\n' > traces/t.c
    printf '#include "traces/t2.h"\n' > traces/t.h
    printf '#include "common/a.h"\n' > traces/t2.h
    printf '#include "traces/t.h"\n' > capture/w/cap.c
    printf '#include "traces/t.h"\n#include "formats/f.h"\n' > replay/rep.c
    printf '#include "replay/rep.h"\n#include "traces/t.h"\n' > analysis/an.c
    printf 'int rep(void);\n' > replay/rep.h
    { printf '#include "analysis/an.h"\n#include "capture/w/cap.h"\n'; body ok 150; } > cli/main.c
    printf '#include "cli/x.h"\n#include "capture/w/cap.h"\n#include "replay/rep.h"\n' > tests/t.c
    printf 'struct s {\n    int a;\n};\nstatic const int tab[] = {\n' > cli/tab.c
    for ((i = 0; i < 200; i++)); do echo "    $i,"; done >> cli/tab.c
    echo "};" >> cli/tab.c
    git add -A
    cd - > /dev/null
}

# 1. clean tree
mk_clean "$T/ok"
"$S" --root "$T/ok" > "$T/ok.out" 2>&1 || fail "clean tree: $(cat "$T/ok.out")"
grep -q '^layering: 0 violation(s), 0 allowed$' "$T/ok.out" || fail "clean summary: $(cat "$T/ok.out")"

# 2. the same tree with one of each violation
cp -r "$T/ok" "$T/bad"
cd "$T/bad"
printf '#include "formats/f.h"\n' > common/b.c                   # floor below includes above
printf '#include "capture/w/cap.h"\n' >> replay/rep.c            # replay -> capture
printf '#include "capture/w/cap.h"\n' >> analysis/an.c           # analysis -> capture
printf '#include "traces/t.h"\n' >> traces/t2.h                  # cycle traces/t <-> traces/t2
body too_long 151 >> cli/main.c                                  # 151 lines
body also_long 170 > capture/w/long.c
for ((i = 0; i < 801; i++)); do echo "/* $i */"; done > analysis/fine.c  # under 1000
for ((i = 0; i < 1001; i++)); do echo "/* $i */"; done > traces/big.c
body in_replay 151 > replay/long.c
body in_common 200 > common/long.c
mkdir -p python/pkg
{
    echo "class Cap:"
    echo "    def ok(self):"                                         # 150 lines: fine
    for ((i = 0; i < 147; i++)); do echo "        x = 1"; done
    echo "        return ("
    echo "0)"                                                        # a bracket continues it
    echo ""
    echo "    def long(self):"                                       # 151 lines with a docstring
    echo '        """text'
    echo 'def not_a_def():'
    echo '        """'
    for ((i = 0; i < 146; i++)); do echo "        x = 1"; done
    echo "        return x"
    echo ""
    echo "def top():"
    echo "    return 1"
} > python/pkg/mod.py
for ((i = 0; i < 1001; i++)); do echo "# $i"; done > python/pkg/big.py
{ echo "static int knr(void) {"; for ((i = 0; i < 150; i++)); do echo "    f();"; done; echo "}"; } \
    > analysis/knr.c                                             # brace on the signature line
git add -A
cd - > /dev/null
set +e
"$S" --root "$T/bad" > "$T/bad.out" 2>&1
rc=$?
set -e
[ "$rc" = 1 ] || fail "bad tree exit $rc: $(cat "$T/bad.out")"
for key in include:common/b.c:formats/f.h include:replay/rep.c:capture/w/cap.h \
    include:analysis/an.c:capture/w/cap.h cycle:traces/t,traces/t2 \
    function:cli/main.c:too_long function:capture/w/long.c:also_long file:traces/big.c \
    function:analysis/knr.c:knr function:replay/long.c:in_replay \
    function:common/long.c:in_common function:python/pkg/mod.py:Cap.long \
    file:python/pkg/big.py; do
    grep -q "^$key: " "$T/bad.out" || fail "not reported: $key in $(cat "$T/bad.out")"
done
grep -q 'too_long() in cli/main.c is 151 lines' "$T/bad.out" || fail "length of too_long"
grep -q 'function:cli/main.c:ok:' "$T/bad.out" && fail "150 lines reported"
grep -q 'Cap.long() in python/pkg/mod.py is 151 lines' "$T/bad.out" || fail "length of Cap.long"
grep -q 'analysis/fine.c' "$T/bad.out" && fail "an 801-line analysis file reported"
grep -Eq 'Cap.ok|not_a_def|top' "$T/bad.out" && fail "a short python def reported"
grep -q 'tab' "$T/bad.out" && fail "an initializer taken for a function"
grep -q '^layering: 12 violation(s), 0 allowed$' "$T/bad.out" || fail "summary: $(cat "$T/bad.out")"

# 3. allow-listed, with one stale entry
cat > "$T/allow.txt" << 'EOF'
# today's violations
include:common/b.c:formats/f.h      # fixed elsewhere
include:replay/rep.c:capture/w/cap.h
include:analysis/an.c:capture/w/cap.h
cycle:traces/t,traces/t2
function:cli/main.c:too_long
function:capture/w/long.c:also_long
file:traces/big.c
function:analysis/knr.c:knr
function:replay/long.c:in_replay
function:common/long.c:in_common
function:python/pkg/mod.py:Cap.long
file:python/pkg/big.py
function:cli/main.c:gone            # no longer long
EOF
"$S" --root "$T/bad" --allow "$T/allow.txt" > "$T/allow.out" 2>&1 ||
    fail "allow-listed tree: $(cat "$T/allow.out")"
[ "$(grep -c '(allowed)$' "$T/allow.out")" = 12 ] || fail "allowed lines: $(cat "$T/allow.out")"
grep -q "stale allow-list entry 'function:cli/main.c:gone'" "$T/allow.out" || fail "stale entry"
grep -q '^layering: 0 violation(s), 12 allowed$' "$T/allow.out" || fail "allow summary"

# 4. usage
set +e
"$S" --bogus > /dev/null 2>&1; rc=$?
set -e
[ "$rc" = 2 ] || fail "unknown option exit $rc"
echo "layering checks ok"
