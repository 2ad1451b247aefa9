"""What a real node could change on this machine, read in one snapshot to compare before and after: the sysctls the
kubelet and the bridge plugin set, the directories kubelet, containerd and CNI write by fixed path, the mount table,
the network links and the top of every cgroup hierarchy."""

from __future__ import annotations

from pathlib import Path

from tests.realk8s.nodefiles import KUBELET_SYSCTLS

SYSCTLS = (*KUBELET_SYSCTLS, "net/ipv4/ip_forward", "net/ipv6/conf/all/forwarding")
DIRECTORIES = (
    "/var/lib/kubelet",
    "/var/lib/containerd",
    "/var/lib/cni",
    "/var/log/pods",
    "/var/log/containers",
    "/run/containerd",
    "/run/netns",
    "/opt/containerd",
    "/etc/cni",
    "/etc/kubernetes",
)


def _listing(path: Path) -> tuple[str, ...]:
    return tuple(sorted(p.name for p in path.iterdir())) if path.is_dir() else ()


def snapshot() -> dict[str, object]:
    """The host's state a real node must leave as it found it."""
    sysctls = {}
    for key in SYSCTLS:
        path = Path("/proc/sys") / key
        sysctls[key] = path.read_text().strip() if path.exists() else None
    mounts = sorted(line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines())
    cgroups = {h.name: _listing(h) for h in sorted(Path("/sys/fs/cgroup").iterdir()) if h.is_dir()}
    return {
        "sysctls": sysctls,
        "directories": {d: _listing(Path(d)) if Path(d).exists() else None for d in DIRECTORIES},
        "mounts": mounts,
        "links": _listing(Path("/sys/class/net")),
        "cgroups": cgroups,
    }
