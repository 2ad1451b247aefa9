"""The Kubernetes target: the target itself (target.py), its rendering (render.py), status (status.py) and view
(view.py), and the rollout I/O only it uses: applying, waiting, the gates, port-forwards, the release's Lease, the
blue-green and group-by-group upgrades, the revision history and the diagnosis read from the cluster. What to do is
decided by the pure planner in rollout/; this package does it against the API server.

Empty on purpose: `k3deploy render` imports render.py alone, never the target's cluster and rollout imports."""
