#!/bin/bash
# norfab_bench.sh - workq-server's NORFAB broker against the floor, a plain
# libzmq ROUTER relay (norfab_bench --relay): POST -> worker -> RESPONSE
# round trips with bench/norfab_bench -c 4 -w 8, at 1 and at 32 POSTs in
# flight per client: round trips per second, p50 and p99 latency, and the
# server's CPU time per round trip (utime + stime of /proc/PID/stat, all
# its threads; and the run time of its threads in
# /proc/PID/task/*/schedstat).  Two setups, alternating (A B A B ...), a
# fresh server for every run:
#   workq  workq-server -listen 127.0.0.1:0 -norfab-listen 127.0.0.1:PORT
#   relay  norfab_bench --relay PORT
# Usage: bench/norfab_bench.sh [-r ROUNDS] [-n N1] [-N N32] [-o RAW.tsv]
# (defaults 3 rounds, 100000 round trips at 1 in flight, 600000 at 32: 5 to
# 20 s a run on two cores; the raw results, one line per run, go to RAW as
# tab-separated lines: round, setup, in flight, round trips, round trips/s,
# p50 ms, p99 ms, server CPU us per round trip (stat; schedstat), seconds,
# norfab_bench's own CPU seconds, the server's VmHWM in kB, exit status,
# the CPU seconds of everything else on the machine meanwhile; the medians
# go to stdout).  Run it in the build
# directory after `make bench/norfab_bench` (or set WQ_SERVER and
# NORFAB_BENCH).  The servers and the load generator share the machine:
# run nothing else meanwhile.  Only loopback addresses are used.  Exit
# status 77 without norfab_bench (no libzmq), 1 if a run failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
rounds=3 n1=100000 n32=600000 raw=""
while getopts "r:n:N:o:" o; do
    case $o in
    r) rounds=$OPTARG ;;
    n) n1=$OPTARG ;;
    N) n32=$OPTARG ;;
    o) raw=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-n N1] [-N N32] [-o RAW.tsv]" >&2; exit 64 ;;
    esac
done
server=${WQ_SERVER:-$here/../src/workq-server}
nbench=${NORFAB_BENCH:-$here/norfab_bench}
[ -x "$nbench" ] || { echo "$0: no $nbench (make bench/norfab_bench; needs libzmq)" >&2; exit 77; }
[ -x "$server" ] || { echo "$0: set WQ_SERVER" >&2; exit 1; }

tmp=$(mktemp -d /tmp/norfab_bench.XXXXXX)
[ -n "$raw" ] || raw=$tmp/raw.tsv
: >"$raw"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
# free_port, stop, cpu_ticks, cpu_ns, median
. "$here/bench_lib.sh"

# start SETUP: a fresh server of that setup in the background; sets pid and
# port, and waits until it says it listens.
start() {
    port=$(free_port)
    case $1 in
    workq) "$server" -listen 127.0.0.1:0 -norfab-listen 127.0.0.1:"$port" >"$tmp/out" 2>&1 & ;;
    relay) "$nbench" --relay "$port" >"$tmp/out" 2>&1 & ;;
    esac
    pid=$!
    for _ in $(seq 100); do
        grep -q "listening on 127.0.0.1:$port" "$tmp/out" && return 0
        sleep 0.05
    done
    echo "$0: $1 did not start: $(cat "$tmp/out")" >&2
    exit 1
}

# The machine's busy time so far, in clock ticks (/proc/stat: user, nice,
# system, irq, softirq, steal): less the server's and norfab_bench's, what
# else ran during a run.
busy_ticks() {
    awk '/^cpu / {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat
}

# field KEY LINE: the value of KEY=value in norfab_bench's line.
field() {
    echo "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"
}

hz=$(getconf CLK_TCK)
failed=0
echo "start: $(uptime)"
for round in $(seq "$rounds"); do
    for inflight in 1 32; do
        [ "$inflight" = 1 ] && n=$n1 || n=$n32
        for s in workq relay; do
            start "$s"
            b0=$(busy_ticks)
            t0=$(cpu_ticks)
            c0=$(cpu_ns)
            line=$("$nbench" --port "$port" -c 4 -w 8 --inflight "$inflight" -n "$n" 2>"$tmp/err")
            rc=$?
            t1=$(cpu_ticks)
            c1=$(cpu_ns)
            b1=$(busy_ticks)
            hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$pid/status")
            stop
            done_=$(field roundtrips "$line")
            us=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v n="${done_:-0}" \
                'BEGIN{printf "%.2f", n ? t / hz * 1e6 / n : 0}')
            us2=$(awk -v d=$((c1 - c0)) -v n="${done_:-0}" 'BEGIN{printf "%.2f", n ? d / 1000 / n : 0}')
            bcpu=$(field bench_cpu_s "$line")
            other=$(awk -v b=$((b1 - b0)) -v t=$((t1 - t0)) -v hz="$hz" -v c="${bcpu:-0}" \
                'BEGIN{o = (b - t) / hz - c; printf "%.2f", (o > 0 ? o : 0)}')
            printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$s" \
                "$inflight" "${done_:-0}" "$(field rt_per_s "$line")" "$(field p50_ms "$line")" \
                "$(field p99_ms "$line")" "$us" "$us2" "$(field seconds "$line")" "$bcpu" "$hwm" \
                "$rc" "$other" >>"$raw"
            echo "round $round $s inflight $inflight: $line rc $rc, other CPU ${other}s" >&2
            [ "$rc" = 0 ] || { failed=1; cat "$tmp/err" >&2; }
        done
    done
done
echo "end: $(uptime)"

# Medians.
col() { awk -F'\t' -v s="$1" -v i="$2" -v k="$3" '$2==s && $3==i {print $k}' "$raw" | median; }
echo "norfab_bench -c 4 -w 8, median of $rounds runs (-n $n1 at 1 in flight, $n32 at 32);"
echo "other CPU: the most that anything else on the machine used during one run"
printf '%-6s %-8s %10s %8s %8s %10s %18s %10s %7s %10s\n' setup inflight "rt/s" "p50 ms" "p99 ms" \
    "CPU us/rt" "(schedstat us/rt)" "bench CPU" "HWM MB" "other CPU"
for inflight in 1 32; do
    for s in workq relay; do
        printf '%-6s %-8s %10.0f %8.3f %8.3f %10.2f %18.2f %9.1fs %7.0f %9.2fs\n' "$s" \
            "$inflight" "$(col $s $inflight 5)" "$(col $s $inflight 6)" "$(col $s $inflight 7)" \
            "$(col $s $inflight 8)" "$(col $s $inflight 9)" "$(col $s $inflight 11)" \
            "$(awk -v k="$(col $s $inflight 12)" 'BEGIN{print k / 1024}')" \
            "$(awk -F'\t' -v s=$s -v i=$inflight '$2==s && $3==i && $14>m {m=$14} END{print m+0}' "$raw")"
    done
done
exit $failed
