"""The real CNCF distribution registry (`registry serve`) on 127.0.0.1 for the pin tests, and a client that pushes to it.

Built by .ci/registry (`go install github.com/distribution/distribution/v3/cmd/registry`) and linked beside the
venv's python as `distribution-registry`. Each `Distribution` is one process with its own storage directory, TLS
from the session's test CA, optionally token auth against a `TokenIssuer`, and a JSON log that `requests()` reads
(the registry's own record of what clients asked). It is stopped by the pid this class started, never by name.
Content goes in through the registry API, as `docker push`/`oras push` do: blobs by monolithic upload
(POST then PUT ?digest=), manifests by PUT with their media type.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import secrets
import signal
import ssl
import subprocess
import tarfile
import time
from pathlib import Path

import httpx
import pytest
import yaml

from k3deploy.pin.oci import DOCKER_MANIFEST, OCI_INDEX, OCI_MANIFEST, parse_bearer_challenge
from tests.conftest import venv_tool
from tests.pin.tls import Issued
from tests.pin.token_issuer import ISSUER, SERVICE, TokenIssuer

BINARY = "distribution-registry"
_CONFIG_TYPES = {
    OCI_MANIFEST: "application/vnd.oci.image.config.v1+json",
    DOCKER_MANIFEST: "application/vnd.docker.container.image.v1+json",
}
_LISTENING = re.compile(r"listening on (?P<addr>127\.0\.0\.1:\d+)")
#: How long a starting registry may take to log its address (it starts in well under a second).
START_BOUND_S = 30.0


def registry_binary() -> str:
    """The registry executable, or a skip (a failure under CI=true) saying how to get it."""
    path = os.environ.get("K3DEPLOY_DISTRIBUTION_REGISTRY") or venv_tool(BINARY)
    if path:
        return path
    message = f"the distribution registry ({BINARY}) is not installed (run: bash .ci/setup, which runs .ci/registry)"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)


def tar_gz(files: dict[str, bytes]) -> bytes:
    """A gzip-compressed tar archive of `files` (path -> content): an image layer."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for path, content in files.items():
            info = tarfile.TarInfo(path)
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
    return buffer.getvalue()


def digest_of(data: bytes) -> str:
    """The sha256 digest of `data`, as registries name content."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


class Distribution:
    """One registry process: `url` (https://127.0.0.1:<port>), `push_*` to fill it, `stop()` to end it."""

    def __init__(
        self,
        workdir: Path,
        tls: Issued,
        ca_bundle: Path,
        issuer: TokenIssuer | None = None,
        *,
        index_children_must_exist: bool = True,
    ) -> None:
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.issuer = issuer
        self.log_path = workdir / "registry.log"
        self.url = ""
        config: dict = {
            "version": 0.1,
            "log": {"level": "info", "formatter": "json", "accesslog": {"disabled": True}},
            "storage": {"filesystem": {"rootdirectory": str(workdir / "storage")}},
            "http": {
                "addr": "127.0.0.1:0",
                "secret": secrets.token_hex(16),
                "tls": {"certificate": str(tls.cert_path), "key": str(tls.key_path)},
            },
        }
        if issuer is not None:
            config["auth"] = {
                "token": {
                    "realm": issuer.realm,
                    "service": SERVICE,
                    "issuer": ISSUER,
                    "rootcertbundle": str(ca_bundle),
                }
            }
        if not index_children_must_exist:
            # What a partial mirror copy (one platform of an index) looks like: the index names a manifest the
            # registry does not have. distribution accepts such an index only with this setting.
            config["validation"] = {"manifests": {"indexes": {"platforms": "none"}}}
        self.config_path = workdir / "config.yml"
        self.config_path.write_text(yaml.safe_dump(config))
        self._proc: subprocess.Popen[bytes] | None = None
        self._http = httpx.Client(verify=ssl.create_default_context(cafile=str(ca_bundle)), timeout=httpx.Timeout(15.0))
        self._push_auth: dict[str, str] = {}
        #: Byte size of every manifest pushed, by digest (an index entry names its child's size).
        self.sizes: dict[str, int] = {}

    # lifecycle -----------------------------------------------------------------------------------
    def start(self) -> Distribution:
        """Start `registry serve` and wait until it logs the address it listens on."""
        env = {"PATH": os.environ.get("PATH", ""), "HOME": str(self.workdir), "OTEL_TRACES_EXPORTER": "none"}
        with self.log_path.open("wb") as log:
            self._proc = subprocess.Popen(
                [registry_binary(), "serve", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        deadline = time.monotonic() + START_BOUND_S
        while time.monotonic() < deadline:
            match = _LISTENING.search(self.log_path.read_text(errors="replace"))
            if match:
                self.url = f"https://{match['addr']}"
                return self
            if self._proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"the registry did not start; its log:\n{self.log_path.read_text(errors='replace')[-4000:]}")

    def stop(self) -> None:
        """SIGTERM the process this object started (by its pid), SIGKILL if it outlives a bound."""
        self._http.close()
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)

    def requests(self) -> list[tuple[str, str]]:
        """(method, path) of every request the registry logged having answered, in order."""
        seen = []
        for line in self.log_path.read_text(errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "response completed" and "http.request.uri" in entry:
                seen.append((entry["http.request.method"], entry["http.request.uri"].split("?", 1)[0]))
        return seen

    # pushing -------------------------------------------------------------------------------------
    def _send(
        self, method: str, url: str, name: str, content: bytes | None = None, content_type: str | None = None
    ) -> httpx.Response:
        """A push request, with a push token from the issuer when the registry challenges for one."""
        headers = {"Content-Type": content_type} if content_type else {}
        if name in self._push_auth:
            headers["Authorization"] = self._push_auth[name]
        response = self._http.request(method, url, headers=headers, content=content)
        if response.status_code == 401 and self.issuer is not None:
            challenge = parse_bearer_challenge(response.headers["WWW-Authenticate"])
            assert challenge is not None
            token = self._http.get(
                challenge.realm,
                params={"service": challenge.service or "", "scope": f"repository:{name}:pull,push"},
                auth=self.issuer.pusher,
            ).json()["token"]
            self._push_auth[name] = headers["Authorization"] = f"Bearer {token}"
            response = self._http.request(method, url, headers=headers, content=content)
        return response

    def push_blob(self, name: str, data: bytes) -> str:
        """Upload `data` as a blob of repository `name` (monolithic upload); return its digest."""
        digest = digest_of(data)
        started = self._send("POST", f"{self.url}/v2/{name}/blobs/uploads/", name)
        assert started.status_code == 202, started.text
        location = httpx.URL(self.url).join(started.headers["Location"])
        done = self._send(
            "PUT", str(location.copy_merge_params({"digest": digest})), name, data, "application/octet-stream"
        )
        assert done.status_code == 201, done.text
        return digest

    def push_manifest(self, name: str, reference: str, media_type: str, body: dict) -> str:
        """PUT a manifest (bytes as a client would serialise them) under a tag or its digest; return its digest."""
        data = json.dumps(body, indent=3).encode()
        digest = digest_of(data)
        response = self._send("PUT", f"{self.url}/v2/{name}/manifests/{reference or digest}", name, data, media_type)
        assert response.status_code == 201, response.text
        assert response.headers["Docker-Content-Digest"] == digest
        self.sizes[digest] = len(data)
        return digest

    def push_image(
        self,
        name: str,
        tag: str | None,
        arch: str,
        media_type: str = OCI_MANIFEST,
        os_name: str = "linux",
        vllm_version: str | None = None,
    ) -> str:
        """A single-platform image: a config blob naming the platform, one layer, the manifest; return its digest.

        The manifest itself names no platform: only its config blob does (as `docker build` without buildx pushes).
        With `vllm_version`, the image is shaped like a vLLM image: its config carries the Ubuntu base's
        `org.opencontainers.image.version` label, and its layers are gzip tar archives, the top one holding vLLM's
        wheel metadata where pip installs it (`.../dist-packages/vllm-<version>.dist-info/METADATA`).
        """
        image_config: dict = {"architecture": arch, "os": os_name, "rootfs": {"type": "layers", "diff_ids": []}}
        layers = [f"layer of {name} for {os_name}/{arch}".encode()]
        if vllm_version is not None:
            image_config["config"] = {"Labels": {"org.opencontainers.image.version": "24.04"}}
            site = "usr/local/lib/python3.12/dist-packages"
            layers = [
                tar_gz({"usr/lib/os-release": b"NAME=Ubuntu\n"}),
                tar_gz(
                    {
                        f"{site}/vllm/__init__.py": b"",
                        f"{site}/vllm-{vllm_version}.dist-info/METADATA": (
                            f"Metadata-Version: 2.1\nName: vllm\nVersion: {vllm_version}\n\nvLLM\n".encode()
                        ),
                    }
                ),
                tar_gz({"etc/motd": b"vllm image\n"}),
            ]
        config = json.dumps(image_config).encode()
        config_digest = self.push_blob(name, config)
        layer_type = (
            "application/vnd.oci.image.layer.v1.tar+gzip"
            if media_type == OCI_MANIFEST
            else "application/vnd.docker.image.rootfs.diff.tar.gzip"
        )
        layer_entries = []
        for layer in layers:
            layer_entries.append({"mediaType": layer_type, "digest": self.push_blob(name, layer), "size": len(layer)})
        body = {
            "schemaVersion": 2,
            "mediaType": media_type,
            "config": {"mediaType": _CONFIG_TYPES[media_type], "digest": config_digest, "size": len(config)},
            "layers": layer_entries,
        }
        return self.push_manifest(name, tag or "", media_type, body)

    def push_index(
        self,
        name: str,
        tag: str,
        arches: list[str],
        media_type: str = OCI_INDEX,
        attestation: bool = True,
        missing: tuple[str, ...] = (),
        vllm_version: str | None = None,
    ) -> str:
        """An OCI index (or Docker manifest list) over one image per arch; return its digest.

        `attestation` adds BuildKit's `unknown/unknown` provenance entry (OCI only); an arch in `missing` is listed
        but its image is not pushed (needs `index_children_must_exist=False`).
        """
        child_type = OCI_MANIFEST if media_type == OCI_INDEX else DOCKER_MANIFEST
        entries = []
        for arch in arches:
            if arch in missing:
                body = json.dumps({"schemaVersion": 2, "mediaType": child_type, "arch": arch}, indent=3).encode()
                child, size = digest_of(body), len(body)
            else:
                child = self.push_image(name, None, arch, child_type, vllm_version=vllm_version)
                size = self.sizes[child]
            platform = {"architecture": arch, "os": "linux", **({"variant": "v8"} if arch == "arm64" else {})}
            entries.append({"mediaType": child_type, "digest": child, "size": size, "platform": platform})
        if attestation and media_type == OCI_INDEX:
            att = self.push_image(name, None, "unknown", OCI_MANIFEST, os_name="unknown")
            entries.append(
                {
                    "mediaType": OCI_MANIFEST,
                    "digest": att,
                    "size": self.sizes[att],
                    "platform": {"architecture": "unknown", "os": "unknown"},
                    "annotations": {"vnd.docker.reference.type": "attestation-manifest"},
                }
            )
        return self.push_manifest(
            name, tag, media_type, {"schemaVersion": 2, "mediaType": media_type, "manifests": entries}
        )
