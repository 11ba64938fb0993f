"""A fast stand-in for the simulator in sweep tests: real config resolution, closed-form "runs".

`FakeModel.run` returns throughput/per-user speed from a formula of (policy, drafter, concurrency, seed),
so tests of the sweep machinery take milliseconds per cell. Environment knobs (inherited by pool workers
and subprocesses): SPECBED_FAKE_SLEEP seconds per cell; SPECBED_FAKE_CRASH_DIR — the first time a cell
with concurrency 16 runs, its worker process kills itself with SIGKILL (a marker file there records it).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from analysis.model import SimModel
from analysis.sweepfile import config_key

TAU = {"ar": 1.0, "fixed": 1.8, "dspark": 3.0, "dspark_global": 2.9}


class FakeModel(SimModel):
    name = "fake"

    def run(self, config: dict) -> dict:
        sleep = float(os.environ.get("SPECBED_FAKE_SLEEP", "0"))
        if sleep:
            time.sleep(sleep)
        conc = config["workload"]["concurrency"]
        crash_dir = os.environ.get("SPECBED_FAKE_CRASH_DIR")
        if crash_dir and conc == 16:
            marker = Path(crash_dir) / config_key(config)
            if not marker.exists():
                marker.write_text("crashed once\n")
                os.kill(os.getpid(), signal.SIGKILL)
        policy = config["policy"]["name"]
        if config["workload"].get("think_s") == 99.0:
            raise RuntimeError("this cell always fails")
        tau = TAU.get(policy, 1.5) + 0.01 * config["seed"]
        cost = 1.0 + 0.15 * (tau - 1.0)  # longer verifies cost more per step
        step_s = 0.01 * cost * (1.0 + conc / 32.0)
        speed = tau / step_s
        return {
            "throughput_tok_s_per_gpu": conc * speed,
            "per_user_tok_s_mean": speed,
            "tau_mean": tau,
            "requests_completed": config["workload"]["num_requests"],
            "label": policy,
        }


MODEL = FakeModel()
