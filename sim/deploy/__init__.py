"""sim.deploy — where a deployment is run: a config's `[cost]` section priced (`cost`), a vLLM deployment
made a runnable simulation (`prepare`), a drafter priced from its shape against the target's catalogue step
(`draft`), and the `[cost]` deployment keys (`keys`). The price itself lives in `specsched.price`.
"""
