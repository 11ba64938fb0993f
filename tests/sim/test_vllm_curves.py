"""`specbed curves from-vllm` (write, merge with --into, bad input) and arbitrary drafters: any name present
in a curves file, any subset of domains, `drafter.kind` pricing (free = no draft cost)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sim.config import DrafterConfig
from sim.curves import curve_tau, load_curves
from specbed.cli import main as specbed
from specsched.io.errors import InputError

RATES = [0.62, 0.4402, 0.3257, 0.2476, 0.1931]  # vLLM's unconditional per-position rates
TAU = 1 + sum(RATES)


def bench_json(tmp_path, rates=RATES, drafts=50_000, name="bench.json"):
    path = tmp_path / name
    path.write_text(
        json.dumps({"spec_decode_num_drafts": drafts, "spec_decode_per_position_acceptance_rates": rates})
    )
    return str(path)


def test_from_vllm_writes_a_curve_whose_tau_is_one_plus_the_rates(tmp_path, capsys):
    out = tmp_path / "c.json"
    assert specbed(["curves", "from-vllm", bench_json(tmp_path), "--drafter", "ngram", "--domain", "chat",
                    "--out", str(out)]) == 0  # fmt: skip
    text = capsys.readouterr().out
    assert f"{TAU:.3f}" in text
    curves = load_curves(out)
    assert set(curves.curves) == {"ngram"} and set(curves.curves["ngram"]) == {"chat"}
    assert curve_tau(curves.get("ngram", "chat")) == pytest.approx(TAU, abs=1e-5)
    with pytest.raises(InputError, match=r"curves\.ngram\.math"):
        curves.get("ngram", "math")


def test_into_merges_and_keeps_the_rest(tmp_path):
    into = tmp_path / "c.json"
    assert specbed(["curves", "from-vllm", bench_json(tmp_path), "--drafter", "ngram", "--domain", "chat",
                    "--out", str(into)]) == 0  # fmt: skip
    half = [r / 2 for r in RATES[:3]]
    assert specbed(["curves", "from-vllm", bench_json(tmp_path, half, name="b2.json"), "--drafter", "suffix",
                    "--domain", "code", "--into", str(into)]) == 0  # fmt: skip
    assert specbed(["curves", "from-vllm", bench_json(tmp_path, half, name="b3.json"), "--drafter", "ngram",
                    "--domain", "math", "--into", str(into)]) == 0  # fmt: skip
    curves = load_curves(into)
    assert set(curves.curves) == {"ngram", "suffix"}
    assert set(curves.curves["ngram"]) == {"chat", "math"}
    assert curve_tau(curves.get("ngram", "chat")) == pytest.approx(TAU, abs=1e-5)
    assert curve_tau(curves.get("suffix", "code")) == pytest.approx(1 + sum(half), abs=1e-5)
    # a built-in name takes one domain from vLLM and keeps its built-in curves for the others
    assert specbed(["curves", "from-vllm", bench_json(tmp_path), "--drafter", "eagle3", "--domain", "chat",
                    "--into", str(into)]) == 0  # fmt: skip
    curves = load_curves(into)
    assert curves.get("eagle3", "math").size == 7 and curves.get("eagle3", "chat").size == 5


def test_from_vllm_bad_input_is_one_line_and_keeps_the_file(tmp_path, capsys, monkeypatch):
    into = tmp_path / "c.json"
    assert specbed(["curves", "from-vllm", bench_json(tmp_path), "--drafter", "ngram", "--domain", "chat",
                    "--out", str(into)]) == 0  # fmt: skip
    before = into.read_text()
    capsys.readouterr()
    cases = [
        ([bench_json(tmp_path, drafts=0, name="z.json")], "z.json", "spec_decode_num_drafts"),
        ([bench_json(tmp_path, [0.5, 0.6], name="r.json")], "r.json", "rates[1]"),
        ([bench_json(tmp_path, name="ok.json"), "--drafter", "none"], "--drafter", "none"),
        ([bench_json(tmp_path, name="ok.json"), "--domain", "poetry"], "--domain", "poetry"),
    ]
    for extra, where, what in cases:
        args = ["curves", "from-vllm", *extra]
        args += [] if "--drafter" in extra else ["--drafter", "ngram"]
        args += [] if "--domain" in extra else ["--domain", "chat"]
        assert specbed([*args, "--into", str(into)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and where in err and what in err, err
        assert into.read_text() == before
    ok = str(tmp_path / "ok.json")
    monkeypatch.chdir(tmp_path)
    assert specbed(["curves", "from-vllm", ok, "--drafter", "x", "--domain", "chat"]) == 0
    assert load_curves(tmp_path / "curves.json").get("x", "chat").size == len(RATES)
    capsys.readouterr()
    assert specbed(["curves", "from-vllm", ok, "--drafter", "x", "--domain", "chat"]) == 2  # exists now
    assert "--out" in capsys.readouterr().err
    assert specbed(["curves", "nope"]) == 2


def test_drafter_kind_config():
    assert DrafterConfig(name="dflash").effective_kind == "parallel"
    assert DrafterConfig(name="eagle3").effective_layers == 1
    assert DrafterConfig(name="ngram", kind="free", curves="c.json").effective_kind == "free"
    with pytest.raises(InputError, match="drafter.kind"):
        DrafterConfig(name="ngram", curves="c.json")
    with pytest.raises(InputError, match="drafter.name.*curves"):
        DrafterConfig(name="ngram", kind="free")
    with pytest.raises(InputError, match="drafter.kind"):
        DrafterConfig(name="dspark", kind="magic")


def test_custom_drafter_runs_priced_by_kind(tmp_path, capsys):
    curves = tmp_path / "c.json"
    assert specbed(["curves", "from-vllm", bench_json(tmp_path), "--drafter", "ngram", "--domain", "chat",
                    "--out", str(curves)]) == 0  # fmt: skip
    sets = ["drafter.name=ngram", "drafter.gamma=5", f"drafter.curves={curves}", "workload.domain=chat",
            "workload.num_requests=40", "workload.rate=20", "policy.name=fixed", "policy.k=5",
            "acceptance.sts_samples=256"]  # fmt: skip
    summaries = {}
    for kind in ("free", "parallel"):
        out = tmp_path / kind
        args = ["run", *(x for s in [*sets, f"drafter.kind={kind}"] for x in ("--set", s))]
        assert specbed([*args, "--out", str(out), "--quiet"]) == 0
        summaries[kind] = json.loads((out / "summary.json").read_text())
    assert summaries["free"]["draft_s_mean"] == 0.0 < summaries["parallel"]["draft_s_mean"]
    assert np.isfinite(summaries["free"]["tau_mean"])
    # a domain the file does not give this drafter: one line naming the curves file and field
    capsys.readouterr()
    bad = [x for s in [*sets, "drafter.kind=free", "workload.domain=math"] for x in ("--set", s)]
    assert specbed(["run", *bad, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "c.json" in err and "curves.ngram.math" in err
