#!/bin/bash
# soak.sh - run workq-server under a mixed workload for a long time and
# record whether its memory and latency stay flat.
#
# Usage: bench/soak.sh [-d SECONDS] [-i SECONDS] [-o DIR]
#   -d SECONDS  how long (default 3600)
#   -i SECONDS  sampling interval (default 10)
#   -o DIR      where soak.csv and soak.png go (default: a new directory
#               under /tmp, printed at the end)
#
# The server (WQ_SERVER, default src/workq-server of the build in the
# current directory) runs with a command log (sync interval), -max-memory
# 256M and -idle-timeout 30s.  Meanwhile, one after another without pause:
#   - workq-bench (WQ_BENCH) runs of 20,000 jobs (TTL 5 s and --keep, so
#     that done jobs expire and the server reaches a steady state), cycling through the
#     workloads cycle, run, schedule and add-then-lease-complete with 10
#     to 50 connections, pipelined or not; each run's p99 latency and
#     throughput are kept;
#   - a rude client (python3) opens connections and leaves mid-command:
#     half a line, half a data block, a lease that waits, a run whose
#     client vanishes, a pipeline of inspects it never reads;
# and every interval the sampler records the server's RSS, its open
# connections and jobs, and the last bench run's figures.  At the end
# soak.csv holds the samples and, with gnuplot, soak.png draws RSS and p99
# against time.  Exits non-zero if the server died or a bench run failed.
set -u

duration=3600
interval=10
out=""
while getopts d:i:o:h opt; do
    case $opt in
    d) duration=$OPTARG ;;
    i) interval=$OPTARG ;;
    o) out=$OPTARG ;;
    *)
        sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
    esac
done
server=${WQ_SERVER:-src/workq-server}
bench=${WQ_BENCH:-bench/workq-bench}
[ -x "$server" ] && [ -x "$bench" ] || {
    echo "soak.sh: set WQ_SERVER and WQ_BENCH (or run it in the build directory)" >&2
    exit 2
}
[ -n "$out" ] || out=$(mktemp -d /tmp/wq-soak-XXXXXX)
mkdir -p "$out/log"

"$server" -listen 127.0.0.1:0 -cmdlog-path "$out/log" -max-memory 256M \
    -idle-timeout 30s >"$out/server.out" 2>"$out/server.err" &
spid=$!
for _ in $(seq 50); do
    grep -q "listening on" "$out/server.out" 2>/dev/null && break
    sleep 0.1
done
port=$(sed -n 's/^workq-server listening on 127.0.0.1:\([0-9]*\)$/\1/p' "$out/server.out" | head -1)
[ -n "$port" ] || {
    echo "soak.sh: the server did not start" >&2
    exit 1
}
end=$(($(date +%s) + duration))
status=0

# The bench loop: one run after another; the last figures in last.csv.
(
    i=0
    workloads=(cycle run schedule lease-complete)
    while [ "$(date +%s)" -lt "$end" ]; do
        w=${workloads[$((i % 4))]}
        c=$((10 + (i * 7) % 41))
        [ $((c % 2)) -eq 1 ] && c=$((c + 1))
        p=$((1 + (i % 3) * 7))
        if "$bench" -p "$port" -t "$w" -c "$c" -P "$p" -n 20000 --ttl 5000 --keep --timeout 120 --csv \
            >"$out/run.csv" 2>"$out/run.err"; then
            tail -1 "$out/run.csv" | awk -F, -v w="$w" -v c="$c" -v p="$p" \
                'NR==1 { print w "," c "," p "," $0 }' >"$out/last.csv"
            head -1 "$out/run.csv" >"$out/header.csv"
        else
            echo "bench run $i ($w -c $c -P $p) failed: $(cat "$out/run.err")" >>"$out/failures"
        fi
        i=$((i + 1))
    done
) &
bpid=$!

# The rude client.
python3 - "$port" "$end" <<'EOF' &
import random, socket, sys, time, uuid
port, end = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(7)
def conn():
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")  # reset on close
    return s
jid = lambda: str(uuid.uuid4()).encode()
while time.time() < end:
    try:
        s = conn()
        k = rng.randrange(5)
        if k == 0:
            s.sendall(b"add %s rude 60000 600000 10\r\n" % jid()[: rng.randrange(5, 30)])
        elif k == 1:
            s.sendall(b"add %s rude 60000 600000 100000\r\n" % jid() + b"x" * rng.randrange(50000))
        elif k == 2:
            s.sendall(b"lease rude-empty 10000\r\n")
        elif k == 3:
            s.sendall(b"run %s rude-run 60000 10000 3\r\nabc\r\n" % jid())
        else:
            s.sendall(b"inspect queues 0 1000\r\n" * 200)
        time.sleep(rng.random() * 0.05)
        s.close()
    except OSError:
        time.sleep(0.1)
    time.sleep(0.02)
EOF
rpid=$!

# The sampler.
csv=$out/soak.csv
echo "seconds,rss_kib,connections,jobs,workload,conns,pipeline,$(sed 's/^/bench_/; s/,/,bench_/g' "$out/header.csv" 2>/dev/null)" >"$csv.tmp"
start=$(date +%s)
while [ "$(date +%s)" -lt "$end" ]; do
    sleep "$interval"
    if ! kill -0 "$spid" 2>/dev/null; then
        echo "soak.sh: the server died" >&2
        status=1
        break
    fi
    rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$spid/status")
    stats=$(printf 'inspect server\r\n' | timeout 5 nc -q1 127.0.0.1 "$port" 2>/dev/null | tr -d '\r')
    clients=$(echo "$stats" | awk '$1 == "active-clients" { print $2 }')
    jobs=$(echo "$stats" | awk '$1 == "jobs" { print $2 }')
    echo "$(($(date +%s) - start)),$rss,${clients:-},${jobs:-},$(cat "$out/last.csv" 2>/dev/null)" >>"$csv.tmp"
done
wait "$bpid" "$rpid"
# The header, now that a bench run has written its own.
{
    echo "seconds,rss_kib,connections,jobs,workload,conns,pipeline,$(sed 's/^/bench_/; s/,/,bench_/g' "$out/header.csv")"
    tail -n +2 "$csv.tmp"
} >"$csv"
rm -f "$csv.tmp"
kill "$spid" 2>/dev/null
wait "$spid" || true
[ -s "$out/failures" ] && status=1 && cat "$out/failures" >&2

if command -v gnuplot >/dev/null; then
    p99=$(head -1 "$csv" | tr ',' '\n' | grep -n '^bench_all_p99_us$' | cut -d: -f1)
    gnuplot <<EOF
set terminal pngcairo size 900,500
set output "$out/soak.png"
set datafile separator ","
set key top left
set xlabel "minutes"
set ylabel "RSS (MiB)"
set y2label "p99 of the last bench run (ms)"
set y2tics
set ytics nomirror
plot "$csv" every ::1 using (\$1/60):(\$2/1024) with lines title "RSS", \
     "$csv" every ::1 using (\$1/60):(\$$p99/1000) axes x1y2 with lines title "p99"
EOF
fi
echo "soak: $csv"
exit "$status"
