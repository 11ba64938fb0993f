import numpy as np
from sim.vllm_deploy import VllmSpec, cost_table, shipped_knobs
spec = VllmSpec("llama3.1-8b", gpu="h100")
cost = cost_table(spec, shipped_knobs("h100"))
print(cost.request_seconds, cost.kv_token_seconds, cost.layers)
for R in (1,8,16):
    c3 = cost.latency(np.array([3*R]))[0]; t9 = cost.latency(np.array([9*R]))[0]
    lay = cost.latency(np.array([R]))[0]/cost.layers; lay2 = cost.latency(np.array([2*R]))[0]/cost.layers
    kv = cost.kv_token_seconds*R*384
    chain = c3 + 2*lay + kv + cost.request_seconds*R
    tree = t9 + lay + lay2 + kv*1.0 + cost.request_seconds*R
    print(R, c3*1e3, t9*1e3, chain*1e3, tree*1e3, "gain", (2.37/2.05)*(chain/tree)-1)
