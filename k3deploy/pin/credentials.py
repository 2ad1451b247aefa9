"""Registry credentials for `pin` and preflight, from where a machine keeps them, never from a profile.

A profile is written out by `pin` and carried into the rendered profile ConfigMap, so it holds no credential (its
URLs are refused with userinfo: profile/names.py). Credentials for a registry or a mirror come from, in order:
1. the userinfo of the `K3DEPLOY_REGISTRY_URL` URL that names it (`https://user:password@mirror/...`);
2. the Docker client config: `$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`, its `auths` entry for the
   host (`auth` = base64 of `user:password`, or `username` and `password`), looked up as docker does
   (docker/cli cli/config/configfile/file.go GetAuthConfig: the host, or `https://host` and `http://host`, and Docker
   Hub under `https://index.docker.io/v1/`). Credential helpers (`credsStore`, `credHelpers`) are not run.
They answer a Basic challenge, and go to a Bearer challenge's token server as docker sends them
(distribution docs/content/spec/auth/token.md). The nodes pull with `kubernetes.image_pull_secrets` (Secret names).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
from pathlib import Path
from urllib.parse import unquote

from k3deploy.pin.mirrors import registry_key
from k3deploy.pin.oci import DOCKER_HUB

DOCKER_HUB_AUTH_KEY = "https://index.docker.io/v1/"
#: A Docker config larger than this is not a client config: not read.
_MAX_CONFIG_BYTES = 1 << 20


def basic_header(user: str, password: str) -> str:
    """The `Authorization` value of Basic credentials."""
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def docker_config_path() -> Path:
    """`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`."""
    folder = os.environ.get("DOCKER_CONFIG")
    return Path(folder) / "config.json" if folder else Path.home() / ".docker" / "config.json"


def _entry_credentials(entry: object) -> tuple[str, str] | None:
    if not isinstance(entry, dict):
        return None
    auth = entry.get("auth")
    if isinstance(auth, str) and auth:
        try:
            name, sep, secret = base64.b64decode(auth, validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return (name, secret) if sep and name else None
    user, password = entry.get("username"), entry.get("password")
    if isinstance(user, str) and user and isinstance(password, str):
        return user, password
    return None


def from_docker_config(host: str, config: dict[str, object]) -> tuple[str, str] | None:
    """(user, password) the Docker config `config` holds for registry `host` (host[:port]); None when none."""
    auths = config.get("auths")
    if not isinstance(auths, dict):
        return None
    keys = [host, f"https://{host}", f"http://{host}"]
    if registry_key(host) == DOCKER_HUB:
        keys.insert(0, DOCKER_HUB_AUTH_KEY)
    for key in keys:
        for written, entry in auths.items():
            if isinstance(written, str) and written.rstrip("/").lower() == key.rstrip("/").lower():
                found = _entry_credentials(entry)
                if found is not None:
                    return found
    return None


def read_docker_config() -> dict[str, object]:
    """The Docker client config, or {} when there is none or it is not a JSON object (a credential is optional)."""
    path = docker_config_path()
    try:
        with path.open("rb") as handle:
            data = handle.read(_MAX_CONFIG_BYTES + 1)
    except OSError:
        return {}
    if len(data) > _MAX_CONFIG_BYTES:
        return {}
    try:
        config: object = json.loads(data)
    except ValueError:
        return {}
    return config if isinstance(config, dict) else {}


def lookup(host: str, userinfo: str | None) -> str | None:
    """The `Authorization` value for registry `host`: the environment URL's userinfo, else the Docker config's."""
    if userinfo:
        user, _, password = userinfo.partition(":")
        return basic_header(unquote(user), unquote(password))
    found = from_docker_config(host, read_docker_config())
    return basic_header(*found) if found else None
