"""The local target: a vLLM OpenAI server as a managed background process on this host.

`LocalTarget` lives in `k3deploy.targets.local.target` (the registry names it there); this package imports
nothing, so `k3deploy.targets.local.rehearsal` stays light to import under another interpreter.
"""
