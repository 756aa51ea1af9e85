#!/bin/bash
# plot.sh - throughput against the number of connections, workq-server vs
# beanstalkd, as a gnuplot PNG (doc/throughput-vs-connections.png).
#
# Usage: bench/plot.sh [-n JOBS] [-r RUNS] [-o PNG]
#   -n JOBS   jobs per run (default 100000)
#   -r RUNS   runs per point and server; the median is plotted (default 3)
#   -o PNG    the picture to write (default doc/throughput-vs-connections.png
#             beside this script)
#
# Runs the `cycle` workload (half the connections add, half lease and
# complete) at 2 to 256 connections, without and with a pipeline of 16,
# through compare.sh (so the same servers and programs are found the same
# way), then draws jobs/s against connections on a log scale.  Needs
# gnuplot (Debian: apt-get install gnuplot-nox) and beanstalkd.
set -eu

jobs=100000
runs=3
here=$(cd "$(dirname "$0")" && pwd)
png=$here/../doc/throughput-vs-connections.png
while getopts n:r:o:h opt; do
    case $opt in
    n) jobs=$OPTARG ;;
    r) runs=$OPTARG ;;
    o) png=$OPTARG ;;
    *)
        sed -n '5,9p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
    esac
done
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "plot.sh: gnuplot is not installed (Debian: apt-get install gnuplot-nox)" >&2
    exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/wq-plot.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

conns="2 4 8 16 32 64 128 256"
args=()
for p in 1 16; do
    for c in $conns; do
        args+=(-w "cycle -c $c -P $p")
    done
done
bash "$here/compare.sh" -n "$jobs" -r "$runs" -o "$tmp/medians.tsv" "${args[@]}"

# One data file per pipeline depth: connections, workq j/s, beanstalkd j/s.
for p in 1 16; do
    awk -F'\t' -v p="$p" '{ split($1, w, " "); if (w[5] == p) print w[3], $2, $3 }' \
        "$tmp/medians.tsv" >"$tmp/p$p.dat"
done

gnuplot <<GNUPLOT
set terminal pngcairo size 900,560 font "sans,11"
set output "$png"
set title "cycle workload, $jobs jobs, median of $runs runs ($(nproc) cores, $(date -u +%Y-%m-%d))"
set xlabel "connections (half add, half lease + complete)"
set ylabel "completed jobs per second"
set logscale x 2
set xtics (2, 4, 8, 16, 32, 64, 128, 256)
set xrange [1.6:320]
set yrange [0:*]
set format y "%.0f"
set key top left
set grid
plot "$tmp/p1.dat" using 1:2 with linespoints lw 2 pt 7 title "workq-server", \
     "$tmp/p1.dat" using 1:3 with linespoints lw 2 pt 5 title "beanstalkd", \
     "$tmp/p16.dat" using 1:2 with linespoints lw 2 pt 7 dt 2 title "workq-server, pipeline 16", \
     "$tmp/p16.dat" using 1:3 with linespoints lw 2 pt 5 dt 2 title "beanstalkd, pipeline 16"
GNUPLOT
echo "plot.sh: wrote $png"
