"""Local container images for the real nodes, written with the standard library: one uncompressed layer (a static
busybox and its applet links, plus any files a test gives) in an OCI image-layout tarball that `ctr images import`
reads, under the exact name a pod spec uses (so `imagePullPolicy: IfNotPresent` finds it and nothing is pulled).

The layout is the one of the OCI image spec (image-layout.md: `oci-layout`, `index.json`, `blobs/sha256/...`); the
name is the `io.containerd.image.name` annotation on the index entry, which containerd's importer
(core/images/archive/importer.go in containerd 1.6, `ImportIndex`) uses as the image's full name."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

#: The busybox applets a stand-in's scripts use, linked to /bin/busybox in the layer.
APPLETS = (
    "sh",
    "sleep",
    "cat",
    "echo",
    "touch",
    "ls",
    "mkdir",
    "id",
    "httpd",
    "nc",
    "wget",
    "true",
    "false",
    "env",
    "nslookup",
    "date",
    "test",
    "cp",
    "grep",
    "stat",
    "sed",
    "dd",
    "od",
    "printf",
    "tail",
)
#: The pause container: PID 1 of every pod sandbox, waiting until the kubelet stops the sandbox (upstream
#: build/pause/linux/pause.c, which also exits 0 on SIGINT/SIGTERM).
PAUSE_COMMAND = ("/bin/sh", "-c", "trap 'exit 0' TERM INT; while true; do sleep 3600 & wait $!; done")


@dataclass(frozen=True)
class Image:
    """An image to write: its full name, entrypoint and command, environment and extra files (path -> bytes, mode
    0755)."""

    name: str
    entrypoint: tuple[str, ...] = ()
    cmd: tuple[str, ...] = ("/bin/sh",)
    env: tuple[str, ...] = ("PATH=/bin",)
    files: dict[str, bytes] = field(default_factory=dict)


def full_name(name: str) -> str:
    """The name as containerd's CRI stores it: `docker.io/library/` added as the Docker reference grammar does."""
    first, _, rest = name.partition("/")
    if not rest:
        return f"docker.io/library/{name}"
    if "." not in first and ":" not in first and first != "localhost":
        return f"docker.io/{name}"
    return name


def _add(
    tar: tarfile.TarFile, path: str, data: bytes | None = None, link: str | None = None, mode: int = 0o755
) -> None:
    info = tarfile.TarInfo(path)
    info.mode = mode
    info.mtime = 0
    if link is not None:
        info.type = tarfile.SYMTYPE
        info.linkname = link
        tar.addfile(info)
    elif data is None:
        info.type = tarfile.DIRTYPE
        tar.addfile(info)
    else:
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))


def _layer(busybox: bytes, files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        dirs = {"bin", "tmp", "etc"}
        for path in files:
            parent = Path(path.lstrip("/")).parent
            dirs |= {str(p) for p in (parent, *parent.parents) if str(p) != "."}
        for directory in sorted(dirs):
            _add(tar, directory, mode=0o1777 if directory == "tmp" else 0o755)
        _add(tar, "bin/busybox", busybox)
        for applet in APPLETS:
            _add(tar, f"bin/{applet}", link="busybox")
        _add(tar, "etc/passwd", b"root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n", mode=0o644)
        _add(tar, "etc/group", b"root:x:0:\nnogroup:x:65534:\n", mode=0o644)
        for path, data in sorted(files.items()):
            _add(tar, path.lstrip("/"), data)
    return buffer.getvalue()


def _blob(tar: tarfile.TarFile, data: bytes) -> str:
    digest = hashlib.sha256(data).hexdigest()
    _add(tar, f"blobs/sha256/{digest}", data, mode=0o644)
    return f"sha256:{digest}"


def write_archive(path: Path, images: list[Image], busybox: Path) -> Path:
    """Write `images` as one OCI image-layout tarball at `path` (every image single-platform linux/amd64)."""
    static = busybox.read_bytes()
    with tarfile.open(path, "w") as tar:
        _add(tar, "blobs", mode=0o755)
        _add(tar, "blobs/sha256", mode=0o755)
        manifests = []
        for image in images:
            layer = _layer(static, image.files)
            layer_digest = _blob(tar, layer)
            config = {
                "architecture": "amd64",
                "os": "linux",
                "config": {
                    "Env": list(image.env),
                    "Entrypoint": list(image.entrypoint) or None,
                    "Cmd": list(image.cmd),
                },
                "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
            }
            config_bytes = json.dumps(config, sort_keys=True).encode()
            manifest = {
                "schemaVersion": 2,
                "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": {
                    "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": _blob(tar, config_bytes),
                    "size": len(config_bytes),
                },
                "layers": [
                    {"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": layer_digest, "size": len(layer)}
                ],
            }
            manifest_bytes = json.dumps(manifest, sort_keys=True).encode()
            tag = image.name.rsplit(":", 1)[1] if ":" in image.name.rsplit("/", 1)[-1] else "latest"
            manifests.append(
                {
                    "mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": _blob(tar, manifest_bytes),
                    "size": len(manifest_bytes),
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {
                        "io.containerd.image.name": full_name(image.name),
                        "org.opencontainers.image.ref.name": tag,
                    },
                }
            )
        _add(tar, "oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode(), mode=0o644)
        index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": manifests}
        _add(tar, "index.json", json.dumps(index).encode(), mode=0o644)
    return path
