"""`specbed verify` through engine.cli.main and the specbed dispatcher; engine/fidelity routing."""

import subprocess
import sys

from engine.cli import main
from specbed.cli import main as specbed_main


def test_verify_quick_prints_the_table_and_passes(capsys):
    assert specbed_main(["verify", "--quick"]) == 0  # the dispatcher passes only the flags
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["property", "cases", "result"]
    assert "FAIL" not in out and "exact law = target law" in out and "control caught" in out


def test_engine_and_fidelity_have_their_own_commands(capsys):
    for command in (["engine", "--help"], ["fidelity", "--help"]):
        assert specbed_main(command) == 0
        captured = capsys.readouterr()
        assert "usage" in (captured.out + captured.err).lower()


def test_bad_usage_exits_2(capsys):
    assert main(["verify", "--backend", "tpu"]) == 2
    assert main(["--bogus"]) == 2


def test_verify_bench_tiny_runs_on_cpu():
    proc = subprocess.run(
        [sys.executable, "-m", "engine.verify_bench", "--device", "cpu", "--tiny", "--repeats", "1"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "identical" in proc.stdout and "False" not in proc.stdout
