"""Staging benchmark: `k3deploy stage` against `cp -r` and against the disk's own sequential bandwidth, with and
without verification, on a generated multi-file snapshot in a temporary folder it removes. Prints ratios only.

The snapshot is shaped like a checkpoint: equal shards, one short last shard, and small JSON files, with the
sha256 record the prefetch writes for it (so `--no-verify` copies without hashing, as it does on a tray). Before
every run the source's pages are dropped from the page cache (posix_fadvise DONTNEED on those files alone), so each
reads from the disk; every copy ends with its data on the disk (stage fsyncs each file; `cp -r` is followed by
`sync` of its files). The disk's figure is `dd` with direct I/O (one stream, 8 MiB blocks), write then read,
measured at the start of each round on the same filesystem; a copy reads and writes the same disk, so at dd's
rates it takes 1 / (1/read + 1/write): the "dd copy bound". (Copies with several requests in flight can pass it,
as a disk's one-stream rate is not its parallel one.)

A machine other jobs load moves every figure from one minute to the next, so each round runs every way once, in
an order that rotates from round to round, and each ratio is taken within its round (a way's rate over that
round's `dd` bound, `cp -r`'s time over the way's, `stage` over `stage --no-verify`); the median over the rounds
and their spread (min-max) are printed. Verification's cost is given in CPU seconds too (user + system of the
stage process), which holds on a loaded machine where the time does not. `stage`'s figures are of the whole
command (the interpreter's start included, as `cp -r`'s are); "copy alone" figures are its own seconds (its
summary's, the rate its marker records), which a snapshot of 1.5 TB makes the same thing. Each round also times
sha256 of 256 MiB on one thread of the bench itself: the CPU the machine leaves it, which says whether a verified
copy could keep up with the disk.

    python -m tests.bench.bench_stage [--gib 3] [--shards 8] [--repeat 5] [--dir DIR] [--compare-with CHECKOUT]

`--compare-with` also runs the `stage` of another checkout of k3deploy (its folder first on PYTHONPATH), verified
and not, in the same rounds: how a change to the copier is measured on a loaded machine.
"""

from __future__ import annotations

import argparse
import hashlib
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
#: The revision the generated snapshot's record names.
REVISION = "b" * 40


def make_snapshot(folder: Path, total: int, shards: int) -> Path:
    """Shards of random bytes (incompressible, as quantised weights nearly are), a few JSON files, and the sha256
    record the prefetch would write for them (beside `folder`); the record's path."""
    folder.mkdir(parents=True)
    shard = total // shards
    sizes = [shard] * (shards - 1) + [total - shard * (shards - 1) - shard // 3]
    rng = random.Random(0)
    files = {}
    for i, size in enumerate(sizes, 1):
        name, digest = f"model-{i:05d}-of-{shards:05d}.safetensors", hashlib.sha256()
        with (folder / name).open("wb") as handle:
            for left in range(size, 0, -8 * MIB):
                block = rng.randbytes(min(8 * MIB, left))
                digest.update(block)
                handle.write(block)
        files[name] = {"size": size, "sha256": digest.hexdigest()}
    index = {"weight_map": {f"layer.{i}": f"model-{i:05d}-of-{shards:05d}.safetensors" for i in range(1, shards + 1)}}
    small = {
        "model.safetensors.index.json": json.dumps(index).encode(),
        "config.json": json.dumps({"architectures": ["Bench"], "hidden_size": 16}).encode(),
    }
    for name, data in small.items():
        (folder / name).write_bytes(data)
        files[name] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    record = folder.parent / "snapshot.sha256.json"
    record.write_text(
        json.dumps(
            {"format": 1, "generator": "k3deploy", "repo": "bench/snapshot", "revision": REVISION, "files": files}
        )
    )
    return record


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


def run(cmd: list[str], timeout: float = 3600, checkout: Path = REPO_ROOT) -> str:
    """Run a command to completion, with `checkout`'s k3deploy (its folder is the working directory, which
    `python -m` puts first on the path, and first on PYTHONPATH); its stdout. Its failure ends the benchmark."""
    env = cli_env({"PYTHONPATH": str(checkout)})
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=checkout)
    if done.returncode != 0:
        raise SystemExit(f"{cmd[:4]} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done.stdout


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


def hash_rate(block: bytes, times: int = 4) -> float:
    """Bytes/s one thread of this process hashes with sha256 now: the CPU the machine leaves, since verifying
    needs the hash to keep up with the disk."""
    digest, started = hashlib.sha256(), time.monotonic()
    for _ in range(times):
        digest.update(block)
    return len(block) * times / (time.monotonic() - started)


def _children_cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def timed(source: Path, dest: Path, copy: Callable[[], float | None]) -> tuple[float, float | None, float]:
    """Seconds of one copy from a cold source into a fresh DEST (removed afterwards), the seconds the copy itself
    reported (stage's summary; None for cp), and the CPU seconds (user + system) of the commands it ran."""
    drop_cache(source)
    started, cpu = time.monotonic(), _children_cpu()
    inner = copy()
    seconds, cpu = time.monotonic() - started, _children_cpu() - cpu
    shutil.rmtree(dest)
    return seconds, inner, cpu


def spread(values: list[float], form: str = ".2f", suffix: str = "x") -> str:
    """The median and the range of per-round figures."""
    median = statistics.median(values)
    return f"{median:{form}}{suffix} [{min(values):{form}}..{max(values):{form}}{suffix}]"


def ways_for(
    source: Path, dest: Path, record: Path, compare_with: Path | None
) -> dict[str, Callable[[], float | None]]:
    """Each way of copying SOURCE to DEST, by its printed name; each returns the seconds the copy reported."""
    stage = [sys.executable, "-m", "k3deploy", "stage", str(source), str(dest), "--record", str(record)]
    stage += ["--no-prune", "-o", "json"]

    def staged(argv: list[str], checkout: Path = REPO_ROOT) -> Callable[[], float | None]:
        return lambda: float(json.loads(run(argv, checkout=checkout))["seconds"])

    def cp() -> None:
        run(["cp", "-r", str(source), str(dest)])
        run(["sync", *map(str, dest.rglob("*"))])

    ways: dict[str, Callable[[], float | None]] = {
        "cp -r": cp,
        "stage": staged(stage),
        "stage --no-verify": staged([*stage, "--no-verify"]),
    }
    if compare_with is not None:
        other = compare_with.resolve()
        ways["other stage"] = staged(stage, other)
        ways["other stage --no-verify"] = staged([*stage, "--no-verify"], other)
    return ways


def main() -> None:
    """Generate, measure, print the ratios, remove everything."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=float, default=3.0)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="where the temporary folder goes (default: TMPDIR)")
    parser.add_argument("--compare-with", type=Path, default=None, help="another k3deploy checkout to run as well")
    args = parser.parse_args()
    total = int(args.gib * 1024 * MIB)
    with tempfile.TemporaryDirectory(prefix="k3deploy-bench-stage-", dir=args.dir) as scratch:
        work = Path(scratch).resolve()
        source, dest = work / "snapshot", work / "dest"
        record = make_snapshot(source, total, args.shards)
        copied = [p for p in sorted(source.rglob("*")) if p.is_file()]
        size = sum(p.stat().st_size for p in copied)
        ways = ways_for(source, dest, record, args.compare_with)
        names = list(ways)
        figures: dict[str, dict[str, list[float]]] = {way: {} for way in names}
        loads, hashing, block = [], [], random.Random(1).randbytes(64 * MIB)
        for round_ in range(args.repeat):
            loads.append(os.getloadavg()[0])
            hashing.append(hash_rate(block) / 1e6)
            write, read = dd_rate(work, total)
            bound = 1 / (1 / write + 1 / read)
            runs = {}
            for way in names[round_ % len(names) :] + names[: round_ % len(names)]:
                runs[way] = timed(source, dest, ways[way])
            for way, (took, inner, cpu) in runs.items():
                got = figures[way]
                got.setdefault("dd", []).append(size / took / bound)
                got.setdefault("cp", []).append(runs["cp -r"][0] / took)
                got.setdefault("cpu", []).append(cpu / (size / (1024 * MIB)))
                if inner is not None:
                    got.setdefault("copy dd", []).append(size / inner / bound)
                plain = runs.get(f"{way} --no-verify")
                if plain is not None and inner is not None and plain[1] is not None:
                    got.setdefault("verify", []).append(100 * (took / plain[0] - 1))
                    got.setdefault("copy verify", []).append(100 * (inner / plain[1] - 1))
            print(
                f"round {round_ + 1}: load {loads[-1]:.1f}, sha256 {hashing[-1]:,.0f} MB/s on one thread, "
                f"dd copy bound {bound / 1e6:,.0f} MB/s; "
                + "; ".join(f"{way} {figures[way]['dd'][-1]:.2f}x" for way in names)
                + " of the dd copy bound",
                flush=True,
            )
    print()
    print(f"snapshot: {len(copied)} files, {args.gib:g} GiB; {args.repeat} rounds, each way once per round, cold page")
    print(
        f"cache; per-round figures as median [min..max]; 1-min load average at the rounds' starts {spread(loads, '.1f', '')}"
    )
    print(f"on {os.cpu_count()} CPUs; sha256 on one thread of the bench, per round: {spread(hashing, ',.0f', ' MB/s')}")
    for way in names:
        got = figures[way]
        line = f"{way}: {spread(got['dd'])} of the dd copy bound"
        if "copy dd" in got:
            line += f" (copy alone {spread(got['copy dd'])})"
        print(f"{line}; {spread(got['cp'])} of cp -r's rate; {spread(got['cpu'], '.2f', ' CPU-s')} per GiB")
    for way in names:
        if "verify" in figures[way]:
            got = figures[way]
            print(
                f"verification's cost, {way} over {way} --no-verify: {spread(got['verify'], '+.1f', ' %')} in time "
                f"(copy alone {spread(got['copy verify'], '+.1f', ' %')})"
            )


if __name__ == "__main__":
    main()
