"""`specbed demo`: the shipped example equals the embedded sweep; a small demo runs, reuses, recomputes."""

from __future__ import annotations

from analysis.model import SimModel
from analysis.sweepfile import expand, parse_sweep
from specbed import demo
from tests.analysis.conftest import REPO


def test_sweeps_demo_toml_is_the_embedded_demo():
    assert (REPO / "sweeps" / "demo.toml").read_text() == demo.DEMO_SWEEP
    cells = expand(parse_sweep(demo.DEMO_SWEEP), SimModel())
    assert len(cells) == 56 and len({c.series for c in cells}) == 7 and len({c.point for c in cells}) == 8
    assert {c.config["cost"]["table"] for c in cells} == {"h200-v4flash"}
    assert {c.config["workload"]["domain"] for c in cells} == {"mix"}


def test_small_demo_runs_reuses_and_recomputes(tmp_path, monkeypatch, capsys):
    small = demo.DEMO_SWEEP
    small = small.replace("[8, 16, 32, 64, 128, 192, 256, 384]", "[8, 64]")
    small = small.replace("[320, 320, 320, 384, 640, 960, 1280, 1920]", "[24, 96]")
    small = small.replace("output_tokens = 384", "output_tokens = 32")
    monkeypatch.setattr(demo, "DEMO_SWEEP", small)
    out = tmp_path / "demo"
    assert demo.main(["--out", str(out), "--jobs", "1", "--quiet"]) == 0
    text = capsys.readouterr().out
    assert (
        "14 cells: 0 reused, 14 simulated, 0 failed" in text and "iso-SLO gain" in text and "MTP-1 *" in text
    )
    assert (out / "pareto.png").exists() and "## Gains against `MTP-1`" in (out / "summary.md").read_text()
    assert demo.main(["--out", str(out), "--jobs", "1", "--quiet"]) == 0
    assert "14 reused, 0 simulated" in capsys.readouterr().out
    assert demo.main(["--out", str(out), "--jobs", "1", "--quiet", "--fresh"]) == 0
    assert "0 reused, 14 simulated" in capsys.readouterr().out
    monkeypatch.setattr(demo, "DEMO_SWEEP", small.replace("[8, 64]", "[8, 32]"))  # an older demo: replaced
    assert demo.main(["--out", str(out), "--jobs", "1", "--quiet"]) == 0
    assert "0 reused, 14 simulated" in capsys.readouterr().out
