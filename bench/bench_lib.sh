# bench_lib.sh - what the peer benchmarks (hero_redis.sh, norfab_bench.sh)
# share, sourced by them: a free port, stopping the server started as
# $pid, its CPU time, and a median.  Not a program of its own.

# A free loopback port.
free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# Stop the server $pid and forget it.
stop() {
    kill "$pid"
    wait "$pid" 2>/dev/null
    pid=""
}

# The server's CPU time so far, in clock ticks (utime + stime).
cpu_ticks() {
    sed 's/^.*) //' "/proc/$pid/stat" | awk '{print $12 + $13}'
}

# The same in nanoseconds: the time on a CPU of each of its threads.
cpu_ns() {
    cat /proc/"$pid"/task/*/schedstat | awk '{t += $1} END {printf "%.0f", t}'
}

# The median of the numbers on standard input, one a line.
median() { sort -g | awk '{a[NR]=$1} END{print NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
