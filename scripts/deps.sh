#!/usr/bin/env bash
# Checks the Debian packages acceltrace needs to build, test, plot and benchmark
# (with the argument train: also those of make train-dit).
# As root, installs the missing ones (apt-get update first); otherwise prints the exact
# apt-get command and exits 1. Quiet when everything is present.
set -u
required=(gcc make pkg-config libzstd-dev zstd libprotobuf-c-dev protobuf-c-compiler libpng-dev
          libjansson-dev zlib1g-dev libopenblas-dev libcmocka-dev libxxhash-dev gnuplot-nox python3
          python3-numpy python3-pandas python3-protobuf python3-zstandard python3-xxhash
          python3-torch xz-utils parallel
          python3-pip python3-setuptools python3-venv python3-crcmod
          clang clang-format slurmctld slurmd slurm-client munge
          poppler-utils libxml2-utils man-db groff-base)
# the peer tools' own readers in tests/sh/peer_export.sh, run when a checkout is named
# (SCALE-Sim v2 needs tqdm and absl; the Chakra schema is compiled with protoc)
required+=(python3-tqdm python3-absl protobuf-compiler)
# the open and read counts of tests/sh/shared_pass.sh and tests/sh/report_trace_opens.sh
required+=(strace)
# a real browser for tests/sh/report_html.sh (the HTML report rendered headless)
required+=(chromium)
# `scripts/deps.sh train`: also the photographs and the image reader of make train-dit
# (scripts/train_dit.py, configs/models/trained-small.manifest; a few hundred MB).
if [ "${1:-}" = train ]; then
    required+=(python3-pil python3-skimage mate-backgrounds plasma-workspace-wallpapers)
fi
missing=()
for p in "${required[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: missing Debian packages; run as root:" >&2
    echo "  apt-get update && $cmd" >&2
    exit 1
fi
echo "deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# munge and slurm start their daemons on install; tests/sh/slurm_sweep.sh starts its own.
# Without a policy-rc.d (containers have one), forbid starts for this install only.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d &&
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
fi
apt-get update -qq >&2 || { echo "deps.sh: apt-get update failed" >&2; exit 1; }
# shellcheck disable=SC2086
$cmd >&2 || { echo "deps.sh: '$cmd' failed" >&2; exit 1; }
