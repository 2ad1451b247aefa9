"""A real Kubernetes control plane for the realk8s tier: kube-apiserver, kube-controller-manager, kube-scheduler and
etcd built from their Go modules (.ci/build-realk8s), KWOK for the GB300 nodes and pod lifecycle, and the
LeaderWorkerSet controller with its webhooks, all on 127.0.0.1. `python -m tests.realk8s --kubeconfig PATH` runs one.
"""
