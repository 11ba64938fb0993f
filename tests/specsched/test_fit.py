"""Measured-data readers, the roofline fit, FIT.json and `specbed cost fit|check` (tiny, fast)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import specsched as S
from specbed.cli import main as specbed
from specsched import fit as F
from specsched.measured import Points, read_measured, write_steps

DATA = Path(S.__file__).parent / "data"
SPLITWISE = DATA / "llama2-70b_h100.csv"
TRUE = {"c0": 90e-6, "eta_bw": 0.8, "eta_f": 0.6, "link_bw": 80e9, "hop_latency": 10e-6}
#: a fit file may carry a per-request term within its bound (not fitted: specsched.fit)
WITH_REQUEST = dict(TRUE, request_s=1.2e-5)


def _synthetic(n_out: int = 0, seed: int = 0) -> Points:
    """Decode and prefill steps of llama2-70b on H100 at TP 1–8, timed by the model itself."""
    rows = []
    for tp in (1, 2, 4, 8):
        for bs in (1, 4, 16, 64, 256):
            rows.append(("decode", tp, bs, bs, bs * 900.0))
        for tokens in (256, 2048, 8192, 32768):
            rows.append(("prefill", tp, 1, tokens, float(tokens)))
    phase, tp, req, tok, ctx = map(np.array, zip(*rows))
    pts = Points(
        phase,
        tp.astype(np.int64),
        req.astype(np.int64),
        tok.astype(np.int64),
        ctx,
        np.ones(len(rows)),
        np.array([f"syn:{i}" for i in range(len(rows))]),
    )
    secs = F.predict(pts, "llama2-70b", "h100", TRUE)
    if n_out:
        idx = np.random.default_rng(seed).choice(len(rows), n_out, replace=False)
        secs[idx] *= 2.0
    return Points(pts.phase, pts.tp, pts.requests, pts.tokens, pts.context, secs, pts.source)


def test_fit_recovers_known_knobs():
    knobs, outlier = F.fit(_synthetic(), "llama2-70b", "h100")
    assert not outlier.any()
    for k, v in TRUE.items():
        assert knobs[k] == pytest.approx(v, rel=0.01), k


def test_fit_with_outliers_stays_within_2pct_and_flags_them():
    pts = _synthetic()
    n_out = max(1, round(0.05 * len(pts)))
    bad = _synthetic(n_out=n_out)
    knobs, outlier = F.fit(bad, "llama2-70b", "h100")
    assert outlier.sum() == n_out
    clean = F.predict(pts, "llama2-70b", "h100", TRUE)
    got = F.predict(pts, "llama2-70b", "h100", knobs)
    assert np.max(np.abs(got / clean - 1)) < 0.02


def test_splitwise_reader_and_where():
    pts = read_measured([SPLITWISE], ["tensor_parallel=4", "phase=decode"])
    assert len(pts) == 105 and set(pts.tp) == {4} and set(pts.phase) == {"decode"}
    assert np.all(pts.tokens == pts.requests)
    first = read_measured([SPLITWISE], ["tp=2", "batch_size=1", "prompt_size=512", "token_size=128"])
    dec = first.take(first.phase == "decode")
    assert dec.context[0] == pytest.approx(512 + 64) and dec.seconds[0] == pytest.approx(0.03697, rel=1e-3)


def test_step_csv_roundtrip_and_vllm_json(tmp_path):
    rows = [{"phase": "draft", "tp": 1, "requests": 4, "tokens": 28, "context_tokens": 400, "seconds": 0.002}]
    write_steps(tmp_path / "steps.csv", rows)
    pts = read_measured([tmp_path / "steps.csv"])
    assert pts.phase[0] == "draft" and pts.tokens[0] == 28 and pts.context[0] == 400
    doc = {"batch_stats": {"1": {"0": 6.87, "3": 9.41}, "16": {"0": 7.3}}, "tp": 2}
    (tmp_path / "v.json").write_text(json.dumps(doc))
    pts = read_measured([tmp_path / "v.json"])
    assert sorted(pts.tokens.tolist()) == [1, 4, 16] and set(pts.tp) == {2}


def test_check_json_keys(tmp_path, capsys):
    out = tmp_path / "fit.json"
    assert (
        specbed(
            [
                "cost",
                "fit",
                str(SPLITWISE),
                "--model",
                "llama2-70b",
                "--gpu",
                "h100",
                "--where",
                "tensor_parallel=4",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert specbed(["cost", "check", str(SPLITWISE), "--fit", str(out), "--json", "-"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"points", "decode", "prefill", "by_tp"} and doc["points"] == 630
    assert set(doc["decode"]) == {"points", "mape_pct", "max_pct"}
    assert set(doc["by_tp"]) == {"2", "4", "8"} and set(doc["by_tp"]["2"]) == {"decode", "prefill"}
    prov = json.loads(out.read_text())["provenance"]
    assert prov["points"] == 210 and len(prov["sha256"]) == 64 and "mape" in prov


def test_load_cost_of_fit_equals_roofline(tmp_path):
    F.Fit("llama2-70b", "h100", WITH_REQUEST).save(tmp_path / "fit.json")
    got = S.load_cost(tmp_path / "fit.json", tp=4)
    want = S.CostTable.roofline("llama2-70b", "h100", tp=4, context_tokens=None, **WITH_REQUEST)
    np.testing.assert_array_equal(got.seconds, want.seconds)
    assert got.request_seconds == want.request_seconds == WITH_REQUEST["request_s"]
    assert got.kv_token_seconds == want.kv_token_seconds > 0
    pts = Points(
        np.array(["decode"]),
        np.array([4]),
        np.array([8]),
        np.array([8]),
        np.array([8000.0]),
        np.ones(1),
        np.array(["x"]),
    )
    # The table's step time is the fit's prediction, but for attention FLOPs (negligible in decode).
    pred = F.predict(pts, "llama2-70b", "h100", WITH_REQUEST)[0]
    assert got.step_seconds(8, 8, 8000.0) == pytest.approx(pred, rel=1e-3)


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize(
    "content, extra, needle",
    [
        ("phase,requests,tokens\ndecode,1,1\n", [], "header"),  # missing column
        ("phase,tp,requests,tokens,context_tokens,seconds\ndecode,1,1,1,0,abc\n", [], "'seconds'"),
        ("phase,tp,requests,tokens,context_tokens,seconds\ndecode,1,1,1,0,-2\n", [], "'seconds'"),
        (
            "phase,tp,requests,tokens,context_tokens,seconds\ndecode,1,1,1,0,0.1\n",
            ["--model", "nope"],
            "--model",
        ),
        (
            "phase,tp,requests,tokens,context_tokens,seconds\ndecode,1,1,1,0,0.1\n",
            ["--gpu", "b300x"],
            "--gpu",
        ),
        (
            "phase,tp,requests,tokens,context_tokens,seconds\ndecode,1,1,1,0,0.1\n",
            ["--where", "tp=3"],
            "--where",
        ),
    ],
)
def test_bad_input_one_line_exit_2(tmp_path, capsys, content, extra, needle):
    path = _write(tmp_path, "m.csv", content)
    args = ["cost", "fit", path, "--model", "llama2-70b", "--gpu", "h100", "--out", str(tmp_path / "f.json")]
    # later flags win in argparse: --model/--gpu overrides come after the defaults
    assert specbed(args + extra) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err and "Traceback" not in err


@pytest.mark.parametrize(
    "text",
    [
        "{",
        '{"model": "llama2-70b"}',
        '{"model": "x", "gpu": "h100", "knobs": {}}',
        '{"model": "llama2-70b", "gpu": "h100", "knobs": {"eta_f": 2}}',
    ],
)
def test_unreadable_fit_file(tmp_path, capsys, text):
    fit = _write(tmp_path, "fit.json", text)
    assert specbed(["cost", "check", str(SPLITWISE), "--fit", fit]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "fit.json" in err
    with pytest.raises(S.InputError):
        S.load_cost(fit)


def test_long_prompts_cost_more_per_step():
    cost = S.CostTable.roofline("llama2-70b", "h100", tp=4, context_tokens=None)
    assert cost.step_seconds(32, 32, 32 * 8000) > cost.step_seconds(32, 32, 32 * 200)
    assert S.builtin_cost("h100-dense8b").kv_token_seconds > 0


def test_builtins_unchanged_at_their_calibration_context():
    for name in ("h100-dense8b", "h200-dense70b-tp4"):
        new = S.builtin_cost(name)
        model, gpu, tp = {
            "h100-dense8b": ("dense-8b", "h100", 1),
            "h200-dense70b-tp4": ("dense-70b", "h200", 4),
        }[name]
        old = S.CostTable.roofline(model, gpu, tp=tp)  # the old fixed 1,024-token context
        for b, r in ((1, 1), (64, 32), (512, 256)):
            assert new.step_seconds(b, r, 1024 * r) == pytest.approx(old.step_seconds(b, r), rel=0.02)


@pytest.mark.parametrize(
    "doc, field",
    [
        ({"batch_stats": {}}, "batch_stats"),
        ({"batch_stats": {"x": {"0": 1.0}}}, "batch_stats.x"),
        ({"batch_stats": {"4": {"1": -1.0}}}, "batch_stats.4.1"),
        ({"batch_stats": {"4": {"1": 1.0}}, "tp": 0}, "tp"),
    ],
)
def test_bad_vllm_json_names_the_key(tmp_path, doc, field):
    path = tmp_path / "v.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(S.InputError) as err:
        read_measured([path])
    assert err.value.field == field and err.value.file == str(path)
