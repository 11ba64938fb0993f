"""specsched.contracts curves (what sim.curves re-exports): built-in curves (Fig. 2 / T1), the JSON curves
file (round trip, every bad-file case)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from specsched.contracts import (
    DOMAINS,
    DRAFTERS,
    TABLE1_TAU,
    Curves,
    builtin_curve,
    curve_matrix,
    curve_tau,
    load_curves,
    parse_curves,
    save_curves,
)
from specsched.io.errors import InputError


@pytest.mark.parametrize("drafter", ["dspark", "dflash", "eagle3"])
@pytest.mark.parametrize("domain", DOMAINS)
def test_builtin_fig2_reproduces_table1(drafter, domain):
    curve = builtin_curve(drafter, domain)
    assert curve.shape == (7,)
    assert abs(curve_tau(curve) - TABLE1_TAU[drafter][domain]) <= 0.05


def test_t1_survival_example_and_paper_text():
    # dspark.md §6 T1: DSpark math survival .905 .805 .715 .634 .562 .500 .442
    surv = np.cumprod(builtin_curve("dspark", "math"))
    np.testing.assert_allclose(surv, [0.905, 0.805, 0.715, 0.634, 0.562, 0.500, 0.442], atol=6e-4)
    assert builtin_curve("dflash", "chat")[0] == pytest.approx(0.72, abs=0.005)
    assert builtin_curve("eagle3", "chat")[0] == pytest.approx(0.53, abs=0.005)


def test_mtp_none_and_fresh_copies():
    for dom in DOMAINS:
        assert builtin_curve("mtp", dom).shape == (1,)
        assert 0.85 <= builtin_curve("mtp", dom)[0] <= 0.90
        assert builtin_curve("none", dom).shape == (0,)
    a = builtin_curve("dspark", "math")
    a[0] = 0.0
    assert builtin_curve("dspark", "math")[0] == 0.905


def test_curve_matrix_rows_truncation_and_errors():
    m = curve_matrix(None, "dflash", 4)
    assert m.shape == (3, 4) and m.dtype == np.float64
    for i, dom in enumerate(DOMAINS):
        np.testing.assert_array_equal(m[i], builtin_curve("dflash", dom)[:4])
    assert curve_matrix(None, "none", 0).shape == (3, 0)
    assert curve_matrix(None, "mtp", 1).shape == (3, 1)
    with pytest.raises(ValueError, match="drafter.gamma"):
        curve_matrix(None, "dspark", 8)
    with pytest.raises(ValueError, match="drafter.gamma"):
        curve_matrix(None, "mtp", 2)
    with pytest.raises(ValueError, match="drafter.gamma"):
        curve_matrix(None, "none", 1)
    with pytest.raises(ValueError, match="drafter.gamma"):
        curve_matrix(None, "dspark", -1)
    with pytest.raises(ValueError, match="drafter.name"):
        curve_matrix(None, "medusa", 1)


def _doc(**over):
    doc = {
        "version": 1,
        "description": "measured on a toy engine",
        "curves": {
            "dspark": {"math": [0.9, 0.8, 0.7], "code": [0.85, 0.8, 0.75], "chat": [0.7, 0.6, 0.5]},
            "mtp": {"math": [0.9], "code": [0.88], "chat": [0.85]},
        },
        "confidence": {
            "dspark": {
                "chat": {
                    "ece_raw": [0.05, 0.06, 0.04],
                    "auc_raw": [0.82, 0.84, 0.9],
                    "ece_calibrated": [0.01, 0.01, 0.02],
                    "auc_calibrated": [0.82, 0.85, 0.9],
                    "temperatures": [1.3, 1.2, 0.9],
                }
            }
        },
    }
    doc.update(over)
    return doc


def test_json_round_trip_and_fallback(tmp_path):
    path = tmp_path / "curves.json"
    path.write_text(json.dumps(_doc()))
    curves = load_curves(path)
    assert curves.source == str(path)
    np.testing.assert_array_equal(curves.get("dspark", "chat"), [0.7, 0.6, 0.5])
    # a drafter absent from the file keeps its built-in curve
    np.testing.assert_array_equal(curves.get("eagle3", "math"), builtin_curve("eagle3", "math"))
    stats = curves.confidence_stats("dspark", "chat")
    np.testing.assert_array_equal(stats["temperatures"], [1.3, 1.2, 0.9])
    assert curves.confidence_stats("dspark", "math") is None
    out = tmp_path / "again.json"
    save_curves(curves, out)
    again = load_curves(out)
    assert again == curves
    assert again.to_json() == _doc()
    m = curve_matrix(curves, "dspark", 3)
    np.testing.assert_array_equal(m[DOMAINS.index("code")], [0.85, 0.8, 0.75])
    with pytest.raises(InputError) as err:
        curve_matrix(curves, "dspark", 4)
    assert str(path) in str(err.value) and "drafter.gamma" in str(err.value)
    np.testing.assert_array_equal(curve_matrix(curves, "eagle3", 7), curve_matrix(None, "eagle3", 7))


def test_minimal_file(tmp_path):
    path = tmp_path / "c.json"
    path.write_text('{"version": 1, "curves": {}}')
    c = load_curves(path)
    assert isinstance(c, Curves) and c.curves == {} and c.confidence == {}
    np.testing.assert_array_equal(c.get("dspark", "math"), builtin_curve("dspark", "math"))


def _bad(doc_update=None, mutate=None):
    doc = _doc(**(doc_update or {}))
    if mutate:
        mutate(doc)
    return doc


def _set(path, value):
    def f(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return f


def _del(path):
    def f(doc):
        node = doc
        for key in path[:-1]:
            node = node[key]
        del node[path[-1]]

    return f


BAD = [
    ("version", _bad(mutate=_set(["version"], 3))),
    ("version", _bad(mutate=_set(["version"], True))),
    ("version", _bad(mutate=_set(["version"], "1"))),
    ("version", _bad(mutate=_del(["version"]))),
    ("curves", _bad(mutate=_del(["curves"]))),
    ("curves", _bad(mutate=_set(["curves"], [0.9]))),
    ("extra", _bad(mutate=_set(["extra"], 1))),
    ("description", _bad(mutate=_set(["description"], 3))),
    ("curves.medusa", _bad(mutate=_set(["curves", "medusa"], {}))),
    ("curves.none", _bad(mutate=_set(["curves", "none"], {"math": [], "code": [], "chat": []}))),
    # any subset of domains is a valid curves entry (#16), but stats need their domain's curve
    ("curves.dspark.chat", _bad(mutate=_del(["curves", "dspark", "chat"]))),
    ("curves.dspark", _bad(mutate=_set(["curves", "dspark"], {}))),
    ("curves.n gram", _bad(mutate=_set(["curves", "n gram"], {"chat": [0.5]}))),
    ("curves.dspark.poetry", _bad(mutate=_set(["curves", "dspark", "poetry"], [0.5]))),
    ("curves.dspark.math", _bad(mutate=_set(["curves", "dspark", "math"], []))),
    ("curves.dspark.math", _bad(mutate=_set(["curves", "dspark", "math"], 0.9))),
    ("curves.dspark.math[0]", _bad(mutate=_set(["curves", "dspark", "math"], [[0.9, 0.8]]))),
    ("curves.dspark.math[1]", _bad(mutate=_set(["curves", "dspark", "math"], [0.9, 1.2]))),
    ("curves.dspark.math[0]", _bad(mutate=_set(["curves", "dspark", "math"], [-0.1]))),
    ("curves.dspark.math[0]", _bad(mutate=_set(["curves", "dspark", "math"], ["0.9"]))),
    ("curves.dspark.math[0]", _bad(mutate=_set(["curves", "dspark", "math"], [None]))),
    ("curves.dspark.math[0]", _bad(mutate=_set(["curves", "dspark", "math"], [True]))),
    ("curves.mtp", _bad(mutate=_set(["curves", "mtp"], [0.9]))),
    ("confidence", _bad(mutate=_set(["confidence"], []))),
    ("confidence.eagle3", _bad(mutate=_set(["confidence", "eagle3"], {}))),
    ("confidence.dspark.poetry", _bad(mutate=_set(["confidence", "dspark", "poetry"], {}))),
    ("confidence.dspark.chat.brier", _bad(mutate=_set(["confidence", "dspark", "chat", "brier"], [0.1] * 3))),
    ("confidence.dspark.chat.auc_raw", _bad(mutate=_set(["confidence", "dspark", "chat", "auc_raw"], [0.8]))),
    (
        "confidence.dspark.chat.ece_raw[2]",
        _bad(mutate=_set(["confidence", "dspark", "chat", "ece_raw"], [0, 0, 2])),
    ),
    (
        "confidence.dspark.chat.temperatures[0]",
        _bad(mutate=_set(["confidence", "dspark", "chat", "temperatures"], [0.0, 1.0, 1.0])),
    ),
]


@pytest.mark.parametrize(("field", "doc"), BAD, ids=[f"{i}-{f}" for i, (f, _) in enumerate(BAD)])
def test_bad_documents_name_file_and_field(tmp_path, field, doc):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError) as err:
        load_curves(path)
    assert err.value.file == str(path)
    assert err.value.field == field
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and field in msg


def test_non_finite_numbers_rejected(tmp_path):
    path = tmp_path / "nan.json"
    path.write_text('{"version": 1, "curves": {"dflash": {"math": [NaN], "code": [0.5], "chat": [0.5]}}}')
    with pytest.raises(InputError) as err:
        load_curves(path)
    assert err.value.field == "curves.dflash.math[0]"


def test_unreadable_and_invalid_json(tmp_path):
    missing = tmp_path / "missing.json"
    with pytest.raises(InputError) as err:
        load_curves(missing)
    assert err.value.file == str(missing)
    broken = tmp_path / "broken.json"
    broken.write_text('{"version": 1,\n "curves": {,}}')
    with pytest.raises(InputError) as err:
        load_curves(broken)
    assert err.value.file == str(broken) and err.value.line == 2
    top = tmp_path / "list.json"
    top.write_text("[1, 2]")
    with pytest.raises(InputError, match="JSON object"):
        load_curves(top)
    with pytest.raises(InputError):
        load_curves(tmp_path)  # a directory


def test_parse_curves_default_file_name():
    with pytest.raises(InputError, match="<curves>"):
        parse_curves({"version": 7, "curves": {}})


def test_drafters_domains_constants():
    assert DRAFTERS == ("none", "mtp", "eagle3", "dflash", "dspark")
    assert DOMAINS == ("chat", "math", "code")
