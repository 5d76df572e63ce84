"""``ppdp note`` / :func:`ppdp.evaluate.release_note`: one note for a release of every publisher.

Each publisher of the registry releases a 1,000-row sample of Adult (seeded noise); the private
table is then deleted, and the note is written from what is left: the release and its
guarantee file. Every note must name the method, ε (and δ where nonzero), the neighbouring
relation in words, say that it reads no private data, and give an accuracy table whose numbers
follow from the noise scales the guarantee file states.
"""

from __future__ import annotations

import json
import math
import re

import pytest

from ppdp.cli import main
from ppdp.datasets import load_adult
from ppdp.evaluate import release_note
from ppdp.registry import PUBLISHERS

#: The flags each publisher needs besides --epsilon (a new publisher must be added here).
EXTRA = {
    "pca": ["--components", "3"],
    "lda-synth": [],
    "lda-projection": ["--delta", "1e-6", "--class-counts", "CLASS_COUNTS"],
    "laplace": [],
    "exponential": [],
    "synth": [],
    "groupby": ["--by", "sex,race", "--means", "age,hours-per-week"],
}


@pytest.fixture(scope="module")
def releases(tmp_path_factory):
    root = tmp_path_factory.mktemp("note")
    df, schema = load_adult()
    df = df.sample(1000, random_state=0).reset_index(drop=True)
    data, schema_path = root / "private.csv", root / "schema.json"
    df.to_csv(data, index=False)
    schema.to_file(schema_path)
    counts = ",".join(str(int(n)) for n in df["income"].value_counts()[list(schema.label.classes)])
    out = {}
    for name in PUBLISHERS.names():
        assert name in EXTRA, f"publisher {name!r} is new: add its flags to EXTRA"
        extra = [counts if a == "CLASS_COUNTS" else a for a in EXTRA[name]]
        path = root / f"{name}.csv"
        argv = ["-q", "publish", name, str(data), "--schema", str(schema_path),
                "--epsilon", "1", "--seed", "1", "-o", str(path), *extra]  # fmt: skip
        assert main(argv) == 0, name
        out[name] = path
    data.unlink()  # the notes are written without the private table
    return out, schema_path


@pytest.mark.parametrize("name", sorted(EXTRA))
def test_a_note_for_a_release_of_each_publisher(releases, name, tmp_path, capsys):
    paths, schema = releases
    path = paths[name]
    side = json.loads(path.with_name(path.name + ".guarantee.json").read_text())
    g = side["guarantee"]
    md = tmp_path / "note.md"
    assert main(["note", str(path), "-o", str(md), "--schema", str(schema)]) == 0
    assert "reads no private data" in capsys.readouterr().out
    text = md.read_text(encoding="utf-8")
    assert f"ppdp publish {name}" in text
    assert "it reads no private data" in text
    assert f"ε = {g['epsilon']:g}" in text
    if g["delta"]:
        assert f"δ = {g['delta']:g}" in text
    assert "replacing any one record by another" in text  # every publisher is replace-one
    assert "seeded" in text  # an experiment, and said so
    table = re.findall(r"^\| (?!quantity|---)(.+?) \| (.+?) \| ± (.+?) \|$", text, re.M)
    assert table, text
    html = tmp_path / "note.html"
    assert main(["note", str(path), "-o", str(html)]) == 0
    assert "<script" not in html.read_text(encoding="utf-8")


def test_the_accuracy_follows_from_the_noise_law(releases):
    paths, _ = releases
    side = json.loads(paths["synth"].with_name("synth.csv.guarantee.json").read_text())
    sigma = side["guarantee"]["details"]["noise_scale"]
    note = release_note(paths["synth"])
    first = note.accuracy[0]
    assert first["ci95"] == f"± {1.959964 * sigma:.3g}"
    gb = release_note(paths["groupby"]).accuracy[0]  # counts: discrete Laplace, scale 2/ε_count
    d = json.loads(paths["groupby"].with_name("groupby.csv.guarantee.json").read_text())
    scale = 2 / d["guarantee"]["details"]["epsilon_count"]
    assert gb["ci95"] == f"± {math.log(20) * scale:.3g}"


def test_bad_input_writes_nothing(releases, tmp_path, capsys):
    paths, _ = releases
    out = tmp_path / "note.txt"
    assert main(["note", str(paths["synth"]), "-o", str(out)]) == 2
    assert ".md, .html or .htm" in capsys.readouterr().err and not out.exists()
    lone = tmp_path / "lone.csv"
    lone.write_text("a\n1\n")
    assert main(["note", str(lone), "-o", str(tmp_path / "n.md")]) == 2
    assert "no guarantee file" in capsys.readouterr().err
    assert not (tmp_path / "n.md").exists()


def test_publish_writes_the_note_beside_the_release(tmp_path, capsys):
    df, schema = load_adult()
    data, schema_path = tmp_path / "p.csv", tmp_path / "s.json"
    df.sample(500, random_state=0).to_csv(data, index=False)
    schema.to_file(schema_path)
    out = tmp_path / "rel.csv"
    argv = ["publish", "laplace", str(data), "--schema", str(schema_path), "--epsilon", "1",
            "--seed", "1", "-o", str(out), "--note"]  # fmt: skip
    assert main(argv) == 0
    note = tmp_path / "rel.csv.note.md"
    assert "wrote the release note" in capsys.readouterr().out
    assert "ppdp publish laplace" in note.read_text(encoding="utf-8")
    # a second run without --force is refused before anything is released
    before = out.stat().st_mtime_ns
    argv[argv.index(str(out))] = str(out)
    assert main([*argv[:-1], "--note"]) == 2
    assert out.stat().st_mtime_ns == before


def test_a_group_means_error_in_the_note_is_the_dry_runs(releases):
    """The note states each mean's expected error as the dry run does
    (:func:`group_mean_errors`, the sum's and the count's noise and the bounds), from the
    guarantee file alone: at a bound it is above the sum's noise alone (the broken
    variant, which the midpoint's figure equals)."""
    from ppdp.accounting.plan import group_mean_errors
    from ppdp.data import Schema
    from ppdp.publish import GroupByPublisher

    paths, schema_path = releases
    pub = GroupByPublisher(1.0, Schema.from_file(schema_path), by=["sex", "race"],
                           means=["age", "hours-per-week"])  # fmt: skip
    expected = group_mean_errors(pub.planned_charges())
    assert set(expected) == {"age", "hours-per-week"}
    note = release_note(paths["groupby"])
    stated = {a["quantity"]: a["noise"] for a in note.accuracy}
    for column, errors in expected.items():
        for n, low, high in errors:
            noise = stated[f"the mean of {column} in a group of {n:,} rows"]
            figures = re.findall(r"deviation\) (\S+) to (\S+)$", noise)
            assert figures == [(f"{low:.3g}", f"{high:.3g}")], noise
            e = next(c.details["mean_error"] for c in pub.planned_charges()
                     if c.details.get("mean_error", {}).get("column") == column)  # fmt: skip
            assert low == pytest.approx(e["sum_sd"] / n) and high > 1.01 * low  # the count's
    text = note.to_markdown()
    assert "the mean of age in a group of 1,000 rows" in text
