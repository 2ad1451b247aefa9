"""Start and stop one real control plane: etcd (data on tmpfs), kube-apiserver, kube-controller-manager,
kube-scheduler, KWOK with GB300 nodes, and the LeaderWorkerSet controller run outside the cluster with its webhooks
registered by URL, a stand-in for the NVIDIA DRA driver (tests/realk8s/dra.py). Every process is stopped by the pid this module started; every directory it made is removed."""

from __future__ import annotations

import base64
import contextlib
import secrets
import shutil
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.realk8s import audit, kueue, objects
from tests.realk8s.binaries import Binaries, node_tools
from tests.realk8s.certs import CertAuthority, CertPair, service_account_keys
from tests.realk8s.client import Api, resource_path, wait_until
from tests.realk8s.dra import DraDriver
from tests.realk8s.ociimage import Image
from tests.realk8s.plane_options import PlaneOptions
from tests.realk8s.procs import Process, free_port
from tests.realk8s.provisioner import DRIVER, Provisioner
from tests.realk8s.realnode import RealNode
from tests.support import crds

#: Users of the static token file: name -> groups. The admin is in system:masters; the test user and the deployer
#: in no group (RBAC grants them nothing but discovery until a test binds roles: the user for the plane's own
#: tests, the deployer for the CLI's); the components use the identities bootstrap RBAC binds.
USERS: dict[str, list[str]] = {
    "realk8s-admin": ["system:masters"],
    "realk8s-user": [],
    "realk8s-deployer": [],
    # The user a fleet measurement runs the CLI as (tests/realk8s/cost.py): all it may do, and only its requests
    # counted from the audit log.
    "realk8s-bench": ["system:masters"],
    "system:kube-controller-manager": [],
    "system:kube-scheduler": [],
    "kwok": [],
    "lws-controller": [],
    "kueue": [],
}
START_TIMEOUT_S = 120.0


@dataclass
class Plane:
    """One running plane: `url`, `ca_file`, `tokens[user]`, `kubeconfig(path, user)`, `api` (admin), `processes`."""

    binaries: Binaries
    options: PlaneOptions = field(default_factory=PlaneOptions)
    processes: dict[str, Process] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)
    url: str = ""
    #: Kubeconfigs a fixture wrote for the admin and the test user (None until written).
    admin_kubeconfig: Path | None = None
    user_kubeconfig: Path | None = None

    def __post_init__(self) -> None:
        self._made: list[Path] = []
        self._api: Api | None = None
        self.dir = Path()
        self.etcd_url = ""
        self.crds: list[str] = []
        self.provisioner: Provisioner | None = None
        self.dra: DraDriver | None = None
        self.real_nodes: list[RealNode] = []
        #: Component name -> a URL that answers 200 when it is ready (kube-apiserver: "/readyz" on `url`).
        self.ready_urls: dict[str, str] = {}

    # -- paths and clients -------------------------------------------------------------------------------------
    @property
    def ca_file(self) -> Path:
        """The CA of every serving certificate of the plane."""
        return self.dir / "pki" / "ca.crt"

    @property
    def api(self) -> Api:
        """A client of kube-apiserver with the admin token."""
        assert self._api is not None, "plane not started"
        return self._api

    def client(self, user: str) -> Api:
        """A client with `user`'s token (close it after use)."""
        return Api(self.url, self.tokens[user], self.ca_file)

    def serving_pair(self, name: str) -> CertPair:
        """A serving certificate for 127.0.0.1 signed by the plane's CA (for a server put in front of the plane)."""
        return self._ca.serving(name, ["localhost"])

    def kubeconfig(self, path: Path, user: str = "realk8s-admin", server: str | None = None) -> Path:
        """Write a kubeconfig for `user`'s token to `path` (for `server`, default the API server itself)."""
        ca = base64.b64encode(self.ca_file.read_bytes()).decode()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {"name": "realk8s", "cluster": {"server": server or self.url, "certificate-authority-data": ca}}
            ],
            "users": [{"name": user, "user": {"token": self.tokens[user]}}],
            "contexts": [{"name": "realk8s", "context": {"cluster": "realk8s", "user": user}}],
            "current-context": "realk8s",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)
        return path

    # -- for the plane's optional components (tests/realk8s/kueue.py) -------------------------------------------
    @property
    def ca_pem(self) -> bytes:
        """The plane CA's certificate, PEM."""
        return self._ca.pem

    def spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Process:
        """Start a process the plane stops with the others (its log under the plane's logs/)."""
        return self._spawn(name, argv, env)

    def component_kubeconfig(self, user: str) -> Path:
        """A kubeconfig for one of USERS, written in the plane's folder."""
        return self._component_kubeconfig(user)

    def wait_process(self, process: Process, what: str, probe: Any) -> None:
        """Wait until `probe()` is truthy, failing at once with its log if `process` exits."""
        self._wait(process, what, probe)

    # -- start -------------------------------------------------------------------------------------------------
    def start(self) -> Plane:
        """Start every component in dependency order and wait until each is ready; stops what started on failure."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _mkdtemp(self, prefix: str, parent: Path | None = None) -> Path:
        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        self._made.append(path)
        return path

    def _start(self) -> None:
        crd_files = self._crd_files()  # before any process: without the CRDs the plane cannot serve the set
        self.dir = self.options.workdir or self._mkdtemp("realk8s-")
        (self.dir / "pki").mkdir(parents=True, exist_ok=True)
        (self.dir / "logs").mkdir(exist_ok=True)
        ca = CertAuthority(self.dir / "pki")
        self._ca = ca
        self.tokens = {user: secrets.token_hex(16) for user in USERS}
        token_file = self.dir / "tokens.csv"
        token_file.write_text(
            "".join(f'{tok},{user},{user},"{",".join(USERS[user])}"\n' for user, tok in self.tokens.items())
        )
        token_file.chmod(0o600)
        self._start_etcd()
        self._start_apiserver(ca, token_file)
        self.install_crds(crd_files)
        self._start_controllers()
        self._start_kwok()
        self._start_lws(ca)
        self._baseline()
        if self.options.kueue is not None:
            kueue.start(self, self.options.kueue)

    def _spawn(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> Process:
        process = Process(name, argv, self.dir / "logs" / f"{name}.log").start(env)
        self.processes[name] = process
        return process

    def _wait(self, process: Process, what: str, probe: Any) -> None:
        def checked() -> Any:
            if not process.running():
                raise RuntimeError(
                    f"{process.name} exited ({process.popen and process.popen.returncode}):\n{process.tail()}"
                )
            return probe()

        try:
            wait_until(what, checked, START_TIMEOUT_S)
        except TimeoutError as exc:
            raise TimeoutError(f"{exc}\n{process.name} log:\n{process.tail()}") from None

    def _start_etcd(self) -> None:
        shm = Path("/dev/shm")
        data = self._mkdtemp("realk8s-etcd-", shm if shm.is_dir() else None)
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        etcd = self._spawn(
            "etcd",
            [
                self.binaries.path("etcd"),
                "--name=realk8s",
                f"--data-dir={data}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=realk8s=http://127.0.0.1:{peer}",
                "--listen-metrics-urls=",
                "--unsafe-no-fsync",
                "--log-level=warn",
            ],
        )
        self._wait(etcd, "etcd /health", lambda: httpx.get(f"{self.etcd_url}/health", timeout=2).status_code == 200)

    def _start_apiserver(self, ca: CertAuthority, token_file: Path) -> None:
        port = free_port()
        self.url = f"https://127.0.0.1:{port}"
        serving = ca.serving(
            "kube-apiserver", ["localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"]
        )
        sa = service_account_keys(self.dir / "pki")
        self._sa = sa
        kubelet_client = ca.client("kube-apiserver-kubelet-client", "kube-apiserver-kubelet-client", ["system:masters"])
        apiserver = self._spawn(
            "kube-apiserver",
            [
                self.binaries.path("kube-apiserver"),
                f"--etcd-servers={self.etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.dir / 'pki'}",
                f"--tls-cert-file={serving.cert}",
                f"--tls-private-key-file={serving.key}",
                f"--client-ca-file={ca.cert_file}",
                f"--token-auth-file={token_file}",
                "--authorization-mode=Node,RBAC",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={sa.cert}",
                f"--service-account-signing-key-file={sa.key}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--allow-privileged=true",
                "--profiling=false",
                # logs, exec and port-forward on the real nodes (tests/realk8s/realnode.py): the kubelet
                # authenticates kube-apiserver by this certificate and authorises it by a SubjectAccessReview.
                f"--kubelet-client-certificate={kubelet_client.cert}",
                f"--kubelet-client-key={kubelet_client.key}",
                "--kubelet-preferred-address-types=InternalIP,Hostname",
                *audit.flags(self.dir, list(self.options.audit_users)),
            ],
        )
        self._api = Api(self.url, self.tokens["realk8s-admin"], self.ca_file)
        self.ready_urls["kube-apiserver"] = f"{self.url}/readyz"
        self._wait(apiserver, "kube-apiserver /readyz", lambda: self.api.request("GET", "/readyz").status_code == 200)

    def _crd_files(self) -> list[Path]:
        """The control plane's CRDs from the build (LWS's, those of the LWS release built, and KWOK's), the serving
        set's other kinds from .ci/fetch-crds: nothing from beside the checkout."""
        built = sorted((self.binaries.directory / "crds").glob("*.yaml"))
        serving = crds.find()
        return built + [serving / name for kind, name in crds.FILES.items() if kind != "LeaderWorkerSet"]

    def install_crds(self, files: list[Path]) -> None:
        """Apply the CustomResourceDefinitions in `files` and wait until each is Established (kept in `crds`)."""
        names = []
        for path in files:
            for crd in yaml.safe_load_all(path.read_text()):
                if not crd or crd.get("kind") != "CustomResourceDefinition":
                    continue
                name = crd["metadata"]["name"]
                self.api.apply(resource_path("apiextensions.k8s.io/v1", "customresourcedefinitions", name=name), crd)
                names.append(name)

        def established() -> bool:
            for name in names:
                crd = self.api.get(resource_path("apiextensions.k8s.io/v1", "customresourcedefinitions", name=name))
                conditions = {c["type"]: c["status"] for c in (crd.get("status") or {}).get("conditions") or []}
                if conditions.get("Established") != "True":
                    return False
            return True

        wait_until("the CRDs to be Established", established, START_TIMEOUT_S)
        self.crds += names

    def _component_kubeconfig(self, user: str) -> Path:
        return self.kubeconfig(self.dir / f"{user.replace(':', '-')}.kubeconfig", user)

    def _start_controllers(self) -> None:
        for user in ("kwok", "lws-controller"):
            # Bootstrap RBAC has no roles for these two; the upstream installs give them broad ClusterRoles.
            binding = objects.cluster_admin_binding(user)
            self.api.apply(
                resource_path("rbac.authorization.k8s.io/v1", "clusterrolebindings", name=binding["metadata"]["name"]),
                binding,
            )
        policy, policy_binding = objects.kwok_delete_policy("kwok")
        for obj, plural in (
            (policy, "validatingadmissionpolicies"),
            (policy_binding, "validatingadmissionpolicybindings"),
        ):
            self.api.apply(resource_path("admissionregistration.k8s.io/v1", plural, name=obj["metadata"]["name"]), obj)
        kcm_cfg = self._component_kubeconfig("system:kube-controller-manager")
        kcm_port = free_port()
        kcm = self._spawn(
            "kube-controller-manager",
            [
                self.binaries.path("kube-controller-manager"),
                f"--kubeconfig={kcm_cfg}",
                f"--authentication-kubeconfig={kcm_cfg}",
                f"--authorization-kubeconfig={kcm_cfg}",
                "--bind-address=127.0.0.1",
                f"--secure-port={kcm_port}",
                f"--cert-dir={self.dir / 'pki' / 'kcm'}",
                "--leader-elect=false",
                f"--service-account-private-key-file={self._sa.key}",
                f"--root-ca-file={self.ca_file}",
                "--use-service-account-credentials=true",
                f"--cluster-signing-cert-file={self._ca.cert_file}",
                f"--cluster-signing-key-file={self._ca.key_file}",
            ],
        )
        sched_cfg = self._component_kubeconfig("system:kube-scheduler")
        sched_port = free_port()
        sched = self._spawn(
            "kube-scheduler",
            [
                self.binaries.path("kube-scheduler"),
                f"--kubeconfig={sched_cfg}",
                f"--authentication-kubeconfig={sched_cfg}",
                f"--authorization-kubeconfig={sched_cfg}",
                "--bind-address=127.0.0.1",
                f"--secure-port={sched_port}",
                f"--cert-dir={self.dir / 'pki' / 'scheduler'}",
                # The scheduler's own net for a pod whose requeue event it missed: after this long in its
                # unschedulable queue a pod is tried again (checked every 30 s; pkg/scheduler/backend/queue
                # scheduling_queue.go `flushUnschedulablePodsLeftover`). Its default of 5 min outlasts k3deploy's
                # 120 s unschedulable grace; on the tier a prefetch pod tried 5 times in its first 0.1 s stayed
                # "unbound immediate PersistentVolumeClaims", never tried again, past that grace (1 of 131 tests).
                "--pod-max-in-unschedulable-pods-duration=20s",
                "--leader-elect=false",
            ],
        )
        for process, port in ((kcm, kcm_port), (sched, sched_port)):
            # Their serving certificates are self-signed in --cert-dir; the probe is local and reads only /healthz.
            url = f"https://127.0.0.1:{port}/healthz"
            self._wait(
                process,
                f"{process.name} /healthz",
                lambda u=url: httpx.get(u, verify=False, timeout=2).status_code == 200,
            )

    def _start_kwok(self) -> None:
        config = self.dir / "kwok.yaml"
        config.write_text(objects.kwok_config(self.binaries.directory / "stages"))
        port = free_port()
        kwok = self._spawn(
            "kwok",
            [
                self.binaries.path("kwok"),
                f"--kubeconfig={self._component_kubeconfig('kwok')}",
                f"--config={config}",
                "--manage-all-nodes=false",
                f"--manage-nodes-with-annotation-selector={objects.KWOK_NODE_ANNOTATION}=fake",
                f"--server-address=127.0.0.1:{port}",
                "--node-ip=127.0.0.1",
                f"--node-port={port}",
                "--cidr=10.244.0.1/16",
                # Pod logs from the cluster's Logs and ClusterLogs objects, pod ports from its PortForward objects:
                # kube-apiserver proxies /log and /portforward to the node's address and port, which is this server.
                "--enable-crds=Logs,ClusterLogs,PortForward",
            ],
        )
        version = self.binaries.versions["K8S_VERSION"]
        cpu = [objects.cpu_node(f"cpu-{i + 1:02d}", version) for i in range(self.options.cpu_nodes)]
        self.add_nodes(self.options.gb300(version) + cpu, kwok)

    def add_nodes(self, nodes: list[dict[str, Any]], kwok: Process | None = None) -> None:
        """Create nodes for KWOK to manage and wait until it reports them Ready."""
        for node in nodes:
            self.api.create("/api/v1/nodes", node)

        names = {node["metadata"]["name"] for node in nodes}

        def ready() -> bool:
            # One list per poll, not a get per node: a fleet plane has hundreds.
            ready = {
                live["metadata"]["name"]
                for live in self.api.get("/api/v1/nodes")["items"]
                if {c["type"]: c["status"] for c in live.get("status", {}).get("conditions", [])}.get("Ready") == "True"
            }
            return names <= ready

        self._wait(kwok or self.processes["kwok"], "the GB300 nodes to be Ready", ready)

    def add_real_node(self, name: str | None = None, images: list[Image] | None = None) -> RealNode:
        """Start a real node (containerd and a kubelet, tests/realk8s/realnode.py) with `images` imported beside the
        pause image, and wait until it is Ready; it stops with the plane, or by its own `stop()`."""
        name = name or f"real-{len(self.real_nodes) + 1:02d}"
        port = int(self.url.rsplit(":", 1)[1])
        directory = self.dir / "nodes" / name
        directory.mkdir(parents=True)
        node = RealNode(name, directory, self.api, port, self._ca, node_tools(self.binaries), list(images or []))
        node.start()
        self.real_nodes.append(node)
        return node

    def _start_lws(self, ca: CertAuthority) -> None:
        certs = self.dir / "pki" / "lws"
        certs.mkdir()
        pair = ca.serving("lws-webhook", ["localhost"])
        shutil.copy(pair.cert, certs / "tls.crt")
        shutil.copy(pair.key, certs / "tls.key")
        webhook_port, health_port = free_port(), free_port()
        config = self.dir / "lws.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.lws.x-k8s.io/v1alpha1",
                    "kind": "Configuration",
                    "leaderElection": {"leaderElect": False},
                    "internalCertManagement": {"enable": False},
                    "webhook": {"host": "127.0.0.1", "port": webhook_port, "certDir": str(certs)},
                    "metrics": {"bindAddress": "0"},
                    "health": {"healthProbeBindAddress": f"127.0.0.1:{health_port}"},
                }
            )
        )
        lws = self._spawn(
            "lws-controller",
            [self.binaries.path("lws-controller"), f"--config={config}"],
            env={"KUBECONFIG": str(self._component_kubeconfig("lws-controller"))},
        )
        ready = f"http://127.0.0.1:{health_port}/readyz"
        self.ready_urls["lws-controller"] = ready
        self._wait(lws, "the LWS controller /readyz", lambda: httpx.get(ready, timeout=2).status_code == 200)
        hook_url = f"https://127.0.0.1:{webhook_port}"
        with httpx.Client(verify=ssl.create_default_context(cafile=str(self.ca_file)), timeout=2) as probe:
            self._wait(lws, "the LWS webhook server", lambda: probe.get(hook_url).status_code > 0)
        for hook in objects.lws_webhooks(self.binaries.directory / "webhook", hook_url, ca.pem):
            plural = hook["kind"].lower() + "s"
            self.api.apply(
                resource_path("admissionregistration.k8s.io/v1", plural, name=hook["metadata"]["name"]), hook
            )

    def _baseline(self) -> None:
        rc = objects.runtime_class()
        self.api.apply(resource_path("node.k8s.io/v1", "runtimeclasses", name="nvidia"), rc)
        # shared-rwx (the default): a shared file system's CSI driver, provisioned by the stand-in; node-local:
        # pre-created ReadWriteOnce volumes the real PV controller binds.
        for sc, provisioner, default in (
            ("shared-rwx", DRIVER, True),
            ("node-local", "kubernetes.io/no-provisioner", False),
        ):
            obj = objects.storage_class(sc, provisioner, default)
            self.api.apply(resource_path("storage.k8s.io/v1", "storageclasses", name=sc), obj)
        for i in range(8):
            pv = objects.volume(f"node-local-{i:02d}", "node-local", modes=("ReadWriteOnce",))
            self.api.apply(resource_path("v1", "persistentvolumes", name=pv["metadata"]["name"]), pv)
        self.provisioner = Provisioner(self.client("realk8s-admin")).start()
        # DRA is GA in 1.34 (resource.k8s.io/v1 served, the scheduler's DynamicResources plugin and the
        # resourceclaim controller on by default): only the NVIDIA driver's part is a stand-in.
        self.dra = DraDriver(self.client("realk8s-admin")).start()
        namespace, deployment = objects.lws_workload(self.binaries.versions["LWS_VERSION"])
        self.api.apply(resource_path("v1", "namespaces", name="lws-system"), namespace)
        self.api.apply(resource_path("apps/v1", "deployments", "lws-system", "lws-controller-manager"), deployment)
        # The ServiceAccount admission plugin needs the namespace's default account, made by the real controller.
        wait_until(
            "the default ServiceAccount",
            lambda: self.api.find("/api/v1/namespaces/default/serviceaccounts/default"),
            START_TIMEOUT_S,
        )

    # -- stop --------------------------------------------------------------------------------------------------
    def stop(self) -> None:
        """Stop every started process (reverse order, by the pid started) and remove the directories made."""
        for node in reversed(self.real_nodes):
            with contextlib.suppress(Exception):
                node.stop()
        self.real_nodes.clear()
        for helper in (self.provisioner, self.dra):
            if helper is not None:
                helper.stop()
                helper.api.close()
        for process in reversed(list(self.processes.values())):
            with contextlib.suppress(Exception):
                process.stop()
        if self._api is not None:
            self._api.close()
        for path in reversed(self._made):
            shutil.rmtree(path, ignore_errors=True)
        self._made.clear()

    def __enter__(self) -> Plane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
