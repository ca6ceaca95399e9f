#!/usr/bin/env bash
# layering.sh: checks the floors of the tree (docs/architecture.md "Layering rules").
#
#   scripts/layering.sh [--root DIR] [--allow FILE] [--format | --no-format]
#
# Over the committed C files (git ls-files '*.c' '*.h' in DIR, default the repository
# holding this script) it checks:
#   include   every #include "x/y.h" goes to the file's own floor or one below:
#             common <- formats <- traces <- {capture, replay} <- analysis <- cli, and
#             capture and replay never include each other, and analysis never includes
#             capture (it sees what a capture made only through traces); tests/ and bench/
#             (fuzz targets included) may include anything. Key: include:FILE:INCLUDED
#   cycle     no include cycle between modules (a module is a path without .c/.h; a.c and
#             a.h are one module, and so is a private a_impl.h shared by a's .c files).
#             Each strongly connected set of modules is one violation.
#             Key: cycle:MOD1,MOD2,... (sorted)
#   function  no function on a library floor (common, formats, traces, capture, replay,
#             analysis, cli) longer than 150 lines, counted from the first line of its
#             declaration to its closing brace; in python/ no def (function or method)
#             longer than 150 lines, from its `def` line to its last indented line.
#             Key: function:FILE:NAME
#   file      no .c/.h file on a library floor and no .py file in python/ longer than 1000
#             lines (analysis/ included: its former limit of 800 is gone). Key: file:FILE
#   format    only with --format: `clang-format --dry-run --Werror` over the files of
#             `make format` (run as `make format-check`) reports no change. Not allow-listed.
# Every violation is printed, one per line: "KEY: what" and "(allowed)" when the key is in
# the allow-list (default DIR/scripts/layering-allow.txt: one key per line, '#' starts a
# comment). Allow-list entries that no longer match anything are reported as stale, so the
# list can shrink. Exit 0 when every violation is allowed, 1 otherwise, 2 on a usage error.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
allow=
format=0
while [ $# -gt 0 ]; do
    case "$1" in
    --root) root=${2:?--root needs a folder}; shift 2 ;;
    --root=*) root=${1#--root=}; shift ;;
    --allow) allow=${2:?--allow needs a file}; shift 2 ;;
    --allow=*) allow=${1#--allow=}; shift ;;
    --format) format=1; shift ;;
    --no-format) format=0; shift ;;
    -h|--help) sed -n '2,29p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "layering: unknown option '$1' (see --help)" >&2; exit 2 ;;
    esac
done
[ -d "$root" ] || { echo "layering: no folder '$root'" >&2; exit 2; }
[ -n "$allow" ] || allow="$root/scripts/layering-allow.txt"
cd "$root" || exit 2

files=$(git ls-files -- '*.c' '*.h' 2> /dev/null) || {
    echo "layering: '$root' is not a git work tree" >&2
    exit 2
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# 1. include lines: "FILE INCLUDED" (the included path as written; a bare name is taken
#    relative to the including file's folder).
for f in $files; do
    awk -v f="$f" '
        /^[ \t]*#[ \t]*include[ \t]*"/ {
            s = $0; sub(/^[^"]*"/, "", s); sub(/".*$/, "", s)
            if (s !~ /\//) { d = f; sub(/[^\/]*$/, "", d); s = d s }
            print f, s
        }' "$f"
done > "$tmp/includes"

# floor rank of a path: common 0, formats 1, traces 2, capture/replay 3, analysis 4, cli 5;
# "free" for tests/ and bench/, "none" for anything else (not checked).
awk '
    function floor_of(p,   top) {
        top = p; sub(/\/.*$/, "", top)
        if (p !~ /\//) return "none"
        if (top == "common") return 0
        if (top == "formats") return 1
        if (top == "traces") return 2
        if (top == "capture" || top == "replay") return 3
        if (top == "analysis") return 4
        if (top == "cli") return 5
        if (top == "tests" || top == "bench" || top == "fuzz") return "free"
        return "none"
    }
    function top_of(p,   t) { t = p; sub(/\/.*$/, "", t); return t }
    {
        a = floor_of($1); b = floor_of($2)
        if (a == "free" || a == "none" || b == "none" || b == "free") next
        ta = top_of($1); tb = top_of($2)
        if (b + 0 > a + 0)
            printf "include:%s:%s: %s (floor %s) includes %s (floor %s, above)\n", $1, $2, $1, ta, $2, tb
        else if ((ta == "capture" && tb == "replay") || (ta == "replay" && tb == "capture"))
            printf "include:%s:%s: %s includes %s (capture and replay never include each other)\n", $1, $2, $1, $2
        else if (ta == "analysis" && tb == "capture")
            printf "include:%s:%s: %s includes %s (analysis reads traces, never capture)\n", $1, $2, $1, $2
    }' "$tmp/includes" > "$tmp/violations"

# 2. cycles between modules: Tarjan over the module graph (edges between committed files only).
printf '%s\n' $files > "$tmp/files"
awk '
    function mod(p) { sub(/\.[ch]$/, "", p); sub(/_impl$/, "", p); return p }
    function visit(v,   i, w) {
        idx[v] = low[v] = ++counter
        stack[++sp] = v; on[v] = 1
        for (i = 1; i <= nout[v]; i++) {
            w = out[v, i]
            if (!(w in idx)) {
                visit(w)
                if (low[w] < low[v]) low[v] = low[w]
            } else if (on[w] && idx[w] < low[v]) {
                low[v] = idx[w]
            }
        }
        if (low[v] == idx[v]) {
            n = 0
            do { w = stack[sp--]; on[w] = 0; memb[++n] = w } while (w != v)
            if (n > 1) {
                for (i = 2; i <= n; i++) {  # insertion sort of the members
                    x = memb[i]
                    for (j = i - 1; j >= 1 && memb[j] > x; j--) memb[j + 1] = memb[j]
                    memb[j + 1] = x
                }
                s = memb[1]
                for (i = 2; i <= n; i++) s = s "," memb[i]
                printf "cycle:%s: include cycle between %s\n", s, s
            }
        }
    }
    FNR == NR { known[$1] = 1; nodes[mod($1)] = 1; next }
    {
        if (!($2 in known)) next
        a = mod($1); b = mod($2)
        if (a == b || ((a, b) in seen)) next
        seen[a, b] = 1
        out[a, ++nout[a]] = b
    }
    END {
        counter = 0; sp = 0
        for (v in nodes) if (!(v in idx)) visit(v)
    }' "$tmp/files" "$tmp/includes" | sort >> "$tmp/violations"

# 3. sizes: function length (150 lines) and file length (1000 lines) on every library
#    floor, and the same limits for the defs and files of python/.
size_max_fn=150
size_max_file=1000
for f in $files; do
    case "$f" in
    common/*|formats/*|traces/*|capture/*|replay/*|analysis/*|cli/*) ;;
    *) continue ;;
    esac
    awk -v f="$f" -v max="$size_max_fn" -v maxfile="$size_max_file" '
        # Brace depth over K&R C with comments, strings and character constants removed.
        BEGIN { depth = 0; incomment = 0; hdr = ""; start = 0 }
        {
            line = $0
            if (incomment) {
                if (sub(/^.*\*\//, "", line)) incomment = 0; else next
            }
            gsub(/\/\*([^*]|\*+[^*\/])*\*+\//, " ", line)
            if (match(line, /\/\*/)) { line = substr(line, 1, RSTART - 1); incomment = 1 }
            gsub(/"([^"\\]|\\.)*"/, "\"\"", line)
            gsub(/\047([^\047\\]|\\.)*\047/, "0", line)
            sub(/\/\/.*$/, "", line)
            if (depth == 0 && line ~ /^[ \t]*#/) next
            for (i = 1; i <= length(line); i++) {
                c = substr(line, i, 1)
                if (c == "{") {
                    if (depth == 0) {
                        h = hdr " " substr(line, 1, i - 1)
                        gsub(/[ \t]+/, " ", h); sub(/ +$/, "", h)
                        isfn = (h ~ /\)$/ && h !~ /=/)
                        name = ""
                        if (isfn) {
                            p = index(h, "("); name = substr(h, 1, p - 1)
                            sub(/ +$/, "", name); sub(/^.*[ *]/, "", name)
                        }
                        fstart = start ? start : NR
                    }
                    depth++
                } else if (c == "}") {
                    depth--
                    if (depth == 0) {
                        if (isfn && NR - fstart + 1 > max)
                            printf "function:%s:%s: %s() in %s is %d lines (limit %d)\n", f, name, name, f, NR - fstart + 1, max
                        isfn = 0; hdr = ""; start = 0
                    }
                } else if (c == ";" && depth == 0) {
                    hdr = ""; start = 0
                }
            }
            if (depth == 0) {
                rest = line
                if (match(rest, /[;}][^;}]*$/)) rest = substr(rest, RSTART + 1)
                if (rest ~ /[^ \t]/) {
                    if (!start) start = NR
                    hdr = hdr " " rest
                }
            }
        }
        END {
            if (NR > maxfile)
                printf "file:%s: %s is %d lines (limit %d)\n", f, f, NR, maxfile
        }' "$f"
done >> "$tmp/violations"

# python/: a def ends at the last non-blank line before the next line indented no deeper
# than its `def` (a decorator or comment line at that depth ends it too). Methods are
# named Class.method; a nested def counts inside its parent and on its own.
for f in $(git ls-files -- 'python/*.py' 2> /dev/null); do
    awk -v f="$f" -v max="$size_max_fn" -v maxfile="$size_max_file" '
        function indent_of(s) { match(s, /^[ \t]*/); return RLENGTH }
        function close_defs(ind,   n) {
            while (nd > 0 && dind[nd] >= ind) {
                n = last - dstart[nd] + 1
                if (n > max)
                    printf "function:%s:%s: %s() in %s is %d lines (limit %d)\n", f, dname[nd], dname[nd], f, n, max
                nd--
            }
            while (nc > 0 && cind[nc] >= ind) nc--
        }
        BEGIN { nd = 0; nc = 0; last = 0 }
        /^[ \t]*$/ { next }
        {
            ind = indent_of($0)
            # lines inside a bracket or a triple-quoted string continue the current statement
            if (cont) { last = NR; track($0); next }
            close_defs(ind)
            if ($0 ~ /^[ \t]*(async[ \t]+)?def[ \t]/) {
                s = $0; sub(/^[ \t]*(async[ \t]+)?def[ \t]+/, "", s); sub(/[ \t(].*$/, "", s)
                if (nc > 0 && cind[nc] < ind) s = cname[nc] "." s
                nd++; dind[nd] = ind; dstart[nd] = NR; dname[nd] = s
            } else if ($0 ~ /^[ \t]*class[ \t]/) {
                s = $0; sub(/^[ \t]*class[ \t]+/, "", s); sub(/[ \t(:].*$/, "", s)
                nc++; cind[nc] = ind; cname[nc] = s
            }
            last = NR
            track($0)
        }
        # cont: open brackets or an open triple-quoted string after this line
        function track(s,   t, i, c, q) {
            t = s
            while (length(t) > 0) {
                if (intq) {
                    i = index(t, tq); if (!i) { t = ""; break }
                    t = substr(t, i + 3); intq = 0; continue
                }
                if (match(t, /"""|\047\047\047/)) {
                    pre = substr(t, 1, RSTART - 1); tq = substr(t, RSTART, 3)
                    count_brackets(pre); t = substr(t, RSTART + 3); intq = 1; continue
                }
                count_brackets(t); t = ""
            }
            cont = (intq || depth > 0)
        }
        function count_brackets(s,   u) {
            u = s
            gsub(/"([^"\\]|\\.)*"/, "", u); gsub(/\047([^\047\\]|\\.)*\047/, "", u)
            sub(/#.*$/, "", u)
            depth += gsub(/[\[({]/, "", u) - gsub(/[\])}]/, "", u)
            if (depth < 0) depth = 0
        }
        END {
            close_defs(-1)
            if (NR > maxfile)
                printf "file:%s: %s is %d lines (limit %d)\n", f, f, NR, maxfile
        }' "$f"
done >> "$tmp/violations"

# 4. citations: no committed text file cites material that does not ship with the project
#    (design notes or workload specs kept outside the repository, their numbered sections,
#    or the paper excerpts they came with); the project's own design, decisions and sources
#    are in docs/design.md and docs/{disc,salca,kura}.md. The fuzz corpora are data and are
#    not checked. Key: cite:FILE
cite_re='DESIGN[.]md|specs/[a-z]+[.]md|[(]spec [0-9]|[[]spec [0-9]|seeds/[0-9]{3}'
git grep -nIE "$cite_re" -- . ':!tests/fuzz/corpus' 2> /dev/null |
    awk -F: '!seen[$1]++ { printf "cite:%s: %s line %s cites a file outside the repository\n", $1, $1, $2 }' \
    >> "$tmp/violations"

# Apply the allow-list.
: > "$tmp/allowed"
if [ -f "$allow" ]; then
    sed -e 's/#.*$//' -e 's/[ \t]*$//' -e 's/^[ \t]*//' "$allow" | grep -v '^$' > "$tmp/allowed"
fi
bad=0
while IFS= read -r v; do
    key=${v%%: *}
    if grep -qxF -- "$key" "$tmp/allowed"; then
        echo "$v (allowed)"
    else
        echo "$v"
        bad=$((bad + 1))
    fi
done < "$tmp/violations"
sed 's/: .*$//' "$tmp/violations" > "$tmp/keys"
n_allowed=0
while IFS= read -r key; do
    if grep -qxF -- "$key" "$tmp/keys"; then
        n_allowed=$((n_allowed + 1))
    else
        echo "layering: stale allow-list entry '$key' (no such violation any more; remove it)"
    fi
done < "$tmp/allowed"

if [ "$format" = 1 ]; then
    if ! make --no-print-directory -s format-check; then
        echo "format: clang-format reports changes (run 'make format')"
        bad=$((bad + 1))
    fi
fi

echo "layering: $bad violation(s), $n_allowed allowed"
[ "$bad" -eq 0 ]
