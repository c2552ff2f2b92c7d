"""``commwall sweep run|status`` and ``commwall query``: a small sweep end to end, bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from commwall.cli import app

runner = CliRunner()
ROOT = Path(__file__).parents[3]


def _spec(tmp_path: Path, extra: str = "") -> Path:
    spec = tmp_path / "nics.yaml"
    spec.write_text(
        f"name: nics\nbase: {ROOT / 'examples/llama3-8b-ddp-pcie.yaml'}\n"
        "axes:\n  cluster.nics_per_node: [1, 2]\n  job.dp: [64, 63]\n" + extra
    )
    return spec


def test_run_status_query_and_rerun(tmp_path: Path) -> None:
    spec, out = _spec(tmp_path), tmp_path / "out"
    result = runner.invoke(app, ["sweep", "run", str(spec), "--out", str(out), "--jobs", "1",
                                 "--json"])  # fmt: skip
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["points"], summary["ok"], summary["invalid"]) == (4, 2, 2)
    status = runner.invoke(app, ["sweep", "status", str(out), "--json"])
    assert json.loads(status.stdout)["status"] == {"ok": 2, "invalid": 2}
    sql = ('select "cluster.nics_per_node" as nics, step_time_s from points '
           "where status = 'ok' order by nics")  # fmt: skip
    rows = json.loads(runner.invoke(app, ["query", str(out), sql, "--json"]).stdout)
    assert [r["nics"] for r in rows] == [1, 2] and rows[1]["step_time_s"] <= rows[0]["step_time_s"]
    csv = runner.invoke(app, ["query", str(out), "select count(*) as n from points", "--csv"])
    assert csv.stdout == "n\n4\n"
    again = runner.invoke(app, ["sweep", "run", str(spec), "--out", str(out)])
    assert again.exit_code == 0 and "4 already stored, 0 computed now" in again.output


def test_dry_run_counts_constraint_skips(tmp_path: Path) -> None:
    spec = _spec(tmp_path, 'constraints:\n  - "`cluster.nics_per_node` > 1"\n')
    result = runner.invoke(app, ["sweep", "run", str(spec), "--dry-run", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"points": 4, "skipped": 2, "duplicates": 0, "stored": 0,
                                         "todo": 2, "axes": ["cluster.nics_per_node", "job.dp"]}  # fmt: skip


@pytest.mark.parametrize(
    ("args", "message"),
    [(["sweep", "run", "missing.yaml"], "cannot read the file"),
     (["sweep", "run", "SPEC", "--executor", "slurm"], "executor"),
     (["sweep", "status", "."], "not a sweep directory"),
     (["query", ".", "select 1"], "no stored points")],
)  # fmt: skip
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    args = [str(_spec(tmp_path)) if a == "SPEC" else a for a in args]
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output


def test_bad_sql_names_duckdbs_complaint(tmp_path: Path) -> None:
    out = tmp_path / "out"
    runner.invoke(app, ["sweep", "run", str(_spec(tmp_path)), "--out", str(out), "--jobs", "1"])
    result = runner.invoke(app, ["query", str(out), "select nope from points"])
    assert result.exit_code == 2 and "SQL: Binder Error" in result.output


def _hashes(folder: Path) -> dict[str, str]:
    import hashlib

    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}  # fmt: skip


def test_query_is_read_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Hostile queries change no byte under the sweep folder and write nowhere (issue 19)."""
    out = tmp_path / "out"
    runner.invoke(app, ["sweep", "run", str(_spec(tmp_path)), "--out", str(out), "--jobs", "1"])
    before = _hashes(out)
    stored = next(p for p in (out / "points").glob("*.parquet"))
    target = tmp_path / "written.csv"
    monkeypatch.chdir(tmp_path)  # where DuckDB would put its .tmp/ spill folder
    for sql in (
        f"copy (select 1) to '{target}'",
        f"copy (select 0.001 as step_time_s) to '{stored}' (format parquet)",
        f"copy points to '{out / 'points' / 'extra.parquet'}' (format parquet)",
        f"select * from read_parquet('{stored}')",
        "select * from read_csv('/etc/hostname')",
        f"attach '{tmp_path / 'x.duckdb'}' as d",
        "set enable_external_access = true",
        "set allowed_directories = ['/']",
        "set temp_directory = '.tmp'",
        "install httpfs",
        " ",
    ):
        result = runner.invoke(app, ["query", str(out), sql])
        assert result.exit_code == 2 and "Traceback" not in result.output, (sql, result.output)
    assert _hashes(out) == before
    assert not target.exists() and not (tmp_path / ".tmp").exists()
    ok = runner.invoke(app, ["query", str(out), "select count(*) from points"])
    assert ok.exit_code == 0 and "4" in ok.output


def test_a_query_that_runs_too_long_is_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from commwall.sweep import query

    out = tmp_path / "out"
    runner.invoke(app, ["sweep", "run", str(_spec(tmp_path)), "--out", str(out), "--jobs", "1"])
    monkeypatch.setattr(query, "TIME_LIMIT_S", 0.5)
    result = runner.invoke(app, ["query", str(out), "select count(*) from range(100000000000)"])
    assert result.exit_code == 2 and "stopped after 0.5 s" in result.output, result.output


def test_markup_in_names_is_printed_as_text(tmp_path: Path) -> None:
    spec = tmp_path / "m.yaml"
    spec.write_text(f"name: 'fabric [/bold] [red]x[/red]'\nbase: {ROOT / 'examples/llama3-8b-ddp-pcie.yaml'}\n"
                    "axes:\n  cluster.nics_per_node: [1]\n")  # fmt: skip
    result = runner.invoke(app, ["sweep", "run", str(spec), "--out", str(tmp_path / "o"),
                                 "--jobs", "1"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "fabric [/bold] [red]x[/red]" in result.output


def test_a_changed_point_is_named_by_every_reader_and_recomputed(tmp_path: Path) -> None:
    """A stored point overwritten behind the sweep's back (another tool, a hand edit) is caught
    by its content hash in status, best, report and query, and ``sweep run`` recomputes it;
    other files in points/ are not counted as points (issue 19, row 13)."""
    from commwall.io.parquet import read_parquet, write_parquet

    spec, out = _spec(tmp_path), tmp_path / "out"
    runner.invoke(app, ["sweep", "run", str(spec), "--out", str(out), "--jobs", "1"])
    victim = min(
        p for p in (out / "points").glob("*.parquet") if "step_time_s" in read_parquet(p)[0][0]
    )
    rows, meta = read_parquet(victim)
    honest = rows[0]["step_time_s"]
    # what `COPY ... TO` from an unsealed query did: same name, a better step time, the old hash
    write_parquet(victim, [{**rows[0], "step_time_s": 0.001}], metadata=meta)
    (out / "points" / "notes.txt").write_text("mine")
    write_parquet(out / "points" / "extra.parquet", [{"step_time_s": 0.0}])

    status = runner.invoke(app, ["sweep", "status", str(out), "--json"])
    data = json.loads(status.stdout)
    assert data["stored"] == 3 and data["remaining"] == 1, data
    assert (
        victim.name in data["damaged"] and "does not match its hash" in data["damaged"][victim.name]
    )
    assert sorted(data["extra_files"]) == ["extra.parquet", "notes.txt"]
    text = runner.invoke(app, ["sweep", "status", str(out)])
    assert "1 damaged point file" in text.output and "2 other file(s)" in text.output
    for args in (["sweep", "best", str(out)], ["query", str(out), "select min(step_time_s) from points"],
                 ["report", str(out), "-o", str(tmp_path / "r.html")]):  # fmt: skip
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert victim.name in result.output and "Traceback" not in result.output, result.output

    again = runner.invoke(app, ["sweep", "run", str(spec), "--out", str(out), "--json"])
    assert json.loads(again.stdout)["computed"] == 1
    assert read_parquet(victim)[0][0]["step_time_s"] == honest
    best = runner.invoke(app, ["sweep", "best", str(out), "--json"])
    assert best.exit_code == 0, best.output
