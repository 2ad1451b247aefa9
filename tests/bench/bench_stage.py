"""Staging benchmark: `k3deploy stage` against `cp -r` and against the disk's own sequential bandwidth, with and
without verification, on a generated multi-file snapshot in a temporary folder it removes. Prints ratios only.

The snapshot is shaped like a checkpoint: equal shards, one short last shard, and small JSON files. Before every
run the source's and the last copy's pages are dropped from the page cache (posix_fadvise DONTNEED on those files
alone), so each reads from the disk; every copy ends with its data on the disk (stage fsyncs each file; `cp -r` is
followed by `sync` of its files). The disk's bandwidth is `dd` with direct I/O, read and write, measured the same
run on the same filesystem. Each way runs `--repeat` times, interleaved; the median is kept. Verification's cost is
given twice: in time (what a tray sees when the copy is CPU-bound) and in CPU seconds (user + system of the stage
process), which holds on a machine other jobs load; the load average at the end says how loaded it was.

    python -m tests.bench.bench_stage [--gib 3] [--shards 8] [--repeat 3] [--dir DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tests.conftest import REPO_ROOT, cli_env

MIB = 1024 * 1024


def make_snapshot(folder: Path, total: int, shards: int) -> None:
    """Shards of random bytes (incompressible, as quantised weights nearly are) and a few JSON files."""
    folder.mkdir(parents=True)
    shard = total // shards
    sizes = [shard] * (shards - 1) + [total - shard * (shards - 1) - shard // 3]
    rng = random.Random(0)
    for i, size in enumerate(sizes, 1):
        with (folder / f"model-{i:05d}-of-{shards:05d}.safetensors").open("wb") as handle:
            for left in range(size, 0, -8 * MIB):
                handle.write(rng.randbytes(min(8 * MIB, left)))
    index = {"weight_map": {f"layer.{i}": f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)}}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    (folder / "config.json").write_text(json.dumps({"architectures": ["Bench"], "hidden_size": 16}))


def drop_cache(*folders: Path) -> None:
    """Drop these files' pages from the page cache (theirs only: the rest of the machine keeps its cache)."""
    for folder in folders:
        for path in folder.rglob("*") if folder.exists() else ():
            if path.is_file():
                fd = os.open(path, os.O_RDONLY)
                try:
                    os.fdatasync(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)


def run(cmd: list[str], timeout: float = 3600) -> None:
    """Run a command to completion; its failure ends the benchmark."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=cli_env(), cwd=REPO_ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{cmd[:4]} exited {done.returncode}:\n{done.stderr[-2000:]}")


def dd_rate(work: Path, total: int) -> tuple[float, float]:
    """Sequential write and read, bytes/s, with direct I/O (8 MiB blocks), on the snapshot's filesystem."""
    probe, count = work / "dd.probe", max(1, total // (8 * MIB))
    started = time.monotonic()
    run(["dd", "if=/dev/zero", f"of={probe}", "bs=8M", f"count={count}", "oflag=direct", "conv=fsync"])
    write = count * 8 * MIB / (time.monotonic() - started)
    started = time.monotonic()
    run(["dd", f"if={probe}", "of=/dev/null", "bs=8M", "iflag=direct"])
    read = count * 8 * MIB / (time.monotonic() - started)
    probe.unlink()
    return write, read


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(source: Path, dest: Path, copy: Callable[[], None]) -> tuple[float, float]:
    """Seconds and CPU seconds (user + system of the commands it ran) of one copy from a cold source into a fresh
    DEST (removed afterwards). The CPU figure holds on a machine other jobs load, where the wall time does not."""
    drop_cache(source)
    started, cpu = time.monotonic(), _children_cpu()
    copy()
    seconds, cpu = time.monotonic() - started, _children_cpu() - cpu
    shutil.rmtree(dest)
    return seconds, cpu


def main() -> None:
    """Generate, measure, print the ratios, remove everything."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=3.0)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary folder goes (default: TMPDIR)")
    args = parser.parse_args()
    total = int(args.gib * 1024 * MIB)
    with tempfile.TemporaryDirectory(prefix="k3deploy-bench-stage-", dir=args.dir) as scratch:
        work = Path(scratch)
        source, dest = work / "snapshot", work / "dest"
        make_snapshot(source, total, args.shards)
        stage = [sys.executable, "-m", "k3deploy", "stage", str(source), str(dest), "--no-prune"]
        copied = [p for p in sorted(source.rglob("*")) if p.is_file()]
        ways: dict[str, Callable[[], None]] = {
            "cp -r": lambda: (run(["cp", "-r", str(source), str(dest)]), run(["sync", *map(str, dest.rglob("*"))])),
            "stage": lambda: run(stage),
            "stage --no-verify": lambda: run([*stage, "--no-verify"]),
        }
        seconds: dict[str, list[float]] = {way: [] for way in ways}
        cpu: dict[str, list[float]] = {way: [] for way in ways}
        disk_write, disk_read = [], []
        for _ in range(args.repeat):
            write, read = dd_rate(work, total)
            disk_write.append(write)
            disk_read.append(read)
            for way, copy in ways.items():
                wall, used = timed(source, dest, copy)
                seconds[way].append(wall)
                cpu[way].append(used)
        median = {way: statistics.median(values) for way, values in seconds.items()}
        size = sum(p.stat().st_size for p in copied)
        # Reading and writing the same disk: a copy cannot beat 1 / (1/read + 1/write) of it.
        write, read = statistics.median(disk_write), statistics.median(disk_read)
        disk_copy = 1 / (1 / write + 1 / read)
    print(f"snapshot: {len(copied)} files, {args.gib:g} GiB; median of {args.repeat} cold runs each")
    for way in ("stage", "stage --no-verify"):
        print(f"{way} / cp -r (time of cp over time of stage): {median['cp -r'] / median[way]:.2f}x")
        print(f"{way} / dd copy bound (1/(1/read + 1/write), direct I/O): {size / median[way] / disk_copy:.2f}x")
    print(f"cp -r / dd copy bound: {size / median['cp -r'] / disk_copy:.2f}x")
    print(
        f"verification's cost (stage over stage --no-verify, time): {median['stage'] / median['stage --no-verify'] - 1:+.1%}"
    )
    used = {way: statistics.median(values) for way, values in cpu.items()}
    print(
        f"verification's CPU (stage over stage --no-verify, user + system): {used['stage'] / used['stage --no-verify']:.2f}x"
    )
    print(f"load average (1 min) at the end, on {os.cpu_count()} CPUs: {os.getloadavg()[0]:.1f}")
    print(f"dd direct read / dd direct write: {read / write:.2f}x")


if __name__ == "__main__":
    main()
