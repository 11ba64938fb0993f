"""twin — the engine-vs-simulator fidelity twin (`specbed fidelity`): one floor above `engine` and `sim`.

The same closed-loop workload runs in the real engine and in the simulator, side by side: `twin.cli` (the
command and its orchestration), `twin.run` (inputs, set-up, curves, one policy's engine run), `twin.profile`
(the engine profiles bracketing a run and what they give the simulator), `twin.workload` (the shared
workload and the simulator's twin config), `twin.compare` (both sides summarized alike and compared).
It is the only package that imports both `engine` and `sim` (tests/test_layering.py).

May import: numpy, torch, stdlib, specsched, engine, sim.
"""
