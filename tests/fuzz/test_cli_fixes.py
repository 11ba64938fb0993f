"""Open items of issue 36 fixed at the CLI level, as plain regression tests (the generator covers them too):
an output onto a device is refused (never reported as success, never a device node replaced), a sweep's
`--model` that is not a cell model, an out-of-range `--jobs`, and non-finite numbers in a traffic file or
a price table are one line, exit 2."""

from __future__ import annotations

import json
import os

import pytest

from specbed.cli import main
from tests.fuzz.base import SWEEP
from tests.fuzz.newcmds import PRICES, SPACE, TRAFFIC

ADVISE = ("advise", "--model", "llama3.1-8b", "--quiet", "--loads", "1", "--traffic")


def _one_line(capsys, argv, *words) -> str:
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    for word in words:
        assert word in err[0], err[0]
    return err[0]


@pytest.fixture
def full(tmp_path):
    """A link to /dev/full: a command that wrongly renamed its output over it replaces only the link."""
    link = tmp_path / "full"
    os.symlink("/dev/full", link)
    return link


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--draft-schedule", "--cost", "h200-v4flash", "--json", "{F}"],
        ["run", "--quiet", "--set", "workload.num_requests=20", "--json", "{F}"],
        ["trace", "synth", "azure2023-code", "--n", "5", "--out", "{F}"],
    ],
    ids=["plan", "run", "synth"],
)
def test_an_output_onto_a_device_is_refused(argv, full, capsys):
    line = _one_line(capsys, [a.replace("{F}", str(full)) for a in argv], "full", "device")
    assert os.path.islink(full) and os.readlink(full) == "/dev/full", line


@pytest.mark.parametrize("model", ["json:dumps", "os:getcwd", "sim.cli:main"])
def test_a_sweep_model_that_is_not_a_cell_model_is_one_line(model, tmp_path, capsys):
    (tmp_path / "s.toml").write_bytes(SWEEP)
    argv = ["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--model", model, "--quiet"]
    _one_line(capsys, argv, "--model", "not a cell model")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("jobs", ["1" * 40, "0", "nan"])
def test_search_and_sweep_jobs_out_of_range(jobs, tmp_path, capsys):
    for name, data in {"space.toml": SPACE, "traffic.toml": TRAFFIC, "s.toml": SWEEP}.items():
        (tmp_path / name).write_bytes(data)
    search = ["search", str(tmp_path / "space.toml"), "--traffic", str(tmp_path / "traffic.toml"),
              "--slo", "ttft_p90<=2s", "--out", str(tmp_path / "so"), "--jobs", jobs]  # fmt: skip
    _one_line(capsys, search, "--jobs")
    _one_line(
        capsys, ["sweep", str(tmp_path / "s.toml"), "--out", str(tmp_path / "o"), "--jobs", jobs], "--jobs"
    )


def test_a_price_that_makes_a_fleet_cost_infinite_is_refused(tmp_path, capsys):
    (tmp_path / "p.toml").write_bytes(PRICES.replace(b"2.5", b"1e308"))
    for name, data in {"space.toml": SPACE, "traffic.toml": TRAFFIC}.items():
        (tmp_path / name).write_bytes(data)
    argv = ["search", str(tmp_path / "space.toml"), "--traffic", str(tmp_path / "traffic.toml"), "--slo",
            "ttft_p90<=2s", "--out", str(tmp_path / "so"), "--prices", str(tmp_path / "p.toml")]  # fmt: skip
    _one_line(capsys, argv, "p.toml", "usd_per_hour")


@pytest.mark.parametrize("field", ["input_lens", "output_lens"])
@pytest.mark.parametrize("value", ["Infinity", "NaN", "1e308"])
def test_advise_traffic_lengths_must_be_finite_and_bounded(field, value, tmp_path, capsys):
    doc = {"input_lens": [100, 200], "output_lens": [50, 60], "request_rate": 2.0}
    doc[field] = [7, "@@"]
    (tmp_path / "t.json").write_text(json.dumps(doc).replace('"@@"', value))
    argv = [*ADVISE, str(tmp_path / "t.json")]
    _one_line(capsys, argv, "t.json", field)


@pytest.mark.parametrize("value", ["inf", "nan", "1e308", "-1"])
def test_advise_requests_per_user_is_bounded(value, tmp_path, capsys):
    doc = {"input_lens": [100, 200], "output_lens": [50, 60], "request_rate": 2.0}
    (tmp_path / "t.json").write_text(json.dumps(doc))
    argv = [*ADVISE, str(tmp_path / "t.json"), "--requests-per-user", value]
    _one_line(capsys, argv, "--requests-per-user")
