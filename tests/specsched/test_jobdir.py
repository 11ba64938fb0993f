"""A results folder is one job's, written whole (specsched.io.jobdir via results.write_results)."""

import os
import shutil
import subprocess
import sys

import pytest

from specsched.io import jobdir
from specsched.io.errors import InputError
from specsched.io.results import write_results


def test_a_rewrite_drops_the_old_jobs_files_unless_adopted(tmp_path):
    out = tmp_path / "r"
    write_results(out, {"summary.json": {"a": 1}, "series.csv": "x\n"}, config="seed = 1\n", command="run")
    write_results(out, {"summary.json": {"a": 2}}, config="seed = 2\n", command="run", adopt=())
    assert sorted(os.listdir(out)) == [".job.json", "config.toml", "summary.json"]
    (out / "timeline.json").write_text("{}")
    keep = ["timeline.json"]
    write_results(out, {"summary.json": {"a": 3}}, config="seed = 3\n", command="run", adopt=keep)
    assert "timeline.json" in os.listdir(out)
    assert [n for n in os.listdir(tmp_path) if n != "r"] == []  # no temporary folder left


def test_another_commands_folder_is_refused(tmp_path):
    out = tmp_path / "r"
    write_results(out, {"summary.json": {}}, config="seed = 1\n", command="run")
    with pytest.raises(InputError, match="another command"):
        write_results(out, {"validate.json": {}}, config={"command": "validate"})
    plain = tmp_path / "p"  # a run folder of before .job.json (summary.json + requests.csv)
    plain.mkdir()
    (plain / "summary.json").write_text("{}")
    (plain / "requests.csv").write_text("x\n")
    with pytest.raises(InputError, match=r"another command \(run\)"):
        jobdir.refuse_other_job(plain, "advise")


def test_resume_with_other_inputs_is_refused(tmp_path):
    out = tmp_path / "s"
    write_results(out, {"ranked.csv": "a\n"}, config={"command": "search"}, inputs_hash="aaa")
    jobdir.check_inputs(out, "search", "aaa", field="--resume")
    with pytest.raises(InputError, match="other inputs"):
        jobdir.check_inputs(out, "search", "bbb", field="--resume")


def test_a_killed_jobs_temporary_folder_is_removed_by_the_next(tmp_path):
    code = "import os; print(os.getpid())"
    dead = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    tmp = tmp_path / f".tmp-r.{int(dead.stdout)}"
    tmp.mkdir()
    (tmp / "timeline.json").write_bytes(b"x" * 1000)
    os.utime(tmp, (1, 1))  # older than safeio.STALE_S
    write_results(tmp_path / "r", {"summary.json": {}}, config="seed = 1\n", command="run")
    assert not tmp.exists()


def test_an_output_through_a_link_onto_a_run_file_is_refused(tmp_path):
    from specsched.io import safeio

    run = tmp_path / "r"
    write_results(run, {"summary.json": {}, "requests.csv": "x\n"}, config="seed = 1\n", command="run")
    (tmp_path / "link.json").symlink_to(run / "summary.json")
    with pytest.raises(InputError, match="run results"):
        safeio.check_file(tmp_path / "link.json")


def test_a_linked_results_folder_is_swapped_at_its_target(tmp_path):
    real = tmp_path / "real"
    write_results(real, {"summary.json": {}}, config="seed = 1\n", command="run")
    (tmp_path / "l").symlink_to(real)
    write_results(tmp_path / "l", {"summary.json": {"a": 1}}, config="seed = 2\n", command="run")
    assert (tmp_path / "l").is_symlink() and (real / "summary.json").read_text().count('"a"') == 1


def test_a_claimed_file_refuses_a_second_writer_until_written(tmp_path):
    from specsched.io import safeio

    out = tmp_path / "f.json"
    with safeio.claimed_file(out, inputs=[tmp_path / "in.csv"]) as path:
        assert path == out and (tmp_path / ".f.json.lock").exists()
        code = (
            "import sys; from specsched.io import safeio\n"
            "try:\n with safeio.claimed_file(sys.argv[1]): pass\n"
            "except Exception as e: print(e); sys.exit(2)"
        )
        other = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True)
        assert other.returncode == 2 and "another specbed process" in other.stdout
        safeio.write_text(out, "{}\n")
    assert sorted(os.listdir(tmp_path)) == ["f.json"]  # the lock is gone with the block
    (tmp_path / ".f.json.lock").write_text("")  # what a kill -9 leaves: unlocked, taken over
    with safeio.claimed_file(out):
        pass
    assert sorted(os.listdir(tmp_path)) == ["f.json"]
    with safeio.claimed_file(None), safeio.claimed_file("-"):  # no file, standard output: nothing held
        pass
    with pytest.raises(InputError, match="also an input"):
        with safeio.claimed_file(out, inputs=[out]):
            pass
    assert not (tmp_path / ".f.json.lock").exists()  # refused before any lock was taken


def _steps_then_die(out, seed: int, die_at: int) -> None:
    """In a forked child: rewrite `out` with job `seed`, dying (os._exit, no cleanup: a kill -9) at the
    `die_at`-th disk-changing call of the writer; exits 0 when it finished first."""
    calls = [0]

    def counted(fn):
        def wrapped(*a, **k):
            calls[0] += 1
            if calls[0] == die_at:
                os._exit(9)
            return fn(*a, **k)

        return wrapped

    os.replace, os.rename, os.link = counted(os.replace), counted(os.rename), counted(os.link)
    jobdir._exchange = counted(jobdir._exchange)
    shutil.rmtree = counted(shutil.rmtree)
    write_results(out, {"summary.json": {"seed": seed}, "series.csv": f"{seed}\n"},
                  config=f"seed = {seed}\n", command="run", adopt=())  # fmt: skip
    os._exit(0)


def _job_of(out) -> int | None:
    """The seed of the one job whose complete results `out` holds (None: no folder); fails on a mix."""
    import json

    if not out.exists():
        return None
    job = jobdir.read_job(out)
    conf = (out / "config.toml").read_text()
    assert job["config_hash"] == jobdir.text_hash(conf)
    seed = int(conf.split("=")[1])
    assert json.loads((out / "summary.json").read_text())["seed"] == seed
    assert (out / "series.csv").read_text() == f"{seed}\n"
    return seed


@pytest.mark.parametrize("fresh", [True, False])
def test_a_kill_at_every_step_of_the_folder_swap_leaves_one_job_whole(tmp_path, fresh):
    """kill -9 (os._exit in a forked writer) before each disk-changing call of write_folder in turn:
    the folder holds the old job whole or the new one whole, and the next writer succeeds, tidy."""
    out = tmp_path / "r"
    seen = set()
    for die_at in range(1, 40):
        if not fresh:
            write_results(out, {"summary.json": {"seed": 1}, "series.csv": "1\n"}, config="seed = 1\n",
                          command="run", adopt=())  # fmt: skip
        pid = os.fork()
        if pid == 0:
            _steps_then_die(out, 2, die_at)
        _, status = os.waitpid(pid, 0)
        seen.add(_job_of(out))
        finished = os.waitstatus_to_exitcode(status) == 0
        for tmp in tmp_path.glob(".tmp-*"):  # a dead writer's temporaries, as clean_stale finds them
            os.utime(tmp, (1, 1))
        write_results(out, {"summary.json": {"seed": 3}, "series.csv": "3\n"}, config="seed = 3\n",
                      command="run", adopt=())  # fmt: skip
        assert _job_of(out) == 3 and sorted(os.listdir(tmp_path)) == ["r"]
        shutil.rmtree(out)
        if finished:
            break
    assert finished and seen == ({None, 2} if fresh else {1, 2})
