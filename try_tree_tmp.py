import time, numpy as np
from sim.vllm_deploy import VllmSpec, cost_table, shipped_knobs
from sim.tree import TreeShape
from sim.tree_run import Arm, Load, run_arm, make_step_cost, acceptance_model
from sim.curves import builtin_curve
spec = VllmSpec("llama3.1-8b", gpu="h100")
cost = cost_table(spec, shipped_knobs("h100"))
step = make_step_cost(cost, 8192, 0.12)
curve = builtin_curve("eagle3", "chat")
model = acceptance_model(curve, 0)
arms = [Arm("chain3", TreeShape(1, 3)), Arm("dspark-chain7-first", TreeShape(1,7), "dspark", stop="first"), Arm("dspark-chain7-best", TreeShape(1,7), "dspark"),
        Arm("tree2x3", TreeShape(2,3)), Arm("tree4x5cap16", TreeShape(4,5,16)), Arm("dspark-tree4x5", TreeShape(4,5), "dspark"),
        Arm("dspark-tree-stale", TreeShape(4,5), "dspark_stale")]
for R in (1, 8, 64):
    for a in arms:
        t=time.time(); r = run_arm(a, Load(R, steps=200), step, model, 1)
        print(R, a.name, round(r.throughput,1), round(r.tau,3), round(r.nodes/r.request_steps,2), round(time.time()-t,2))
