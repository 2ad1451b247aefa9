"""How requests reach the groups' leaders: the API Service, and optionally a Gateway API Inference Extension
InferencePool with its endpoint picker (EPP). Pure: values for the templates, derived from the profile.

The pool and the EPP follow upstream's own manifests: the InferencePool API (kubernetes-sigs/
gateway-api-inference-extension config/crd/bases/inference.networking.k8s.io_inferencepools.yaml, v1) and the
EPP that moved to llm-d/llm-d-router (config/charts/routerlib/templates/_inferencepool.yaml, _deployment.yaml,
_service.yaml, _config.yaml, _rbac.yaml and config/charts/llm-d-router-gateway/templates/rbac.yaml at v0.9.0):
the same args, ports, probes, Recreate strategy, default plugins and the reads it needs.
"""

from __future__ import annotations

import yaml

from k3deploy.errors import ProfileError
from k3deploy.kobject import JsonObject
from k3deploy.lws import NAME_LABEL as LWS_NAME_LABEL
from k3deploy.lws import WORKER_INDEX_LABEL as LWS_WORKER_INDEX_LABEL
from k3deploy.profile.model import Profile
from k3deploy.traffic_gate import gate_selector

#: The EPP's ext-proc gRPC port, its gRPC health port and its metrics port (llm-d-router routerlib defaults).
EPP_EXT_PROC_PORT = 9002
EPP_HEALTH_PORT = 9003
EPP_METRICS_PORT = 9090
#: The plugins file the EPP reads, mounted from its ConfigMap at /config.
EPP_CONFIG_FILE = "default-plugins.yaml"
EPP_CONFIG_DIR = "/config"
#: The EPP image's user (llm-d-router Dockerfile.epp: USER 65532:65532).
EPP_UID = 65532


def leader_selector(profile: Profile) -> dict[str, str]:
    """Labels that select exactly the groups' leaders (the pods that serve HTTP), whatever the group."""
    return {LWS_NAME_LABEL: profile.name, LWS_WORKER_INDEX_LABEL: "0"}


def pool_selector(profile: Profile) -> dict[str, str]:
    """Labels of the leaders the InferencePool routes to: with smoke.gate_traffic, only those a gate passed."""
    return {**leader_selector(profile), **gate_selector(profile.smoke.gate_traffic)}


def pool_name(profile: Profile) -> str:
    """Name of the InferencePool (an HTTPRoute's backendRef names it, kind InferencePool)."""
    return profile.name


def epp_name(profile: Profile) -> str:
    """Name of the EPP's Deployment, Service, ServiceAccount, Role, RoleBinding and ConfigMap."""
    return f"{profile.name}-epp"


def epp_plugins_config() -> str:
    """The EPP's scheduling config: llm-d-router's default for vLLM over HTTP (routerlib _config.yaml): score
    endpoints by queue depth (2), KV-cache use (2) and prefix-cache affinity (3), from vLLM's /metrics."""
    config: JsonObject = {
        "apiVersion": "llm-d.ai/v1alpha1",
        "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "queue-scorer"},
            {"type": "kv-cache-utilization-scorer"},
            {"type": "prefix-cache-scorer"},
            {
                "type": "metrics-data-source",
                "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True},
            },
            {"type": "core-metrics-extractor"},
        ],
        "schedulingProfiles": [
            {
                "name": "default",
                "plugins": [
                    {"pluginRef": "queue-scorer", "weight": 2},
                    {"pluginRef": "kv-cache-utilization-scorer", "weight": 2},
                    {"pluginRef": "prefix-cache-scorer", "weight": 3},
                ],
            }
        ],
    }
    return yaml.safe_dump(config, sort_keys=False)


def epp_args(profile: Profile) -> list[str]:
    """The EPP's command line for one replica bound to the pool (routerlib _deployment.yaml, InferencePool mode)."""
    return [
        "--pool-name",
        pool_name(profile),
        "--pool-namespace",
        profile.kubernetes.namespace,
        "--pool-group",
        "inference.networking.k8s.io",
        "--zap-encoder",
        "json",
        "--config-file",
        f"{EPP_CONFIG_DIR}/{EPP_CONFIG_FILE}",
        "--grpc-health-port",
        str(EPP_HEALTH_PORT),
        "--tracing=false",
        "--metrics-endpoint-auth=false",
    ]


def check_gateway_reach(profile: Profile) -> None:
    """Refuse (exit 2) an inference-pool set whose NetworkPolicies admit no Gateway: with neither
    kubernetes.gateway_namespace nor kubernetes.api_cidrs only the set's own namespace reaches the endpoint picker
    and the API, so a Gateway elsewhere gets no route and every request through it fails."""
    kube = profile.kubernetes
    if kube.routing != "inference-pool" or not kube.network_policy:
        return
    if kube.gateway_namespace is None and not kube.api_cidrs:
        raise ProfileError(
            "kubernetes.routing is inference-pool but kubernetes.gateway_namespace and kubernetes.api_cidrs are unset: "
            "the NetworkPolicies would admit no Gateway to the endpoint picker and the API",
            hint="set kubernetes.gateway_namespace to the namespace the Gateway's proxies run in (the set's own "
            f"namespace {kube.namespace} if they run there), or kubernetes.api_cidrs for a data plane that is not pods",
        )


def routing_context(profile: Profile) -> JsonObject:
    """Every value the routing templates use (after check_gateway_reach)."""
    check_gateway_reach(profile)
    return {
        "leader_selector": pool_selector(profile),
        "pool_name": pool_name(profile),
        "epp": {
            "name": epp_name(profile),
            "args": epp_args(profile),
            "ext_proc_port": EPP_EXT_PROC_PORT,
            "health_port": EPP_HEALTH_PORT,
            "metrics_port": EPP_METRICS_PORT,
            "config_file": EPP_CONFIG_FILE,
            "config_dir": EPP_CONFIG_DIR,
            "config": epp_plugins_config(),
            "uid": EPP_UID,
            "selector": {"app.kubernetes.io/instance": profile.name, "app.kubernetes.io/component": "endpoint-picker"},
        },
    }
