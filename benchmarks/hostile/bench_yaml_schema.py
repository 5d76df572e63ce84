"""Benchmark: reading a very wide schema from YAML and from JSON, and a YAML alias bomb.

1. ``--columns`` (200,000) numeric columns written as one schema in ``.json`` and in
   ``.yaml`` (with ``Schema.to_file``); each is read back with ``Schema.from_file`` in a
   fresh process and timed (wall seconds, the best of ``--repeats``).
2. A billion-laughs YAML schema (``--levels`` of nine aliases each, 9**levels leaves if
   expanded): read with ``Schema.from_file`` in a fresh process under a memory cap
   (``--cap-mb``, RLIMIT_AS) and a timeout; reported: the exit, the first line of the
   answer, the wall time and the peak RSS (``ru_maxrss`` of the child).

Run: ``PYTHONPATH=src .venv/bin/python benchmarks/hostile/bench_yaml_schema.py``.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_READ = """
import sys, time
from ppdp.data.schema import Schema
t = time.perf_counter()
try:
    s = Schema.from_file(sys.argv[1])
    print(f"ok {len(s.columns)} columns")
except Exception as exc:
    print(f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
print(f"seconds {time.perf_counter() - t:.2f}")
"""


def _wide(folder: Path, columns: int) -> tuple[Path, Path]:
    from ppdp.data.schema import NumericColumn, Schema

    cols = [NumericColumn(name=f"c{i}", lower=0.0, upper=1.0) for i in range(columns)]
    schema = Schema(columns=cols)
    return schema.to_file(folder / "wide.json"), schema.to_file(folder / "wide.yaml")


def _bomb(folder: Path, levels: int) -> Path:
    lines = ['a0: &a0 ["lol"]']
    for i in range(1, levels + 1):
        refs = ", ".join([f"*a{i - 1}"] * 9)
        lines.append(f"a{i}: &a{i} [{refs}]")
    lines.append(f"columns: *a{levels}")
    path = folder / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _run(path: Path, *, cap_mb: int | None = None, timeout: float = 600) -> str:
    def limit() -> None:
        if cap_mb is not None:
            resource.setrlimit(resource.RLIMIT_AS, (cap_mb << 20, cap_mb << 20))

    start = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _READ, str(path)],
            capture_output=True, text=True, timeout=timeout, preexec_fn=limit,
        )  # fmt: skip
        tail = proc.stderr.strip().splitlines()[-1:]
        out = "; ".join(proc.stdout.strip().splitlines() + tail)
        status = f"exit {proc.returncode}"
    except subprocess.TimeoutExpired:
        out, status = f"still running after {timeout:.0f} s", "killed"
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return f"{status}, {wall:.2f} s wall, peak RSS of the largest child so far {peak:.0f} MB: {out}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--columns", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--levels", type=int, default=9)
    parser.add_argument("--cap-mb", type=int, default=2048)
    parser.add_argument("--bomb-timeout", type=float, default=120)
    parser.add_argument("--skip-wide", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        bomb = _bomb(folder, args.levels)  # first: ru_maxrss is the largest child so far
        print(f"alias bomb ({bomb.stat().st_size} bytes, 9**{args.levels} leaves expanded):")
        print("  " + _run(bomb, cap_mb=args.cap_mb, timeout=args.bomb_timeout))
        if args.skip_wide:
            return
        js, ym = _wide(folder, args.columns)
        for path in (js, ym):
            mb = path.stat().st_size / 1e6
            for _ in range(args.repeats):
                print(f"{path.suffix} ({args.columns:,} columns, {mb:.1f} MB): {_run(path)}")


if __name__ == "__main__":
    main()
