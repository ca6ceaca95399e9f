#!/usr/bin/env bash
# A disk that fills while analyze or export writes its folder: the message names the file
# and says why ("No space left on device"), the exit status is 1 (a runtime failure). Runs
# on a 256 KiB tmpfs filled to several levels, so the failure lands in the CSV writer, the
# plot writer and the hex writer in turn. Mounting needs root or a user namespace (unshare);
# without either the test skips, saying so.
set -u
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
mnt="$T/tiny"
cleanup() {
    umount "$mnt" 2> /dev/null
    rm -rf "$T"
}
trap cleanup EXIT
mkdir "$mnt"
if [ "${ENOSPC_INNER:-0}" != 1 ]; then
    if ! mount -t tmpfs -o size=256k tmpfs "$mnt" 2> /dev/null; then
        if command -v unshare > /dev/null && unshare -rm true 2> /dev/null; then
            rm -rf "$T"
            ENOSPC_INNER=1 exec unshare -rm bash "$0" "$@"
        fi
        echo "SKIP: cannot mount a tmpfs (not root, no user namespaces)"
        exit 77
    fi
elif ! mount -t tmpfs -o size=256k tmpfs "$mnt" 2> /dev/null; then
    echo "SKIP: cannot mount a tmpfs inside a user namespace"
    exit 77
fi
cd "$T"
"$A" capture salca --length 512 --steps 2 --layers 1 --heads 2 --kv-heads 1 -q -o S.atr > /dev/null &&
    "$A" capture disc --model micro --threads 1 -q -o D.atr > /dev/null &&
    "$A" capture kura --size 40x36 --reproducible -q -o K.atr > /dev/null &&
    "$A" replay D.atr --model disc -q -o RD || { echo "FAIL: inputs"; exit 1; }
fail=0 failures=0
for cmd in "analyze hash D.atr" "analyze disc RD" "analyze conflicts S.atr" \
    "export tiles K.atr --shape 20x5" "export hbm-trace S.atr --hw $ROOT/configs/salca-hbm2.json"; do
    for fill in 0 32 64 128 192 224 240 248; do
        rm -rf "${mnt:?}"/*
        [ "$fill" -gt 0 ] && dd if=/dev/zero of="$mnt/fill" bs=1k count="$fill" 2> /dev/null
        rc=0
        # shellcheck disable=SC2086
        $A $cmd -q -o "$mnt/o" > /dev/null 2> err.txt || rc=$?
        [ "$rc" = 0 ] && continue
        failures=$((failures + 1))
        if [ "$rc" != 1 ] || ! grep -q "No space left on device" err.txt ||
            ! grep -q "$mnt/o" err.txt; then
            echo "FAIL $cmd with ${fill} KiB filled: exit $rc: $(cat err.txt)"; fail=1
        fi
    done
done
# the fills must make the runs fail, or nothing was tested
[ "$failures" -ge 20 ] || { echo "FAIL only $failures runs hit the full disk"; fail=1; }
echo "$failures runs hit the full disk"
[ "$fail" = 0 ] && echo ok
exit "$fail"
