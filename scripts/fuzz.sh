#!/usr/bin/env bash
# `make fuzz`: builds every tests/fuzz/fuzz_*.c target with clang and libFuzzer
# (-fsanitize=fuzzer,address,undefined) into $BUILD (default build-fuzz/), runs each for
# FUZZ_SECONDS (default 600) on one core starting from its committed corpus
# tests/fuzz/corpus/<name>/, and merges new coverage back into that corpus, minimized
# (-merge=1 keeps only inputs that add coverage; files named regress-* are always kept,
# they reproduce fixed findings). Findings (crash-*, leak-*, timeout-*)
# are written to $BUILD/findings/<name>/ and make the script exit 1.
# Environment: FUZZ_SECONDS, FUZZ_TARGETS (names, default all), FUZZ_MAX_LEN (default per
# target: 1 MiB for fuzz_replay, whose inputs are whole traces, 64 KiB for the checkpoint
# loaders, 8 KiB otherwise), FUZZ_KEEP_GOING=1 (libFuzzer -fork=1 with crashes, timeouts
# and out-of-memory ignored: the run lasts FUZZ_SECONDS and collects every finding),
# FUZZ_FLAGS (more libFuzzer flags, e.g. -len_control=0 to mutate at full length at once),
# FUZZ_MERGE=0 (leave the committed corpus as it is).
set -eu
BUILD=${BUILD:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-600}
KEEP_GOING=${FUZZ_KEEP_GOING:-0}
EXTRA_FLAGS=${FUZZ_FLAGS:-}
MERGE=${FUZZ_MERGE:-1}
CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (apt-get install clang)"; exit 1; }
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# the library, built by the Makefile with clang and coverage instrumentation
make --no-print-directory -j2 BUILD="$BUILD" CC="$CC" OPT="-O1 -g" \
    EXTRA_CFLAGS="$SAN -fsanitize=fuzzer-no-link -Wno-error -Wno-unused-command-line-argument" \
    "$BUILD/libacceltrace.a"
LIBS=$(pkg-config --libs libzstd libprotobuf-c libpng jansson libxxhash zlib)
targets=${FUZZ_TARGETS:-$(ls tests/fuzz/fuzz_*.c | xargs -n1 basename | sed 's/\.c$//')}
# default -max_len of a target (FUZZ_MAX_LEN overrides)
max_len_of() {
    case $1 in
    fuzz_replay) echo 1048576 ;;
    fuzz_safetensors | fuzz_side_files) echo 65536 ;;
    *) echo 8192 ;;
    esac
}
status=0
for t in $targets; do
    name=${t#fuzz_}
    MAX_LEN=${FUZZ_MAX_LEN:-$(max_len_of "$t")}
    mode=""
    [ "$KEEP_GOING" = 1 ] && mode="-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1"
    bin="$BUILD/fuzz/$t-libfuzzer"
    mkdir -p "$BUILD/fuzz" "$BUILD/findings/$name" "tests/fuzz/corpus/$name"
    "$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g -I. -I"$BUILD/gen" $SAN \
        -fsanitize=fuzzer -o "$bin" "tests/fuzz/$t.c" "$BUILD/libacceltrace.a" $LIBS \
        -L/usr/lib/x86_64-linux-gnu/openblas-pthread/ -lopenblas -lpthread -lm
    work="$BUILD/fuzz/$name-work"
    rm -rf "$work"; mkdir -p "$work"
    found_before=$(ls "$BUILD/findings/$name" | wc -l)
    echo "fuzz.sh: running $t for ${SECONDS_EACH}s (max_len $MAX_LEN)"
    # shellcheck disable=SC2086 # $mode and $EXTRA_FLAGS are lists of flags
    if ! "$bin" -max_total_time="$SECONDS_EACH" -max_len="$MAX_LEN" -rss_limit_mb=2048 \
            -timeout=10 -print_final_stats=1 -artifact_prefix="$BUILD/findings/$name/" \
            $mode $EXTRA_FLAGS "$work" "tests/fuzz/corpus/$name" > "$BUILD/fuzz/$name.log" 2>&1 ||
        [ "$(ls "$BUILD/findings/$name" | wc -l)" != "$found_before" ]; then
        echo "fuzz.sh: $t found a problem (see $BUILD/fuzz/$name.log, $BUILD/findings/$name/)"
        tail -n 30 "$BUILD/fuzz/$name.log"
        status=1
    fi
    # merge what the run found into the committed corpus, keeping only new coverage
    merged="$BUILD/fuzz/$name-merged"
    rm -rf "$merged"; mkdir -p "$merged"
    "$bin" -merge=1 -max_len="$MAX_LEN" "$merged" "tests/fuzz/corpus/$name" "$work" \
        > "$BUILD/fuzz/$name-merge.log" 2>&1 || true
    if [ "$MERGE" = 1 ] && [ -n "$(ls -A "$merged")" ]; then
        # named regression inputs (regress-*: a fixed finding) stay whatever their coverage
        find "tests/fuzz/corpus/$name" -maxdepth 1 -name 'regress-*' -exec cp {} "$merged/" \;
        rm -rf "tests/fuzz/corpus/$name"; mv "$merged" "tests/fuzz/corpus/$name"
    fi
    echo "fuzz.sh: $t corpus: $(ls "tests/fuzz/corpus/$name" | wc -l) files," \
        "$(du -sk "tests/fuzz/corpus/$name" | cut -f1) KiB"
    # executions: the fork-mode parent's last status line, else libFuzzer's final stats
    grep -E "^#[0-9]+: " "$BUILD/fuzz/$name.log" | tail -n 1 | grep . ||
        grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$BUILD/fuzz/$name.log" || true
done
exit $status
