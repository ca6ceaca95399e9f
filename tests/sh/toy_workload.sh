#!/usr/bin/env bash
# docs/architecture.md's recipe for a workload that reuses a record type, applied for real:
# on a scratch copy of the tree, a workload "toy" emitting a few TestRecords is added with one
# capture registry row and its parser row, the program and test_capture are built (ccache;
# the objects of $BUILD are copied along, so only what the recipe touched is compiled), and
#   capture toy -o x.atr, verify x.atr, capture --list, the bash completion,
#   capture toy --help, test_capture and tests/sh/capture_verb.sh
# must work. The files the recipe touched are counted and must equal the bold count of the
# doc's "A workload that reuses a record type" section.
set -u
A=${ACCELTRACE:?}
BUILD=${BUILD:-build}
fail=0
bad() { echo "FAIL $*"; fail=1; }
command -v git > /dev/null && git rev-parse --show-toplevel > /dev/null 2>&1 \
    || { echo "SKIP: not in a git checkout (the copy is of the tracked files)"; exit 77; }
[ -f "$BUILD/libacceltrace.a" ] || { echo "SKIP: no $BUILD/libacceltrace.a to start from"; exit 77; }
cc="gcc"
command -v ccache > /dev/null && cc="ccache gcc"

tmp=$(mktemp -d); trap '[ -n "${KEEP_TMP:-}" ] || rm -rf "$tmp"' EXIT
tree=$tmp/tree
mkdir -p "$tree"
# the tracked files as they are now (working copy), and the objects already built
git ls-files -z | tar --null -T - -cf - 2> /dev/null | tar -xf - -C "$tree" \
    || { bad "copying the tree"; exit 1; }
mkdir -p "$tree/build"
(cd "$BUILD" && tar --exclude='./tests/test_*' --exclude='./fuzz' --exclude='./bench' \
    --exclude='./test-logs' --exclude='./test-artifacts' -cf - .) | tar -xf - -C "$tree/build"
cd "$tree" || exit 1

# the recipe's count, from the doc
want=$(sed -n '/^#### A workload that reuses a record type/,/^##/p' docs/architecture.md \
    | tr '\n' ' ' | grep -oE 'touches \*\*[0-9]+ files\*\*' | grep -oE '[0-9]+')
[ -n "$want" ] || { bad "no 'touches **N files**' in docs/architecture.md's recipe"; exit 1; }

sums() { find . -path ./build -prune -o -type f -print | LC_ALL=C sort | xargs -d '\n' md5sum; }
sums > "$tmp/before"

# ---- the recipe ----
mkdir -p capture/toy
cat > capture/toy/toy_capture.h <<'EOF'
/*
 * toy_capture: a toy workload, "toy": n TestRecords, record i with step i and value i * 3.
 */
#ifndef ACCELTRACE_TOY_CAPTURE_H
#define ACCELTRACE_TOY_CAPTURE_H

#include <stdint.h>

#include "capture/capture.h"

struct toy_params {
    uint32_t n_records; /* records after the header */
};

/* The ops of `capture toy`; open takes a const struct toy_params * (copied). */
extern const struct capture_ops capture_toy_ops;

#endif
EOF
cat > capture/toy/toy_capture.c <<'EOF'
#include "capture/toy/toy_capture.h"

#include <stdio.h>

#include "common/mem.h"

struct toy {
    struct toy_params p;
    char params_json[64];
};

static int toy_open(void **inst, const void *params, struct errmsg *e)
{
    struct toy *t = mem_calloc(1, sizeof *t);
    *inst = t;
    if (!t)
        return errmsg_set(e, ERR_NOMEM, "out of memory");
    t->p = *(const struct toy_params *)params;
    return 0;
}

static uint64_t toy_estimate(const void *inst)
{
    return (1u << 20) + 64u * ((const struct toy *)inst)->p.n_records;
}

static void toy_what(const void *inst, char *what, size_t n)
{
    snprintf(what, n, "capture toy of %u records", ((const struct toy *)inst)->p.n_records);
}

static int toy_header(void *inst, Acceltrace__TraceHeader *h, struct errmsg *e)
{
    struct toy *t = inst;
    (void)e;
    snprintf(t->params_json, sizeof t->params_json, "{\"n_records\":%u}", t->p.n_records);
    h->params_json = t->params_json;
    h->model_json = "{}";
    h->source = "synthetic";
    h->source_detail = "capture toy: record i has value 3i";
    return 0;
}

static int toy_run(void *inst, struct capture_sink *sink, struct errmsg *e)
{
    const struct toy *t = inst;
    int rc = 0;
    for (uint32_t i = 0; i < t->p.n_records && !rc; i++) {
        Acceltrace__Record rec = ACCELTRACE__RECORD__INIT;
        Acceltrace__TestRecord r = ACCELTRACE__TEST_RECORD__INIT;
        r.step = i;
        r.value = 3 * (int64_t)i;
        rec.body_case = ACCELTRACE__RECORD__BODY_TEST;
        rec.test = &r;
        struct trace_key key = {(int32_t)i, 0, 0};
        rc = capture_emit(sink, &rec, &key, e);
    }
    return rc;
}

static void toy_close(void *inst)
{
    mem_free(inst);
}

const struct capture_ops capture_toy_ops = {
    .name = "toy",
    .summary = "a toy workload of a few TestRecords",
    .mem_hint = "use fewer --records",
    .open = toy_open,
    .mem_estimate = toy_estimate,
    .mem_what = toy_what,
    .header = toy_header,
    .run = toy_run,
    .close = toy_close,
};
EOF
cat > cli/cmd_capture_toy.c <<'EOF'
#include <stdio.h>

#include "capture/capture_registry.h"
#include "capture/toy/toy_capture.h"
#include "cli/cli.h"
#include "cli/cli_opt.h"

enum { OPT_RECORDS = 1 };

static const struct cli_opt opts[] = {
    {OPT_RECORDS, "records", 0, CLI_ARG_INT, "N", "records after the header (default 5)", 0},
    CLI_OPT_OUTPUT("FILE.atr", "the trace to write (required)"),
    CLI_OPT_QUIET,
    CLI_OPT_JSON,
    CLI_OPT_END,
};

const struct cli_spec cmd_capture_toy_spec = {
    .verb = "capture toy",
    .usage = "usage: acceltrace capture toy [--records N] -o FILE.atr\n",
    .opts = opts,
};

int cmd_capture_toy(int argc, char **argv);
int cmd_capture_toy(int argc, char **argv)
{
    struct toy_params p = {5};
    struct cli_parser ps;
    cli_parser_init(&ps, &cmd_capture_toy_spec, argc, argv);
    for (int id; (id = cli_next(&ps)) != CLI_END;) {
        if (id == CLI_HELP || id == CLI_BAD)
            return cli_next_exit(id);
        if (id == CLI_POSITIONAL)
            return cli_usage_error("capture toy", "unexpected argument '%s'", ps.arg);
        if (id == OPT_RECORDS) {
            if (ps.i64 < 0 || ps.i64 > 1000000)
                return cli_usage_error("capture toy", "--records needs 0..1000000");
            p.n_records = (uint32_t)ps.i64;
        }
    }
    const char *out = ps.common.output;
    if (!out)
        return cli_usage_error("capture toy", "no output given (-o FILE.atr)");
    const struct capture_ops *ops = capture_registry_find("toy");
    struct capture_opts o;
    capture_opts_default(&o);
    o.quiet = true;
    struct errmsg e = {0};
    void *inst = NULL;
    int rc = ops->open(&inst, &p, &e);
    if (!rc)
        rc = capture_run(ops, inst, out, &o, &e);
    ops->close(inst);
    if (rc)
        return cli_fail(rc, errmsg_text(&e));
    if (ps.common.json)
        return cli_print_json(json_pack("{s:s,s:o}", "workload", "toy", "trace",
                                        cli_json_trace_file(out)));
    return 0;
}
EOF
# the registry: the extern and the row
sed -i 's/^extern const struct capture_ops capture_test_ops;$/&\nextern const struct capture_ops capture_toy_ops;/; s/^    &capture_test_ops,$/&\n    \&capture_toy_ops,/' \
    capture/capture_registry.c
# the parser: its prototype, its grammar and its row
sed -i 's/^extern const struct cli_spec cmd_capture_test_spec;$/&\nint cmd_capture_toy(int argc, char **argv);\nextern const struct cli_spec cmd_capture_toy_spec;/; s/^    {"test", cmd_capture_test, &cmd_capture_test_spec},$/&\n    {"toy", cmd_capture_toy, \&cmd_capture_toy_spec},/' \
    cli/capture_parsers.c
# the pins of the registered captures
sed -i 's/{"disc", "kura", "salca", "test"}/{"disc", "kura", "salca", "test", "toy"}/; s/capture_registry_count(), 4)/capture_registry_count(), 5)/; s/i < 4; i++) {/i < 5; i++) {/' \
    tests/test_capture.c
sed -i 's/^  test       synthetic TestRecords.*$/&\n  toy        a toy workload of a few TestRecords/' tests/sh/capture_verb.sh
# ---- end of the recipe ----

sums > "$tmp/after"
touched=$(diff "$tmp/before" "$tmp/after" | grep -E '^[<>]' | awk '{print $3}' | sort -u)
n=$(echo "$touched" | grep -c .)
[ "$n" -eq "$want" ] || bad "the recipe touched $n files, docs/architecture.md says $want: $(echo $touched)"
for f in capture/capture_registry.c cli/capture_parsers.c tests/test_capture.c tests/sh/capture_verb.sh; do
    cmp -s "$f" "$OLDPWD/$f" && bad "the recipe's edit of $f did not apply"
done

export CCACHE_NOHASHDIR=1 CCACHE_BASEDIR=$tree
# the copy's objects are in build/ whatever $BUILD is (BUILD=build on the command line
# beats an exported BUILD); they were built with the flags of their tree: under `make asan` (ASAN=1)
# the same sanitizer flags as the Makefile's asan target, so they link
mkflags=()
[ -n "${ASAN:-}" ] && mkflags=(OPT=-O1
    "EXTRA_CFLAGS=-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
    "EXTRA_LDFLAGS=-fsanitize=address,undefined")
make -j2 BUILD=build CC="$cc" "${mkflags[@]}" build/acceltrace build/tests/test_capture > "$tmp/make.log" 2>&1 \
    || { tail -n 30 "$tmp/make.log"; bad "the build with the toy workload"; exit 1; }
T=$tree/build/acceltrace
"$T" capture toy --records 7 -o x.atr || bad "capture toy: exit $?"
"$T" verify x.atr > /dev/null || bad "verify x.atr: exit $?"
[ "$("$T" dump x.atr | grep -c '"value"')" -ge 6 ] || bad "dump x.atr: $("$T" dump x.atr | head -3)"
"$T" dump x.atr | grep -q '"value": *"\?18"\?' || bad "dump x.atr has no record of value 18"
"$T" capture --list | grep -qx toy || bad "capture --list has no toy: $("$T" capture --list)"
"$T" capture --help | grep -q '^  toy  ' || bad "capture --help does not list toy"
"$T" capture toy --help | grep -q '^usage: acceltrace capture toy' || bad "capture toy --help"
"$T" completion bash > comp.bash || bad "completion bash: exit $?"
# shellcheck disable=SC1091
source comp.bash
COMP_WORDS=(acceltrace capture t); COMP_CWORD=2; COMPREPLY=(); _acceltrace
[ "$(printf '%s\n' "${COMPREPLY[@]}" | sort | paste -sd' ' -)" = "test toy" ] \
    || bad "completion of 'capture t': ${COMPREPLY[*]}"
COMP_WORDS=(acceltrace capture toy --rec); COMP_CWORD=3; COMPREPLY=(); _acceltrace
[ "${COMPREPLY[*]}" = "--records" ] || bad "completion of 'capture toy --rec': ${COMPREPLY[*]}"
build/tests/test_capture > "$tmp/tc.log" 2>&1 || { tail -n 20 "$tmp/tc.log"; bad "test_capture with toy"; }
ACCELTRACE=$T bash tests/sh/capture_verb.sh > "$tmp/cv.log" 2>&1 \
    || { cat "$tmp/cv.log"; bad "capture_verb.sh with toy"; }

# a registry row without its parser row is an internal error, not a silently missing workload
sed -i '/{"toy", cmd_capture_toy/d' cli/capture_parsers.c
make -j2 BUILD=build CC="$cc" "${mkflags[@]}" build/acceltrace > "$tmp/make2.log" 2>&1 || { tail -n 20 "$tmp/make2.log"; bad "rebuild"; }
"$T" capture --list > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] && grep -q "capture 'toy' is registered .* but has no option parser" "$tmp/err" \
    || bad "a capture without a parser: exit $rc, $(cat "$tmp/err")"
"$T" completion bash > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 1 ] || bad "completion with a capture without a parser: exit $rc"

[ $fail -eq 0 ] && echo "toy workload ok: $n files touched, as docs/architecture.md says"
exit $fail
