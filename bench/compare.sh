#!/bin/bash
# compare.sh - run the same workloads against workq-server and beanstalkd
# on this machine and print jobs/s side by side; with -F, workq-server's
# Workq protocol against its own Faktory listener instead.
#
# Usage: bench/compare.sh [-F] [-n JOBS] [-r RUNS] [-w WORKLOAD]... [-S SETUP]... [-o FILE]
#   -F        compare with workq-server's Faktory listener (workq-bench
#             --protocol faktory), not beanstalkd: both runs get a server
#             with -faktory-listen, one driven over each protocol
#   -n JOBS   jobs per run (default 100000)
#   -r RUNS   runs per workload and server; the median is shown (default 3)
#   -w SPEC   workq-bench arguments of one workload, e.g. "cycle -c 50 -P 16"
#             (repeatable; default: the four workloads of doc/benchmarks.md)
#   -S SETUP  "LABEL|WORKQ FLAGS|BEANSTALKD FLAGS": extra flags for each
#             server, @DIR standing for a fresh empty directory per run, e.g.
#             "always|-cmdlog-path @DIR -cmdlog-sync always|-b @DIR -f 0"
#             (repeatable: every workload runs under every setup, the runs
#             of all setups alternating; default: both in memory); with -F
#             the second flags are workq-server's for the Faktory runs
#   -o FILE   also write the medians to FILE, one line per workload:
#             spec<TAB>workq j/s<TAB>beanstalkd j/s<TAB>workq p99 us<TAB>beanstalkd p99 us
#             (spec followed by " [LABEL]" under a setup with a label; with
#             -F, Faktory's in beanstalkd's place)
#
# Finds the programs in this order:
#   workq-server: $WQ_SERVER, ../src/workq-server next to this script, PATH
#   workq-bench:  $WQ_BENCH, workq-bench next to this script, PATH
#   beanstalkd:   PATH (Debian: apt-get install beanstalkd); missing: exit 77
#                 (not needed with -F)
#
# Without -S both servers keep jobs in memory only (no command log, no
# binlog).  Each run gets a freshly started server on a free loopback port,
# and the runs of the two servers (and of the setups) alternate so that a
# noisy machine hurts all alike.
# Exit status: 0 if every run passed its checks, 1 if any failed, 77 if
# beanstalkd is not installed.
set -eu

jobs=100000
runs=3
specs=()
setups=()
outfile=
other=beanstalkd
while getopts Fn:r:w:S:o:h opt; do
    case $opt in
    F) other=faktory ;;
    n) jobs=$OPTARG ;;
    r) runs=$OPTARG ;;
    w) specs+=("$OPTARG") ;;
    S) setups+=("$OPTARG") ;;
    o) outfile=$OPTARG ;;
    *)
        sed -n '6,23p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
    esac
done
if [ ${#specs[@]} -eq 0 ]; then
    specs=("cycle -c 50" "cycle -c 50 -P 16" "add -c 50" "lease-complete -c 50")
fi
if [ ${#setups[@]} -eq 0 ]; then
    setups=("||")
fi
if [ -n "$outfile" ]; then
    : >"$outfile"
fi

here=$(cd "$(dirname "$0")" && pwd)

# First of: the environment variable's value, a file next to us, the PATH.
find_program() {
    local from_env=$1 beside=$2 name=$3
    if [ -n "$from_env" ]; then
        echo "$from_env"
    elif [ -x "$beside" ]; then
        echo "$beside"
    else
        command -v "$name" || true
    fi
}

server=$(find_program "${WQ_SERVER:-}" "$here/../src/workq-server" workq-server)
bench=$(find_program "${WQ_BENCH:-}" "$here/workq-bench" workq-bench)
if [ -z "$server" ] || [ ! -x "$server" ]; then
    echo "compare.sh: cannot find workq-server; set WQ_SERVER" >&2
    exit 1
fi
if [ -z "$bench" ] || [ ! -x "$bench" ]; then
    echo "compare.sh: cannot find workq-bench; set WQ_BENCH" >&2
    exit 1
fi
if [ "$other" = beanstalkd ] && ! command -v beanstalkd >/dev/null 2>&1; then
    echo "compare.sh: beanstalkd is not installed (Debian: apt-get install beanstalkd); skipping" >&2
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wq-compare.XXXXXX")
server_pid=

stop_server() {
    if [ -n "$server_pid" ]; then
        kill "$server_pid" 2>/dev/null || true
        wait "$server_pid" 2>/dev/null || true
        server_pid=
    fi
}
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    stop_server
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The words of a setup's flags, one a line, @DIR made a fresh empty
# directory.
setup_flags() {
    rm -rf "$tmp/data"
    mkdir "$tmp/data"
    local a
    # shellcheck disable=SC2086 # a list of flags
    for a in $1; do
        printf '%s\n' "${a//@DIR/$tmp/data}"
    done
}

# Start workq-server on port 0, with the flags $1, and read the port from
# its first line; with -F it has a Faktory listener too, on port 0, and
# $2 = faktory takes that port from its second line.  The file is emptied
# here first: the background shell truncates it only when it gets to run,
# and until then it still holds the last server's port.
start_workq() {
    local -a flags
    local want=1 prefix="workq-server listening on 127.0.0.1:"
    mapfile -t flags < <(setup_flags "$1")
    if [ "$other" = faktory ]; then
        flags+=(-faktory-listen 127.0.0.1:0)
    fi
    if [ "${2:-}" = faktory ]; then
        want=2 prefix="workq-server faktory listening on 127.0.0.1:"
    fi
    : >"$tmp/wq.out"
    "$server" -listen 127.0.0.1:0 "${flags[@]}" >"$tmp/wq.out" 2>"$tmp/wq.err" &
    server_pid=$!
    local _ line
    for _ in $(seq 100); do
        line=
        # only a whole line: a port cut short would be the wrong port
        if [ "$(wc -l <"$tmp/wq.out")" -ge "$want" ]; then
            line=$(sed -n "${want}p" "$tmp/wq.out")
        fi
        case $line in
        "$prefix"*)
            port=${line##*:}
            return 0
            ;;
        esac
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.05
    done
    echo "compare.sh: workq-server did not start:" >&2
    cat "$tmp/wq.err" >&2
    exit 1
}

# beanstalkd, with the flags $1, cannot report a port it picked, so try
# random high ports until one binds: beanstalkd exits at once when its port
# is taken.
start_beanstalkd() {
    local _ __
    local -a flags
    for _ in $(seq 20); do
        mapfile -t flags < <(setup_flags "$1")
        port=$((20000 + RANDOM % 40000))
        beanstalkd -l 127.0.0.1 -p "$port" "${flags[@]}" 2>"$tmp/bs.err" &
        server_pid=$!
        for __ in $(seq 40); do
            kill -0 "$server_pid" 2>/dev/null || break
            if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                sleep 0.05
                kill -0 "$server_pid" 2>/dev/null && return 0
                break
            fi
            sleep 0.05
        done
        stop_server
    done
    echo "compare.sh: beanstalkd did not start:" >&2
    cat "$tmp/bs.err" >&2
    exit 1
}

failed=0

# run_one PROTOCOL SERVER_FLAGS ARGS...: one run on a fresh server; prints
# "jobs_per_sec p99_us", or "FAIL FAIL" if the run reported errors.
run_one() {
    local proto=$1 server_flags=$2
    shift 2
    case $proto in
    workq | faktory) start_workq "$server_flags" "$proto" ;;
    *) start_beanstalkd "$server_flags" ;;
    esac
    if "$bench" --protocol "$proto" -p "$port" -n "$jobs" --timeout 600 --csv "$@" \
        >"$tmp/out.csv" 2>"$tmp/err.txt"; then
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i }
                 NR == 2 { print $col["jobs_per_sec"], $col["all_p99_us"] }' "$tmp/out.csv"
    else
        echo "compare.sh: $proto $* failed:" >&2
        cat "$tmp/err.txt" >&2
        echo "FAIL FAIL"
    fi
    stop_server
}

# The middle value of the numbers on stdin (FAIL if any run failed).
median() {
    sort -g | awk '{ v[NR] = $1 } /FAIL/ { bad = 1 }
                   END { if (bad || NR == 0) print "FAIL"; else print v[int((NR + 1) / 2)] }'
}

if [ "$other" = faktory ]; then
    short=faktory
    printf 'workq-server: %s, over the Workq and the Faktory protocol\n' "$server"
else
    short=bstalk
    printf 'workq-server: %s\nbeanstalkd:   %s\n' "$server" "$(command -v beanstalkd)"
fi
printf 'jobs %s, median of %s runs\n\n' "$jobs" "$runs"
printf '%-34s %12s %12s %7s %10s %10s\n' workload "workq j/s" "$short j/s" ratio \
    "workq p99" "$short p99"
printf '%-34s %12s %12s %7s %10s %10s\n' "" "" "" "" "(ms)" "(ms)"

# report ROW RESULTS_STEM: the medians of one workload under one setup.
report() {
    local row=$1 wq bs wq99 bs99 ratio
    wq=$(cut -d' ' -f1 "$2.workq" | median)
    bs=$(cut -d' ' -f1 "$2.$other" | median)
    wq99=$(cut -d' ' -f2 "$2.workq" | median)
    bs99=$(cut -d' ' -f2 "$2.$other" | median)
    if [ "$wq" = FAIL ] || [ "$bs" = FAIL ]; then
        failed=1
        ratio=-
    else
        if [ "$other" = faktory ]; then
            ratio=$(awk -v a="$wq" -v b="$bs" 'BEGIN { printf "%.2f", (a > 0 ? b / a : 0) }')
        else
            ratio=$(awk -v a="$wq" -v b="$bs" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')
        fi
    fi
    awk -v w="$row" -v a="$wq" -v b="$bs" -v r="$ratio" -v a99="$wq99" -v b99="$bs99" '
        function num(x, scale, fmt) { return x == "FAIL" ? x : sprintf(fmt, x / scale) }
        BEGIN { printf "%-34s %12s %12s %7s %10s %10s\n", w, num(a, 1, "%.0f"),
                num(b, 1, "%.0f"), r, num(a99, 1000, "%.3f"), num(b99, 1000, "%.3f") }'
    if [ -n "$outfile" ]; then
        printf '%s\t%s\t%s\t%s\t%s\n' "$row" "$wq" "$bs" "$wq99" "$bs99" >>"$outfile"
    fi
}

for spec in "${specs[@]}"; do
    # shellcheck disable=SC2086 # spec is a list of arguments
    set -- $spec
    workload=$1
    shift
    for k in "${!setups[@]}"; do
        : >"$tmp/res.$k.workq"
        : >"$tmp/res.$k.$other"
    done
    for _ in $(seq "$runs"); do
        for k in "${!setups[@]}"; do
            IFS='|' read -r _ wqflags bsflags <<<"${setups[$k]}"
            run_one workq "$wqflags" -t "$workload" "$@" >>"$tmp/res.$k.workq"
            run_one "$other" "$bsflags" -t "$workload" "$@" >>"$tmp/res.$k.$other"
        done
    done
    for k in "${!setups[@]}"; do
        label=${setups[$k]%%|*}
        report "$spec${label:+ [$label]}" "$tmp/res.$k"
    done
done

echo
if [ "$other" = faktory ]; then
    echo "ratio = Faktory protocol jobs/s / Workq protocol jobs/s (the same server)"
else
    echo "ratio = workq jobs/s / beanstalkd jobs/s (above 1: workq is faster)"
fi
exit "$failed"
