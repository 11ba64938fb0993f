"""The one `Knobs`: its ranges, the shipped calibration read strictly, EP groups and the roofline on it."""

import pytest

import specsched.price.knobs as K
from specsched.io.errors import InputError
from specsched.price import DEFAULTS, Knobs, shipped_knobs
from specsched.price.ep import EPGroup


@pytest.mark.parametrize("bad", [{"eta_bw": 0}, {"eta_f": 1.5}, {"c0": -1e-6}, {"step_s": 10.0},
                                 {"eta_attn": True}])  # fmt: skip
def test_every_knob_has_one_range(bad):
    with pytest.raises(InputError) as err:
        Knobs(**bad)
    assert err.value.field == f"knobs.{next(iter(bad))}"


@pytest.mark.parametrize(
    "text, field",
    [("{", None), ('{"gpus": []}', "gpus"),
     ('{"gpus": {"h100": {"knobs": {"eta_bw": 2}}}, "transfer": {"from": "h100"}}', "knobs.eta_bw"),
     ('{"gpus": {"h100": {"knobs": {}}}, "transfer": {"from": "b200"}}', "transfer.from")],
)  # fmt: skip
def test_a_bad_shipped_knobs_file_is_one_line_naming_it(tmp_path, monkeypatch, text, field):
    path = tmp_path / "knobs.json"
    path.write_text(text)
    monkeypatch.setattr(K, "KNOBS_FILE", path)
    with pytest.raises(InputError) as err:
        shipped_knobs("a100")  # not in the file: carried from transfer.from
    assert err.value.file == str(path) and "\n" not in str(err.value)
    if field is not None:
        assert err.value.field == field


def test_shipped_knobs_are_calibrated_and_the_defaults_are_one_object():
    assert shipped_knobs("h100") != DEFAULTS and shipped_knobs("H100-SXM") == shipped_knobs("h100")
    assert K.FIT_START["c0"] == DEFAULTS.c0


def test_ep_groups_price_with_the_one_knobs():
    base = EPGroup("deepseek-v3", "h800", 144, 144, redundant_experts=32, intra="nvlink-h800")
    assert base.knobs is DEFAULTS
    lean = EPGroup("deepseek-v3", "h800", 144, 144, redundant_experts=32, intra="nvlink-h800",
                   knobs=Knobs(c0=0.0))  # fmt: skip
    a, b = base.decode_bill(64, 2, 4096), lean.decode_bill(64, 2, 4096)
    assert b.overhead == 0 and a.overhead == pytest.approx(DEFAULTS.c0 * 61 * 2)
