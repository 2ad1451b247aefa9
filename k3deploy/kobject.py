"""`KubeObject`: a Kubernetes object, or a part of one (a pod's status, an event), as the plain dict the API server
sends and render makes. k3deploy reads them with `.get` and never builds a client model class; the name says
which dicts are cluster objects where `dict[str, Any]` would not. `JsonObject`: any other JSON object (a report's
`to_dict`, a request body, a parsed JSON or safe-YAML document, a dashboard), so the name says it holds only
JSON values."""

from typing import Any

KubeObject = dict[str, Any]
JsonObject = dict[str, Any]
