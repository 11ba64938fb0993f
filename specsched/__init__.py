"""specsched — the one scheduler of specbed: cost tables, verify-length policies, draft depths, stale rows.

Both the simulator (`sim/`) and the real engine (`engine/`) build `conf: float64[R, γ]` and call a policy
made here; nothing else in specbed decides verify lengths. Imports numpy and the standard library only
(a test asserts that importing it loads neither torch nor simpy).
"""

from specsched.builtin import (
    BUILTIN_COSTS,
    builtin_cost,
    builtin_gpu,
    builtin_gpus_per_replica,
    builtin_graphs,
    load_cost,
)
from specsched.cost import CostTable
from specsched.depth import DRAFT_MODES, AdaptivePolicy, DraftCost, make_policy, plan_depths
from specsched.graphs import vllm_capture_sizes, with_cudagraphs
from specsched.io.errors import InputError
from specsched.planner import Planner, StepDecision
from specsched.policies import (
    POLICIES,
    LosslessnessWarning,
    Policy,
    check_conf,
    policy_params,
)
from specsched.price import GPU, GPUS, MODELS, ModelShape
from specsched.registry import Param, PolicySpec
from specsched.stale import StaleBuffer
from specsched.stepcost import StepBill, StepCost, StepShape

__all__ = [
    "BUILTIN_COSTS",
    "DRAFT_MODES",
    "AdaptivePolicy",
    "DraftCost",
    "Param",
    "Planner",
    "PolicySpec",
    "StaleBuffer",
    "StepDecision",
    "StepBill",
    "StepCost",
    "StepShape",
    "plan_depths",
    "GPU",
    "GPUS",
    "MODELS",
    "POLICIES",
    "CostTable",
    "InputError",
    "LosslessnessWarning",
    "ModelShape",
    "Policy",
    "builtin_cost",
    "builtin_gpu",
    "builtin_gpus_per_replica",
    "builtin_graphs",
    "check_conf",
    "load_cost",
    "make_policy",
    "policy_params",
    "vllm_capture_sizes",
    "with_cudagraphs",
]
