#!/usr/bin/env python3
"""inspect_stall.py - how long one inspect command holds workq-server's
event loop, and what another client waits meanwhile.

Fills a running server (Workq protocol) with either many queues of one job
each (--queues N) or one queue of many jobs (--jobs N), then:
  1. times the inspect command alone, one round trip at a time (median of
     --runs): until the reply's first byte, which the server sends once
     the command is done, and until the whole reply is read and parsed;
  2. sends --pipeline copies of it on one connection at once and, while
     their replies come back, probes from a second connection with
     `inspect queue none` one round trip after another: the probe's worst
     round trip is what another client waited.

  workq-server -listen 127.0.0.1:9922 &
  bench/inspect_stall.py --queues 1000000 --pipeline 20 'inspect queues 0 1'
  bench/inspect_stall.py --jobs 200000 --pipeline 50 'inspect jobs big 199000 1000'

Use a fresh server for each fill.  Python's own overhead is in the round
trips (tens of microseconds); the stalls measured here are milliseconds.
"""
import argparse
import socket
import statistics
import threading
import time
import uuid


def connect(addr):
    host, port = addr.rsplit(":", 1)
    s = socket.create_connection((host, int(port)))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Reader:
    """Reads whole replies (a status line, and for +OK <n> its n records)."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""
        self.pos = 0  # what is read of buf

    def more(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise EOFError("server closed the connection")
        self.buf = self.buf[self.pos :] + chunk
        self.pos = 0

    def line(self):
        end = self.buf.find(b"\r\n", self.pos)
        while end < 0:
            self.more()
            end = self.buf.find(b"\r\n", self.pos)
        line, self.pos = self.buf[self.pos : end], end + 2
        return line

    def exact(self, n):
        while len(self.buf) - self.pos < n:
            self.more()
        data, self.pos = self.buf[self.pos : self.pos + n], self.pos + n
        return data

    def reply(self):
        """One reply to a Workq command other than lease/run/result."""
        first = self.line()
        if not first.startswith(b"+OK "):
            return first
        for _ in range(int(first[4:])):
            k = int(self.line().rsplit(b" ", 1)[1])
            size = None
            for _ in range(k):
                if size is not None:  # "payload " and the raw bytes, then CRLF
                    self.exact(len(b"payload ") + size + 2)
                    size = None
                    continue
                ln = self.line()
                if ln.startswith(b"payload-size "):
                    size = int(ln[13:])
        return first


def fill(sock, names, per_name, chunk=5000):
    """add per_name jobs of a 16-byte payload to each of names, pipelined."""
    r = Reader(sock)
    cmds = [(n, i) for n in names for i in range(per_name)]
    for at in range(0, len(cmds), chunk):
        part = cmds[at : at + chunk]
        out = b"".join(
            b"add %s %s 60000 3600000 16\r\n0123456789abcdef\r\n" % (str(uuid.uuid4()).encode(), n)
            for n, _ in part
        )
        sock.sendall(out)
        for _ in part:
            rep = r.line()
            if rep != b"+OK":
                raise SystemExit("fill: %r" % rep)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", help="the inspect command to time")
    ap.add_argument("--addr", default="127.0.0.1:9922")
    ap.add_argument("--queues", type=int, default=0, help="fill N queues q<k>, one job each")
    ap.add_argument("--jobs", type=int, default=0, help="fill N jobs in the queue big")
    ap.add_argument("--pipeline", type=int, default=20)
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()

    s = connect(a.addr)
    t0 = time.monotonic()
    if a.queues:
        fill(s, [b"q%d" % k for k in range(a.queues)], 1)
    if a.jobs:
        fill(s, [b"big"], a.jobs)
    if a.queues or a.jobs:
        print("filled in %.1f s" % (time.monotonic() - t0))

    cmd = a.command.encode() + b"\r\n"
    r = Reader(s)
    times, firsts = [], []
    for _ in range(a.runs):
        t = time.monotonic()
        s.sendall(cmd)
        s.recv(1, socket.MSG_PEEK)  # the server answers once the command is done
        firsts.append((time.monotonic() - t) * 1e3)
        first = r.reply()
        times.append((time.monotonic() - t) * 1e3)
    print("%s: %s, first byte after %.2f ms (min %.2f, max %.2f), whole reply read after %.2f ms,"
          " medians of %d" % (a.command, first.decode(), statistics.median(firsts), min(firsts),
                              max(firsts), statistics.median(times), a.runs))

    probe = connect(a.addr)
    pr = Reader(probe)
    done = threading.Event()

    def drain():
        for _ in range(a.pipeline):
            r.reply()
        done.set()

    th = threading.Thread(target=drain)
    t = time.monotonic()
    s.sendall(cmd * a.pipeline)
    th.start()
    worst, probes = 0.0, 0
    while not done.is_set():
        p = time.monotonic()
        probe.sendall(b"inspect queue none\r\n")
        pr.line()
        worst = max(worst, (time.monotonic() - p) * 1e3)
        probes += 1
    th.join()
    total = (time.monotonic() - t) * 1e3
    print("%d pipelined: all replies in %.1f ms; another client's worst wait %.1f ms (%d probes)"
          % (a.pipeline, total, worst, probes))


if __name__ == "__main__":
    main()
