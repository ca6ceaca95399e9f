#!/usr/bin/env bash
# The script `acceltrace sweep --emit slurm` prints runs on a real single-node Slurm:
# munged, slurmctld and slurmd from Debian's packages are started by hand on
# localhost with a generated slurm.conf, key and state in a temp folder (free high ports),
# the script is run from another folder into an output folder whose name holds $, " and a
# space, and the merge job's results must equal an unsharded replay byte for byte. A second
# sweep whose shards fail must leave its merge job cancelled, not pending for ever. Every
# wait has a timeout; every daemon is stopped by the EXIT trap. A third sweep passes a
# cluster's options (--sbatch '--time=... --account=...', --mem-limit giving --mem,
# --env-setup, --job-output, --max-running) and each must reach the jobs. Exit 77 with "SKIP: reason"
# where Slurm cannot start (packages missing, not root, daemons refusing to come up).
set -euo pipefail
A=${ACCELTRACE:?}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
skip() { echo "SKIP: $*"; exit 77; }

[ "$(id -u)" -eq 0 ] || skip "not root (munged and the slurm daemons run as root here)"
for c in munged munge unmunge slurmctld slurmd sbatch scontrol sinfo scancel squeue; do
    command -v "$c" > /dev/null || skip "$c not installed (scripts/deps.sh installs slurmctld slurmd munge)"
done
# A test run inside a Slurm job must not look like an array task to the emitted script.
while read -r v; do unset "$v"; done < <(compgen -e | grep '^SLURM_' || true)

T=$(mktemp -d)
chmod 755 "$T" # munged wants its socket's folders searchable by all
pids=()
cleanup() {
    set +e
    if [ -f "$T/slurm.conf" ] && [ ${#pids[@]} -gt 1 ]; then
        timeout 5 scancel --quiet --user=root > /dev/null 2>&1
        for _ in $(seq 20); do
            [ -z "$(timeout 5 squeue -h -t running,completing 2> /dev/null)" ] && break
            sleep 0.5
        done
    fi
    local i p
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do # slurmd, slurmctld, munged
        p=${pids[i]}
        kill "$p" 2> /dev/null || continue
        for _ in $(seq 40); do kill -0 "$p" 2> /dev/null || break; sleep 0.25; done
        kill -9 "$p" 2> /dev/null
        wait "$p" 2> /dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT
logs() { for f in "$T"/log/*; do echo "== $f"; tail -n 15 "$f"; done; }

# Two TCP ports nobody listens on (ports in /proc/net/tcp* are hex).
used=$(awk 'FNR > 1 { split($2, a, ":"); print a[2] }' /proc/net/tcp /proc/net/tcp6 2> /dev/null | sort -u)
free_port() { # port to avoid
    local p
    for _ in $(seq 100); do
        p=$((20000 + RANDOM % 40000))
        [ "$p" != "$1" ] && ! grep -qx "$(printf '%04X' "$p")" <<< "$used" && { echo "$p"; return 0; }
    done
    return 1
}
ctld_port=$(free_port 0) || skip "no free TCP port"
d_port=$(free_port "$ctld_port") || skip "no free TCP port"

mkdir -p "$T/munge" "$T/state" "$T/spool" "$T/log" "$T/w" "$T/elsewhere"
chmod 755 "$T/munge"
head -c 1024 /dev/urandom > "$T/munge.key"
chmod 400 "$T/munge.key"
munged -F --key-file="$T/munge.key" --socket="$T/munge/munge.socket" \
    --pid-file="$T/munge/munged.pid" --log-file="$T/log/munged.log" \
    --seed-file="$T/munge/munged.seed" > "$T/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 40); do
    timeout 5 munge -n -S "$T/munge/munge.socket" 2> /dev/null |
        timeout 5 unmunge -S "$T/munge/munge.socket" > /dev/null 2>&1 && break
    sleep 0.25
done
timeout 5 munge -n -S "$T/munge/munge.socket" 2> /dev/null |
    timeout 5 unmunge -S "$T/munge/munge.socket" > /dev/null 2>&1 ||
    { logs; skip "munged did not start"; }

# The node as slurmd sees it: CPUs=.. Boards=.. ... RealMemory=..
hwline=$(timeout 10 slurmd -C 2> /dev/null | head -n 1 | sed 's/^NodeName=[^ ]* //')
case "$hwline" in *CPUs=*RealMemory=*) ;; *) skip "'slurmd -C' gave no node line" ;; esac
cat > "$T/slurm.conf" << EOF
ClusterName=acceltrace-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$d_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$T/munge/munge.socket
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
MinJobAge=600
SchedulerParameters=sched_interval=1
NodeName=localhost $hwline State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$T/slurm.conf"
slurmctld -D -f "$SLURM_CONF" > "$T/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N localhost > "$T/log/slurmd.out" 2>&1 &
pids+=($!)
state=
for _ in $(seq 60); do
    state=$(timeout 5 sinfo -h -n localhost -o '%t' 2> /dev/null || true)
    [ "$state" = idle ] && break
    sleep 0.5
done
[ "$state" = idle ] || { logs; skip "slurm did not start (node state '$state')"; }
echo "slurm up: ports $ctld_port/$d_port, node $hwline"

# The job's state (PENDING, RUNNING, COMPLETED, ...), one line per array task.
job_states() { timeout 10 scontrol show job -o "$1" 2> /dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p'; }
# Waits at most $2 seconds for job $1 to end; prints its last state; fails on timeout.
wait_job() {
    local end=$((SECONDS + $2)) s
    while :; do
        s=$(job_states "$1" | head -n 1)
        case "$s" in
        COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE | PREEMPTED)
            echo "$s"
            return 0
            ;;
        esac
        [ $SECONDS -lt $end ] || { echo "${s:-GONE}"; return 1; }
        sleep 0.5
    done
}
# Runs an emitted script from another folder; prints the merge job's id.
submit() { # script
    local o
    o=$(cd "$T/elsewhere" && timeout 30 bash "$1") || { echo "submitting $1 failed: $o" >&2; return 1; }
    sed -n 's/^Submitted batch job \([0-9][0-9]*\).*/\1/p' <<< "$o"
}
dump() { timeout 10 scontrol show job -o 2> /dev/null; logs; ls -R "$T/w"; tail -n 5 "$T"/*/slurm-*.out 2> /dev/null; }

cd "$T/w"
HW="$ROOT/configs/test-count.json"
G="$ROOT/configs/test-sweep.json"
E="$ROOT/configs/test-energy.json"
"$A" capture test --records 300 -o t.atr 2> /dev/null
"$A" replay t.atr --hw "$HW" --sweep "$G" --energy "$E" -q -o full 2> /dev/null

# 100 configs in 3 shards, at most 2 at once; relative trace path, odd output name
# shellcheck disable=SC2016 # the '$' is the point
out='res $HOME "q"'
"$A" sweep "$G" --hw "$HW" --emit slurm --trace t.atr --shards 3 -j 2 --energy "$E" \
    -o "$out" > job.sh
mid=$(submit "$T/w/job.sh")
[ -n "$mid" ] || { dump; echo "FAIL: no merge job id"; exit 1; }
aid=$(timeout 10 scontrol show job -o "$mid" | sed -n 's/.*Dependency=afterok:\([0-9]*\).*/\1/p')
st=$(wait_job "$mid" 45) || true
if [ "$st" != COMPLETED ]; then
    dump
    echo "FAIL: merge job $mid ended $st"
    exit 1
fi
# the array: tasks 1..3, each completed with exit 0, each one shard of 33/33/34 configs
tasks=$(timeout 10 scontrol show job -o | grep 'JobName=acceltrace-sweep ' |
    sed -n 's/.*ArrayTaskId=\([0-9]*\) .*JobState=\([A-Z]*\) .*ExitCode=\([0-9:]*\).*/\1 \2 \3/p' | sort)
[ "$tasks" = "$(printf '1 COMPLETED 0:0\n2 COMPLETED 0:0\n3 COMPLETED 0:0')" ] ||
    { dump; echo "FAIL: array tasks: $tasks"; exit 1; }
[ -z "$aid" ] || grep -q "^JobId=[0-9]* ArrayJobId=$aid " <(timeout 10 scontrol show job -o)
[ "$(wc -l < "$out/shard-1/results.jsonl")" -eq 33 ]
[ "$(wc -l < "$out/shard-2/results.jsonl")" -eq 33 ]
[ "$(wc -l < "$out/shard-3/results.jsonl")" -eq 34 ]
[ -z "$(find "$T/elsewhere" -mindepth 1)" ] || { echo "FAIL: jobs wrote into the submitting folder"; exit 1; }
cmp full/results.csv "$out/results.csv"
cmp full/results.jsonl "$out/results.jsonl"
echo "merged results equal the unsharded replay"

# A cluster's job options: --sbatch lines, --mem from the replays' --mem-limit, an
# environment hook in every job, the jobs' logs where --job-output says, array concurrency
# as --max-running; the results are still the unsharded replay's.
cat > "$T/w/env.sh" << 'EOF2'
echo "env-setup ${SLURM_JOB_NAME:-?} ${SLURM_ARRAY_TASK_ID:-merge}" >> env-setup.log
export ACCELTRACE_ENV_HOOK=1
EOF2
"$A" sweep "$G" --hw "$HW" --emit slurm --trace t.atr --shards 2 --max-running 1 \
    --sbatch '--time=01:00:00 --account=X' --sbatch --comment=acceltrace-test \
    --mem-limit 512MiB --env-setup env.sh --job-output 'logs/%x-%A_%a.out' --energy "$E" \
    -o opts > opts.sh 2> opts.err
[ ! -s opts.err ] || { cat opts.err; echo "FAIL: --max-running warned"; exit 1; }
# --mem = 512MiB + 25% + 256MiB = 896 MiB; one line per --sbatch option, in order
want_lines=$(printf '#SBATCH --array=1-2%%1\n#SBATCH --cpus-per-task=1\n#SBATCH --mem=896M\n#SBATCH --output=logs/%%x-%%A_%%a.out\n#SBATCH --time=01:00:00\n#SBATCH --account=X\n#SBATCH --comment=acceltrace-test')
[ "$(grep '^#SBATCH' opts.sh | grep -v job-name)" = "$want_lines" ] ||
    { grep '^#SBATCH' opts.sh; echo "FAIL: #SBATCH lines of --sbatch/--mem-limit"; exit 1; }
grep -q -- "--mem-limit '512MiB'" opts.sh || { echo "FAIL: replays without --mem-limit"; exit 1; }
oid=$(submit "$T/w/opts.sh")
[ -n "$oid" ] || { dump; echo "FAIL: no merge job id (options)"; exit 1; }
st=$(wait_job "$oid" 45) || true
[ "$st" = COMPLETED ] || { dump; echo "FAIL: merge job $oid (options) ended $st"; exit 1; }
jobs_o=$(timeout 10 scontrol show job -o | grep 'Comment=acceltrace-test' || true)
[ "$(grep -c 'JobName=acceltrace-sweep ' <<< "$jobs_o")" -eq 2 ] ||
    { echo "$jobs_o"; echo "FAIL: 2 array tasks with the --sbatch comment expected"; exit 1; }
[ "$(grep -c 'JobName=acceltrace-merge ' <<< "$jobs_o")" -eq 1 ] ||
    { echo "$jobs_o"; echo "FAIL: the merge job lacks the --sbatch options"; exit 1; }
while read -r line; do
    grep -q 'TimeLimit=01:00:00 ' <<< "$line" || { echo "$line"; echo "FAIL: --time"; exit 1; }
    grep -qi 'Account=x ' <<< "$line" || { echo "$line"; echo "FAIL: --account"; exit 1; }
done <<< "$jobs_o"
grep 'JobName=acceltrace-sweep ' <<< "$jobs_o" | grep -q 'MinMemoryNode=896M' ||
    { echo "$jobs_o"; echo "FAIL: array tasks without --mem=896M"; exit 1; }
[ "$(sort env-setup.log)" = "$(printf 'env-setup acceltrace-merge merge\nenv-setup acceltrace-sweep 1\nenv-setup acceltrace-sweep 2')" ] ||
    { cat env-setup.log; echo "FAIL: --env-setup did not run once in each job"; exit 1; }
ls logs/acceltrace-sweep-*_1.out logs/acceltrace-sweep-*_2.out logs/acceltrace-merge-*_merge.out > /dev/null ||
    { ls -R logs; echo "FAIL: --job-output logs"; exit 1; }
cmp full/results.csv opts/results.csv
cmp full/results.jsonl opts/results.jsonl
echo "--sbatch, --mem, --env-setup, --job-output: in the jobs; results equal the unsharded replay"

# shards that fail (no such trace): the merge job is cancelled, never runs, never hangs
"$A" sweep "$G" --hw "$HW" --emit slurm --trace missing.atr --shards 2 -o bad > bad.sh
bid=$(submit "$T/w/bad.sh")
st=$(wait_job "$bid" 30) || true
if [ "$st" != CANCELLED ]; then
    dump
    echo "FAIL: merge job $bid after failed shards ended $st, expected CANCELLED"
    exit 1
fi
[ ! -e bad/results.csv ]
grep -q "missing.atr" slurm-*_1.out
echo ok
