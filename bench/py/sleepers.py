"""The sleepers workload on asyncio, for comparison with the Rust runtimes.

    python3 bench/py/sleepers.py --n N

N tasks each `await asyncio.sleep(1)` and return random.randint(0, 100);
all are gathered. Prints one line in the same format as the Rust
`sleepers` binary (see bench/src/bin/sleepers.rs).
"""

import argparse
import asyncio
import random
import time

max_maps = 0


def sample_maps():
    global max_maps
    with open("/proc/self/maps") as f:
        max_maps = max(max_maps, sum(1 for _ in f))


def status_kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


async def generate_random(i, n):
    if i == n - 1:
        sample_maps()
    await asyncio.sleep(1)
    return random.randint(0, 100)


async def main(n):
    start = time.perf_counter()
    tasks = [asyncio.create_task(generate_random(i, n)) for i in range(n)]
    spawn = time.perf_counter() - start
    sample_maps()
    results = await asyncio.gather(*tasks)
    wall = time.perf_counter() - start
    return wall, spawn, sum(results)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, required=True)
    n = p.parse_args().n
    wall, spawn, checksum = asyncio.run(main(n))
    sample_maps()
    print(
        f"sleepers runtime=asyncio n={n} wall_s={wall:.6f} spawn_s={spawn:.6f} "
        f"hwm_kb={status_kb('VmHWM')} maps={max_maps} checksum={checksum}"
    )
