#!/usr/bin/env bash
# `make fuzz`: builds every tests/fuzz/fuzz_*.c target with clang and libFuzzer
# (-fsanitize=fuzzer,address,undefined) into $BUILD (default build-fuzz/), runs each for
# FUZZ_SECONDS (default 600) on one core starting from its committed corpus
# tests/fuzz/corpus/<name>/, and merges new coverage back into that corpus, minimized
# (-merge=1 keeps only inputs that add coverage). Findings (crash-*, leak-*, timeout-*)
# are written to $BUILD/findings/<name>/ and make the script exit 1.
# Environment: FUZZ_SECONDS, FUZZ_TARGETS (names, default all), FUZZ_MAX_LEN (default 8192).
set -eu
BUILD=${BUILD:-build-fuzz}
SECONDS_EACH=${FUZZ_SECONDS:-600}
MAX_LEN=${FUZZ_MAX_LEN:-8192}
CC=${FUZZ_CC:-clang}
command -v "$CC" >/dev/null || { echo "fuzz.sh: $CC not found (apt-get install clang)"; exit 1; }
SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
# the library, built by the Makefile with clang and coverage instrumentation
make --no-print-directory -j2 BUILD="$BUILD" CC="$CC" OPT="-O1 -g" \
    EXTRA_CFLAGS="$SAN -fsanitize=fuzzer-no-link -Wno-error -Wno-unused-command-line-argument" \
    "$BUILD/libacceltrace.a"
LIBS=$(pkg-config --libs libzstd libprotobuf-c libpng jansson libxxhash)
targets=${FUZZ_TARGETS:-$(ls tests/fuzz/fuzz_*.c | xargs -n1 basename | sed 's/\.c$//')}
status=0
for t in $targets; do
    name=${t#fuzz_}
    bin="$BUILD/fuzz/$t-libfuzzer"
    mkdir -p "$BUILD/fuzz" "$BUILD/findings/$name" "tests/fuzz/corpus/$name"
    "$CC" -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -O1 -g -I. -I"$BUILD/gen" $SAN \
        -fsanitize=fuzzer -o "$bin" "tests/fuzz/$t.c" "$BUILD/libacceltrace.a" $LIBS \
        -L/usr/lib/x86_64-linux-gnu/openblas-pthread/ -lopenblas -lpthread -lm
    work="$BUILD/fuzz/$name-work"
    rm -rf "$work"; mkdir -p "$work"
    echo "fuzz.sh: running $t for ${SECONDS_EACH}s"
    if ! "$bin" -max_total_time="$SECONDS_EACH" -max_len="$MAX_LEN" -rss_limit_mb=2048 \
            -timeout=10 -print_final_stats=1 -artifact_prefix="$BUILD/findings/$name/" \
            "$work" "tests/fuzz/corpus/$name" > "$BUILD/fuzz/$name.log" 2>&1; then
        echo "fuzz.sh: $t found a problem (see $BUILD/fuzz/$name.log, $BUILD/findings/$name/)"
        tail -n 30 "$BUILD/fuzz/$name.log"
        status=1
    fi
    # merge what the run found into the committed corpus, keeping only new coverage
    merged="$BUILD/fuzz/$name-merged"
    rm -rf "$merged"; mkdir -p "$merged"
    "$bin" -merge=1 -max_len="$MAX_LEN" "$merged" "tests/fuzz/corpus/$name" "$work" \
        > "$BUILD/fuzz/$name-merge.log" 2>&1 || true
    if [ -n "$(ls -A "$merged")" ]; then
        rm -rf "tests/fuzz/corpus/$name"; mv "$merged" "tests/fuzz/corpus/$name"
    fi
    echo "fuzz.sh: $t corpus: $(ls "tests/fuzz/corpus/$name" | wc -l) files," \
        "$(du -sk "tests/fuzz/corpus/$name" | cut -f1) KiB"
    grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$BUILD/fuzz/$name.log" || true
done
exit $status
