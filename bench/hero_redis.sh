#!/bin/bash
# hero_redis.sh - workq-server's Hero listener against Debian's redis-server,
# in memory and with their logs (doc/benchmarks.md, "Hero: RESP against
# redis-server"):
#   1. redis-benchmark -n N -c 50 -P 1 and -P 16 on four commands on hero:
#      keys (LPUSH, LPOP, HSET, HGETALL): requests per second, and the
#      server's CPU time per request (the run time of all its threads in
#      /proc/PID/task/*/schedstat, in nanoseconds: a -P 16 run is too short
#      for the 10 ms ticks of /proc/PID/stat);
#   2. the Hero job cycle, workq-bench --protocol hero -t cycle -c 16 (8
#      producers, 8 workers): jobs per second, and the server's CPU time
#      (utime + stime of /proc/PID/stat, all its threads; and schedstat's)
#      per job.
# Four setups, alternating in every round, a fresh server for each part of
# each round:
#   wq-mem     workq-server -listen 127.0.0.1:0 -hero-listen 127.0.0.1:PORT
#   redis-mem  redis-server --port PORT --save '' --appendonly no
#   wq-log     the same workq-server with -cmdlog-path DIR (default sync)
#   redis-aof  redis-server --port PORT --save '' --appendonly yes
#              --appendfsync everysec
# Usage: bench/hero_redis.sh [-r ROUNDS] [-n REQUESTS] [-j JOBS] [-o RAW.tsv]
# (defaults 5, 200000, 60000; the raw results, one line per run, go to RAW
# as tab-separated lines, the medians to stdout).  The servers and the load
# generator share the machine: run nothing else meanwhile.  Only loopback
# addresses are used.  Exit status 77 without redis-server or
# redis-benchmark.
set -u
here=$(cd "$(dirname "$0")" && pwd)
rounds=5 requests=200000 jobs=60000 raw=""
while getopts "r:n:j:o:" o; do
    case $o in
    r) rounds=$OPTARG ;;
    n) requests=$OPTARG ;;
    j) jobs=$OPTARG ;;
    o) raw=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-n REQUESTS] [-j JOBS] [-o RAW.tsv]" >&2; exit 64 ;;
    esac
done
server=${WQ_SERVER:-$here/../src/workq-server}
wbench=${WQ_BENCH:-$here/workq-bench}
for t in redis-server redis-benchmark redis-cli; do
    command -v $t >/dev/null || { echo "$0: $t is not installed" >&2; exit 77; }
done
[ -x "$server" ] && [ -x "$wbench" ] || { echo "$0: set WQ_SERVER and WQ_BENCH" >&2; exit 1; }

tmp=$(mktemp -d /tmp/hero_redis.XXXXXX)
[ -n "$raw" ] || raw=$tmp/raw.tsv
: >"$raw"
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"' EXIT
# free_port, stop, cpu_ticks, cpu_ns, median
. "$here/bench_lib.sh"

# start SETUP: a fresh server of that setup in the background; sets pid and
# port, and waits until it answers PING.
start() {
    port=$(free_port)
    rm -rf "$tmp/data"
    mkdir -p "$tmp/data"
    case $1 in
    wq-mem) "$server" -listen 127.0.0.1:0 -hero-listen 127.0.0.1:$port >"$tmp/out" 2>&1 & ;;
    wq-log)
        "$server" -listen 127.0.0.1:0 -hero-listen 127.0.0.1:$port -cmdlog-path "$tmp/data" \
            >"$tmp/out" 2>&1 &
        ;;
    redis-mem)
        redis-server --port $port --bind 127.0.0.1 --dir "$tmp/data" --save '' \
            --appendonly no >"$tmp/out" 2>&1 &
        ;;
    redis-aof)
        redis-server --port $port --bind 127.0.0.1 --dir "$tmp/data" --save '' \
            --appendonly yes --appendfsync everysec >"$tmp/out" 2>&1 &
        ;;
    esac
    pid=$!
    for _ in $(seq 100); do
        [ "$(redis-cli -p $port PING 2>/dev/null)" = PONG ] && return 0
        sleep 0.05
    done
    echo "$0: $1 did not start: $(cat "$tmp/out")" >&2
    exit 1
}

commands=("LPUSH hero:bench:l x" "LPOP hero:bench:l" "HSET hero:bench:h f v" "HGETALL hero:bench:h")
setups="wq-mem redis-mem wq-log redis-aof"
hz=$(getconf CLK_TCK)

for round in $(seq "$rounds"); do
    for s in $setups; do
        start "$s"
        for P in 1 16; do
            for c in "${commands[@]}"; do
                n0=$(cpu_ns)
                # shellcheck disable=SC2086
                rps=$(redis-benchmark -p "$port" -n "$requests" -c 50 -P $P -q $c 2>/dev/null |
                    tr '\r' '\n' | sed -n 's/.*: \([0-9.]*\) requests per second.*/\1/p' | tail -1)
                n1=$(cpu_ns)
                printf 'rb\t%s\t%s\tP%s\t%s\t%s\t%s\n' "$round" "$s" "$P" "${c%% *}" "${rps:-0}" \
                    "$(awk -v d=$((n1 - n0)) -v n="$requests" 'BEGIN{printf "%.3f", d / 1000 / n}')" \
                    >>"$raw"
            done
        done
        stop
        start "$s"
        t0=$(cpu_ticks)
        n0=$(cpu_ns)
        csv=$("$wbench" --protocol hero -p "$port" -t cycle -c 16 -n "$jobs" --keep -q --csv)
        rc=$?
        t1=$(cpu_ticks)
        n1=$(cpu_ns)
        stop
        line=$(echo "$csv" | tail -1)
        jps=$(echo "$line" | cut -d, -f17)
        done_=$(echo "$line" | cut -d, -f12)
        errors=$(echo "$line" | cut -d, -f13)
        p99=$(echo "$line" | cut -d, -f22)
        us=$(awk -v t=$((t1 - t0)) -v hz="$hz" -v n="$done_" 'BEGIN{printf "%.1f", n ? t / hz * 1e6 / n : 0}')
        us2=$(awk -v d=$((n1 - n0)) -v n="$done_" 'BEGIN{printf "%.1f", n ? d / 1000 / n : 0}')
        printf 'cycle\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$round" "$s" "$jps" "$us" "$p99" \
            "$done_" "$errors" "$rc" "$us2" >>"$raw"
        echo "round $round $s: cycle $jps jobs/s, $us us CPU/job, rc $rc" >&2
    done
done

# Medians.
for col in 6 7; do
    if [ $col = 6 ]; then
        echo "redis-benchmark -n $requests -c 50, requests/s, median of $rounds"
    else
        echo "the same runs, server CPU per request (us), median of $rounds"
    fi
    printf '%-8s %-4s' command P
    for s in $setups; do printf ' %12s' "$s"; done
    echo
    for P in P1 P16; do
        for c in LPUSH LPOP HSET HGETALL; do
            printf '%-8s %-4s' "$c" "$P"
            for s in $setups; do
                [ $col = 6 ] && fmt=' %12.0f' || fmt=' %12.3f'
                # shellcheck disable=SC2059
                printf "$fmt" "$(awk -F'\t' -v s="$s" -v P="$P" -v c="$c" -v k=$col \
                    '$1=="rb" && $3==s && $4==P && $5==c {print $k}' "$raw" | median)"
            done
            echo
        done
    done
done
echo "workq-bench --protocol hero -t cycle -c 16 -n $jobs, median of $rounds"
printf '%-10s %10s %14s %18s %10s\n' setup jobs/s "CPU us/job" "(schedstat us/job)" "p99 us"
for s in $setups; do
    printf '%-10s %10.0f %14.1f %18.1f %10.0f\n' "$s" \
        "$(awk -F'\t' -v s="$s" '$1=="cycle" && $3==s {print $4}' "$raw" | median)" \
        "$(awk -F'\t' -v s="$s" '$1=="cycle" && $3==s {print $5}' "$raw" | median)" \
        "$(awk -F'\t' -v s="$s" '$1=="cycle" && $3==s {print $10}' "$raw" | median)" \
        "$(awk -F'\t' -v s="$s" '$1=="cycle" && $3==s {print $6}' "$raw" | median)"
done
