#!/usr/bin/env python3
"""Mixed echo load with cancellations, for scripts/soak.sh.

    python3 scripts/soak_load.py --addr 127.0.0.1:PORT --secs 60 \
        --warmup 10 --pid SERVER_PID

Runs for --secs seconds on one asyncio loop:

- steady clients (--steady, default 16) that keep one connection each and
  do round trips of random sizes (64 B to 32 KiB), checking every echo byte
  for byte; now and then one half-closes, reads the rest to EOF and
  reconnects;
- churning clients (--churn, default 16) that connect, maybe do a round
  trip or two, then send part of a message (up to 64 KiB) and disconnect
  abruptly mid-message: half of the time with a reset (SO_LINGER 0), half
  of the time with a plain close that leaves the echo unread.

With --pid it samples the server's VmRSS after --warmup seconds and again
just before the load stops (the same load both times). The last line has
the form

    soak rss_warm_kib W rss_end_kib E round_trips R cancelled C mismatches M errors X

for the calling script. Exits 1 if an echo differed from what was sent or a
steady client failed.
"""

import argparse
import asyncio
import random
import socket
import struct
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Stats:
    def __init__(self):
        self.round_trips = 0
        self.bytes = 0
        self.cancelled = 0
        self.resets = 0
        self.mismatches = 0
        self.errors = 0
        self.latencies = []


async def round_trip(reader, writer, msg, stats):
    start = time.perf_counter()
    writer.write(msg)
    await asyncio.wait_for(writer.drain(), 10)
    back = await asyncio.wait_for(reader.readexactly(len(msg)), 10)
    stats.latencies.append(time.perf_counter() - start)
    if back != msg:
        stats.mismatches += 1
        print(f"soak_load: echo mismatch ({len(msg)} bytes)", file=sys.stderr)
    stats.round_trips += 1
    stats.bytes += len(msg)


async def steady(i, host, port, deadline, stats):
    rng = random.Random(i)
    while time.monotonic() < deadline:
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
            writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for _ in range(rng.randint(50, 500)):
                if time.monotonic() >= deadline:
                    break
                size = rng.choice([64, 64, 64, 512, 4096, 32 * 1024])
                await round_trip(reader, writer, rng.randbytes(size), stats)
                await asyncio.sleep(rng.random() * 0.005)
            # An orderly end: the last message, a half-close, EOF.
            last = rng.randbytes(rng.randint(1, 4096))
            writer.write(last)
            writer.write_eof()
            rest = await asyncio.wait_for(reader.read(-1), 10)
            if rest != last:
                stats.mismatches += 1
                print("soak_load: echo mismatch after a half-close", file=sys.stderr)
            writer.close()
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
            stats.errors += 1
            print(f"soak_load: steady client {i}: {e!r}", file=sys.stderr)
            await asyncio.sleep(0.1)


async def churner(i, host, port, deadline, stats):
    rng = random.Random(10_000 + i)
    while time.monotonic() < deadline:
        writer = None
        try:
            reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 10)
            for _ in range(rng.randint(0, 2)):
                await round_trip(reader, writer, rng.randbytes(rng.randint(1, 2048)), stats)
            # Part of a message, then gone.
            part = rng.randbytes(rng.randint(1, 64 * 1024))
            writer.write(part)
            try:
                await asyncio.wait_for(writer.drain(), 0.2)
            except asyncio.TimeoutError:
                pass
            if rng.random() < 0.3:
                try:
                    await asyncio.wait_for(reader.read(rng.randint(1, 1024)), 0.05)
                except asyncio.TimeoutError:
                    pass
            await asyncio.sleep(rng.random() * 0.02)
            if rng.random() < 0.5:
                sock = writer.get_extra_info("socket")
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                stats.resets += 1
            writer.transport.abort()
            stats.cancelled += 1
        except (OSError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
            stats.errors += 1
            print(f"soak_load: churning client {i}: {e!r}", file=sys.stderr)
            if writer is not None:
                writer.transport.abort()
            await asyncio.sleep(0.1)
        await asyncio.sleep(rng.random() * 0.01)


async def sample_rss(pid, warmup, secs, start, result):
    await asyncio.sleep(max(0.0, start + warmup - time.monotonic()))
    result["warm"] = rss_kib(pid)
    print(f"soak_load: VmRSS after {warmup:.0f} s warm-up: {result['warm']} KiB", file=sys.stderr)
    # Sample every few seconds for the log; keep the last one, taken
    # shortly before the load stops.
    while True:
        left = start + secs - 0.5 - time.monotonic()
        if left <= 0:
            break
        await asyncio.sleep(min(5.0, left))
        result["end"] = rss_kib(pid)
        print(
            f"soak_load: VmRSS at {time.monotonic() - start:.0f} s: {result['end']} KiB",
            file=sys.stderr,
        )


async def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addr", required=True)
    ap.add_argument("--secs", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=10)
    ap.add_argument("--steady", type=int, default=16)
    ap.add_argument("--churn", type=int, default=16)
    ap.add_argument("--pid", type=int)
    args = ap.parse_args()
    host, port = args.addr.rsplit(":", 1)
    port = int(port)
    if args.pid is not None and args.warmup >= args.secs - 1:
        ap.error("--warmup must end at least a second before --secs")

    stats = Stats()
    start = time.monotonic()
    deadline = start + args.secs
    tasks = [steady(i, host, port, deadline, stats) for i in range(args.steady)]
    tasks += [churner(i, host, port, deadline, stats) for i in range(args.churn)]
    rss = {"warm": 0, "end": 0}
    if args.pid is not None:
        tasks.append(sample_rss(args.pid, args.warmup, args.secs, start, rss))
    await asyncio.gather(*tasks)

    lat = sorted(stats.latencies) or [0.0]
    p = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))] * 1000
    elapsed = time.monotonic() - start
    print(
        f"soak_load: {elapsed:.1f} s: {stats.round_trips} round trips "
        f"({stats.round_trips / elapsed:.0f}/s, {stats.bytes} bytes), "
        f"latency p50 {p(0.5):.2f} ms p99 {p(0.99):.2f} ms max {lat[-1] * 1000:.2f} ms; "
        f"{stats.cancelled} clients cancelled mid-message ({stats.resets} with a reset); "
        f"{stats.mismatches} mismatches, {stats.errors} client errors",
        file=sys.stderr,
    )
    print(
        f"soak rss_warm_kib {rss['warm']} rss_end_kib {rss['end']} "
        f"round_trips {stats.round_trips} cancelled {stats.cancelled} "
        f"mismatches {stats.mismatches} errors {stats.errors}"
    )
    return 1 if stats.mismatches or stats.errors else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
