#!/bin/bash
# clean_memory.sh - the server's RSS while its command log's cleaning pass
# meets millions of ended jobs.
#
# Usage: bench/clean_memory.sh [-d SECONDS]
#   -d SECONDS  how long the load runs (default 80); the cleaning pass
#               starts 5 s after it ends
#
# The server (WQ_SERVER, default src/workq-server of the build in the
# current directory) runs with a command log of 16 MiB segments and
# -log-level debug; workq-bench (WQ_BENCH) runs cycle, 20,000 jobs with a
# 5 s TTL at a time (and --keep, so every job ends by expiry), back to back for the
# load's length.  The script samples RSS every 0.1 s and waits until the
# pass has ended (its summary line, or no segment rewritten for 5 s), then
# prints the bench's last run, the peak RSS before the pass and during it,
# the log's size, and the pass's lines.
set -u

load=80
while getopts d:h opt; do
    case $opt in
    d) load=$OPTARG ;;
    *)
        sed -n '5,7p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
    esac
done
server=${WQ_SERVER:-src/workq-server}
bench=${WQ_BENCH:-bench/workq-bench}
[ -x "$server" ] && [ -x "$bench" ] || {
    echo "clean_memory.sh: set WQ_SERVER and WQ_BENCH (or run it in the build directory)" >&2
    exit 2
}
d=$(mktemp -d /tmp/wq-clean-XXXXXX)
trap 'kill "$spid" 2>/dev/null; wait "$spid" 2>/dev/null; rm -rf "$d"' EXIT
"$server" -listen 127.0.0.1:0 -cmdlog-path "$d/log" -cmdlog-seg-size 16M \
    -cmdlog-clean-int $(((load + 5) * 1000)) -log-level debug >"$d/out" 2>"$d/err" &
spid=$!
for _ in $(seq 50); do
    grep -q "listening on" "$d/out" 2>/dev/null && break
    sleep 0.1
done
port=$(sed -n 's/^workq-server listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$d/out" | head -1)
[ -n "$port" ] || {
    echo "clean_memory.sh: the server did not start" >&2
    exit 1
}
start=$(date +%s)
(
    runs=0
    while [ "$(date +%s)" -lt $((start + load)) ]; do
        "$bench" -p "$port" -t cycle -c 20 -P 8 -n 20000 --ttl 5000 --keep -q >"$d/bench" 2>&1 || exit 1
        runs=$((runs + 1))
    done
    echo "$runs runs of 20,000 jobs; the last: $(cat "$d/bench")" >"$d/bench"
) &
bpid=$!

before=0 peak=0 seen=0 seen_at=$start
while :; do
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$spid/status")
    [ "$rss" -gt "$peak" ] && peak=$rss
    now=$(date +%s)
    [ $now -lt $((start + load + 5)) ] && before=$peak
    grep -q "cmdlog cleaned segments=\|cmdlog cleaning failed" "$d/err" && break
    n=$(grep -c "cmdlog cleaned segment=" "$d/err")
    [ "$n" != "$seen" ] && seen=$n && seen_at=$now
    [ "$n" -gt 0 ] && [ $((now - seen_at)) -ge 5 ] && break
    [ $now -gt $((start + load + 900)) ] && break
    sleep 0.1
done
wait "$bpid" || echo "clean_memory.sh: a bench run failed" >&2
cat "$d/bench"
echo "peak RSS: $((before / 1024)) MiB before the pass, $((peak / 1024)) MiB overall"
echo "log after the pass: $(du -sh "$d/log" | cut -f1)"
grep "cmdlog cleaned segment=" "$d/err" | sed -n '1p;$p' | cut -d" " -f1,5
grep "cmdlog cleaned segments=\|cmdlog cleaning failed" "$d/err"
