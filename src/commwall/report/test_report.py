"""The report: every input kind, what each page holds, escaping, reproducible bytes, PNGs."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import pytest

from commwall.report import build_report, load_input, render_html, write_pngs, write_report
from commwall.report.fixtures import EXAMPLE, FAULTS, HOSTILE, make_sweep
from commwall.report.fmt import held_bytes
from commwall.report.inputs import ReportError, ResultInput, load_result_json, simulate_scenario
from commwall.report.model import Bar, Chart, Report, Section
from commwall.report.plotly_render import figure, script_json
from commwall.report.single import timeline_bars, utilisation_grid
from commwall.report.sweep import front_ids

pytest.importorskip("plotly")


class _Tags(HTMLParser):
    """Counts start tags and keeps script bodies."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.scripts: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        self._in_script = tag == "script"

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def _tags(text: str) -> _Tags:
    parser = _Tags()
    parser.feed(text)
    return parser


@pytest.fixture(scope="module")
def example() -> ResultInput:
    source = load_input(EXAMPLE)
    assert isinstance(source, ResultInput)
    return source


@pytest.fixture(scope="module")
def sweep_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_sweep(tmp_path_factory.mktemp("sweep"))


def _chart(report: Report, chart_id: str) -> Chart:
    return next(c for c in report.charts() if c.id == chart_id)


def test_scenario_report_has_every_part(example: ResultInput) -> None:
    report = build_report(example)
    assert [s.id for s in report.sections] == [
        "breakdown", "timeline", "collectives", "fabric", "power", "memory",
    ]  # fmt: skip
    ids = {c.id for c in report.charts()}
    assert {"breakdown", "timeline", "busbw-dp", "topology", "power", "cost", "memory"} <= ids
    keys = dict(report.key_numbers)
    assert keys["waiting on communication"].endswith("%") and keys["network cost (estimate)"]
    # the job line says how a bf16 job's gradients travel, as `commwall run` does
    assert any("bf16 (gradients reduced in fp32), ZeRO-" in line for line in report.subtitle)
    # the DP communicator's costliest collective (ZeRO's gather or scatter of the same shards):
    # every algorithm x protocol that runs on 8 domains x 8 ranks
    curves = example.curves[0]
    assert curves.op in ("all_gather", "reduce_scatter") and curves.nranks == 64
    assert "ring/Simple" in curves.curves and all(name for name, _ in curves.tuner)
    text = render_html(report)
    tags = _tags(text)
    assert tags.tags["script"] == 2  # plotly.js, then the figures
    assert text.count('class="chart"') == len(report.charts())
    assert "cdn" not in tags.scripts[1].lower() and "https://" not in tags.scripts[1]


def test_held_bytes_names_what_is_not_the_training_type() -> None:
    assert held_bytes({"precision": "bf16", "grad_reduce_bytes": 4, "param_bytes": 2}) == (
        " (gradients reduced in fp32)"
    )
    assert held_bytes({"precision": "fp8", "grad_reduce_bytes": 4, "param_bytes": 1}) == (
        " (gradients reduced in fp32, FP8 weights)"
    )
    assert held_bytes({"precision": "tf32", "grad_reduce_bytes": 4, "param_bytes": 4}) == ""
    assert held_bytes({"precision": "fp16", "grad_reduce_bytes": 2}) == ""


def test_result_json_draws_what_the_scenario_draws(example: ResultInput, tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps(example.data, indent=2))
    saved = load_result_json(path)
    live, again = build_report(example), build_report(saved)
    for chart_id in ("breakdown", "timeline", "topology", "power", "memory"):
        assert figure(_chart(live, chart_id)) == figure(_chart(again, chart_id))
    assert "busbw-calls" in {c.id for c in again.charts()}  # no cluster: the step's own calls


def test_faults_section(tmp_path: Path) -> None:
    report = build_report(load_input(FAULTS))
    faults = next(s for s in report.sections if s.id == "faults")
    ids = {b.id for b in faults.blocks if isinstance(b, Chart)}
    assert ids == {
        "faults-step-time", "faults-contributions", "faults-interruptions", "faults-goodput",
    }  # fmt: skip
    assert "bit errors" in render_html(report)


def test_flow_engine_link_utilisation() -> None:
    report = build_report(load_input(EXAMPLE, engine="flow"))
    heat = _chart(report, "link-utilisation")
    assert heat.body.z and max(max(row) for row in heat.body.z) <= 1.0 + 1e-9  # type: ignore[union-attr]


def test_sweep_report(sweep_dir: Path) -> None:
    report = build_report(load_input(sweep_dir))
    assert report.kind == "sweep"
    ids = [c.id for c in report.charts()]
    assert ids == ["pareto-network", "pareto-power", "sensitivity-0", "sensitivity-1"]
    keys = dict(report.key_numbers)
    assert keys["points"] == "4 ok, 1 invalid, 1 error"
    best = next(s for s in report.sections if s.id == "best").blocks[0]
    assert len(best.rows) == 4 and "cluster.nodes" in best.headers  # type: ignore[union-attr]
    failed = next(s for s in report.sections if s.id == "failures").blocks[0]
    reasons = " ".join(row[2] for row in failed.rows)  # type: ignore[union-attr]
    assert "job.dp" in reasons and "RuntimeError: boom" in reasons
    with pytest.raises(ReportError, match="metric: 'nope'"):
        build_report(load_input(sweep_dir), metric="nope")
    by_tokens = build_report(load_input(sweep_dir), metric="tokens_per_s")
    assert "tokens/s against cluster.nodes" in _chart(by_tokens, "sensitivity-0").title


def test_front_ids() -> None:
    ok = [
        {"status": "ok", "step_time_s": t, "power_w": p}
        for t, p in [(3.0, 1.0), (1.0, 3.0), (2.0, 2.0), (3.0, 3.0)]
    ]
    assert front_ids(ok, "power_w") == {id(r) for r in ok[:3]}
    assert front_ids([], "power_w") == set()


def test_timeline_is_capped_and_covers_the_step() -> None:
    phases = [
        {"name": f"p{i}", "category": ("compute", "tp")[i % 2], "stream": f"s{i % 3}.compute",
         "start_s": i * 1e-3, "end_s": i * 1e-3 + 9e-4, "repeat": 1}
        for i in range(6000)
    ]  # fmt: skip
    streams, bars, slot = timeline_bars(phases, max_bars=300)
    assert streams == ("s0.compute", "s1.compute", "s2.compute")
    assert len(bars) <= 300 and slot > 0
    assert min(b[1] for b in bars) == 0.0 and max(b[2] for b in bars) == pytest.approx(5.9999)
    few = timeline_bars(phases[:30])
    assert len(few[1]) == 30 and few[2] == 0.0


def test_utilisation_grid_is_exact() -> None:
    series = {"link": ([0.0, 1.0, 3.0, 4.0], [1.0, 0.5, 0.0])}  # busy, half, idle
    names, centres, z = utilisation_grid(series, bins=4)
    assert names == ("link",) and centres == (0.5, 1.5, 2.5, 3.5)
    assert z == ((1.0, 0.5, 0.5, 0.0),)


def test_hostile_strings_stay_text(tmp_path: Path) -> None:
    scenario = EXAMPLE.read_text().replace(
        'name: "Llama-3-8B pure DP',
        f"description: {json.dumps(HOSTILE)}\nname: {json.dumps(HOSTILE)} #",
    )
    path = tmp_path / "hostile.yaml"
    path.write_text(scenario)
    text = render_html(build_report(load_input(path)))
    tags = _tags(text)
    assert tags.tags["script"] == 2 and "img" not in tags.tags
    assert "<script>alert" not in text and "<img" not in text
    assert "&lt;/script&gt;&lt;script&gt;alert(1)" in text  # shown, as text
    sweep = render_html(build_report(load_input(make_sweep(tmp_path / "sw", name=HOSTILE))))
    assert _tags(sweep).tags["script"] == 2 and "<script>alert" not in sweep


def test_script_json_cannot_close_the_script() -> None:
    text = script_json({"a": "</script><!-- \u2028 & >"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><!-- \u2028 & >"}


def test_same_input_same_bytes(sweep_dir: Path, tmp_path: Path) -> None:
    a, b = build_report(load_input(EXAMPLE)), build_report(load_input(EXAMPLE))
    assert render_html(a) == render_html(b)
    s1 = render_html(build_report(load_input(sweep_dir)))
    assert s1 == render_html(build_report(load_input(sweep_dir)))
    stamped = render_html(build_report(load_input(sweep_dir), generated="2025-01-01"))
    assert "on 2025-01-01" in stamped and "on 2025-01-01" not in s1


def test_pngs(example: ResultInput, tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    import matplotlib.image as mpimg

    report = build_report(example)
    files = write_pngs(report, tmp_path / "one")
    assert [f.name for f in files] == [f"{c.id}.png" for c in report.charts()]
    for f in files:
        pixels = mpimg.imread(f)
        assert (
            pixels.shape[0] > 200 and len({tuple(p) for p in pixels[::7, ::7].reshape(-1, 4)}) > 5
        )
    again = write_pngs(report, tmp_path / "two")
    assert [f.read_bytes() for f in files] == [f.read_bytes() for f in again]


def test_write_report_is_atomic_and_whole(example: ResultInput, tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    path, pngs = write_report(build_report(example), out, png=tmp_path / "png")
    assert path == out and pngs and out.read_text().rstrip().endswith("</html>")
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_bad_inputs(tmp_path: Path) -> None:
    with pytest.raises(ReportError, match="no such file"):
        load_input(tmp_path / "missing.yaml")
    (tmp_path / "x.json").write_text('{"step_time_s": 1}')
    with pytest.raises(ReportError, match="not a commwall result"):
        load_input(tmp_path / "x.json")
    (tmp_path / "y.json").write_text("[1, 2")
    with pytest.raises(ReportError, match="not JSON"):
        load_input(tmp_path / "y.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ReportError, match="no sweep points"):
        load_input(tmp_path / "empty")
    with pytest.raises(ReportError, match="engine: 'packet' is not allowed"):
        load_input(EXAMPLE, engine="packet")
    chart = Chart("c", "C", Bar(("a",), (1.0,)))
    twice = Report("r", (), (), (Section("s", "S", (chart, chart)),))
    with pytest.raises(ReportError, match="chart ids must be unique"):
        render_html(twice)


def test_simulate_scenario_names_the_origin() -> None:
    from commwall.scenario import ScenarioError, parse_scenario

    sc = parse_scenario({"cluster": {"preset": "dgx-h100", "nodes": 1}, "job": {"dp": 3}})
    with pytest.raises(ScenarioError) as info:
        simulate_scenario(sc, "mine.yaml")
    assert info.value.origin == "mine.yaml"


def test_a_replica_all_reduce_is_drawn_on_the_replicas_group() -> None:
    """Hybrid sharding (job.dp_replicate): the replica all-reduce runs on its own group, the
    replicas across nodes, whose shape its curves take (not the shard group's, which may have
    as many ranks inside one node)."""
    from commwall.cluster import build_cluster
    from commwall.report.busbw import communicator_curves
    from commwall.scenario import parse_scenario
    from commwall.workload.simulate import simulate

    sc = parse_scenario(
        {"cluster": {"preset": "dgx-h100", "nodes": 2}, "job": {"model": "llama3-8b", "tp": 1,
         "global_batch": 16, "seq_len": 2048, "zero_stage": 2, "dp_replicate": 4}}
    )  # fmt: skip
    report = simulate(sc)
    dp = max((c for c in report.collectives if c.category == "dp"), key=lambda c: c.total)
    curves = {c.category: c for c in communicator_curves(sc, build_cluster(sc.cluster), report)}
    # the costliest: the replicas' all-reduce, 4 ranks at stride 4 over both nodes, where the
    # shard group's 4 consecutive ranks sit in one
    assert dp.name == "DP bucket replica all-reduce" and dp.nranks == 4
    assert (curves["dp"].nranks, curves["dp"].n_domains) == (4, 2)
