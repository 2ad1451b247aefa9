"""A fake vLLM interpreter for driving the real CLI on the local target in seconds.

`write_fake_python(folder)` writes an executable `python` to point `local.python` at. Run as
`python -m vllm.entrypoints.openai.api_server ARGS` it serves the OpenAI endpoints smoke uses (the scripted
server of tests/smoke: /health, /v1/models, /v1/completions and /v1/chat/completions with vLLM 0.32's request
contract (`model`, `stream`, `stream_options`, `ignore_eos`, `max_tokens` against `--max-model-len`), /metrics
counters that move with what it streamed); anything else (preflight's vLLM probe) runs the real interpreter.

Like vLLM's API server (vllm/entrypoints/openai/api_server.py, vllm/entrypoints/launchers/launcher.py
`create_server_socket`) it binds its socket before it starts the engine, without SO_REUSEPORT, and exits
with the bind error when the port is taken; it keeps an "engine core" child in its process group; it
rejects flags k3deploy never passes and a model folder without config.json (vLLM's "Invalid repository ID
or local directory"). Knobs, through the server's environment (set with `--set vllm.env.NAME=VALUE`):
FAKE_VLLM_START_DELAY_S (seconds before it binds, like vLLM's imports), FAKE_VLLM_CHUNK_DELAY_S (seconds
between streamed chunks, 0.002 unless set), FAKE_VLLM_METRICS=nan (NaN spec-decode counters).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from http.server import ThreadingHTTPServer
from pathlib import Path

from tests.smoke.scripted_server import Counters, Script, _Handler

REPO_ROOT = Path(__file__).resolve().parents[3]
SERVER_MODULE = "vllm.entrypoints.openai.api_server"


def write_fake_python(folder: Path) -> Path:
    """An executable stand-in for the vLLM interpreter in `folder`; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "python"
    path.write_text(
        f"#!{sys.executable}\n"
        "import os, sys\n"
        f"if sys.argv[1:3] == ['-m', {SERVER_MODULE!r}]:\n"
        f"    sys.path.insert(0, {str(REPO_ROOT)!r})\n"
        "    from tests.targets.local.fake_vllm import main\n"
        "    sys.exit(main(sys.argv[3:]))\n"
        f"os.execv({sys.executable!r}, [{sys.executable!r}, *sys.argv[1:]])\n",
        encoding="utf-8",
    )
    path.chmod(0o755)
    return path


def _parser() -> argparse.ArgumentParser:
    """The flags k3deploy's serve_args can pass (names as in vllm/engine/arg_utils.py); others are refused."""
    parser = argparse.ArgumentParser(prog="vllm.entrypoints.openai.api_server", allow_abbrev=False)
    for flag in (
        "--model",
        "--revision",
        "--served-model-name",
        "--tensor-parallel-size",
        "--pipeline-parallel-size",
        "--host",
        "--port",
        "--max-model-len",
        "--kv-cache-dtype",
        "--gpu-memory-utilization",
        "--dtype",
        "--load-format",
        "--max-num-seqs",
        "--attention-config",
        "--speculative-config",
        "--tool-call-parser",
        "--reasoning-parser",
    ):
        parser.add_argument(flag)
    for flag in ("--trust-remote-code", "--enforce-eager", "--enable-prefix-caching", "--no-enable-prefix-caching"):
        parser.add_argument(flag, action="store_true")
    return parser


class _NanCounters(Counters):
    """Counters whose spec-decode drafts series reads NaN (a broken exporter)."""

    def text(self, spec: bool) -> str:
        lines = super().text(spec).splitlines()
        return (
            "\n".join(
                re.sub(r" \S+$", " NaN", line) if line.startswith("vllm:spec_decode_num_drafts_total") else line
                for line in lines
            )
            + "\n"
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, sock: socket.socket, script: Script, counters: Counters) -> None:
        super().__init__(sock.getsockname()[:2], _Handler, bind_and_activate=False)
        self.socket.close()
        self.socket = sock
        self.script, self.counters, self.lock = script, counters, threading.Lock()
        self.bodies: list[dict] = []  # what the scripted handler records of every POST (tests/smoke/scripted_server.py)
        self.started = time.monotonic()  # the scripted handler's health_ready_after_s counts from here


def bind(host: str, port: int) -> socket.socket:
    """A listening socket as vLLM makes it: SO_REUSEADDR, no SO_REUSEPORT."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def serve(
    sock: socket.socket, served_name: str, speculative: bool, nan: bool = False, max_model_len: int | None = None
) -> None:
    """Serve the scripted OpenAI endpoints on `sock` until the process ends."""
    counters: Counters = _NanCounters() if nan else Counters()
    script = Script(
        models=[served_name],
        metrics="auto" if speculative else "no_spec",
        # A real engine never streams a reply in zero time; with no gap a loaded host hands the client every chunk in
        # one read, and smoke rightly measures no decode speed (seen in the soak test on a busy 2-core machine).
        chunk_delay_s=float(os.environ.get("FAKE_VLLM_CHUNK_DELAY_S", "0.002")),
        # vLLM refuses max_tokens above --max-model-len and clamps the output to what the context leaves.
        **({"max_model_len": max_model_len} if max_model_len else {}),
    )
    _Server(sock, script, counters).serve_forever(poll_interval=0.05)


def main(argv: list[str]) -> int:
    """`python -m vllm.entrypoints.openai.api_server ARGS`, faked."""
    args = _parser().parse_args(argv)
    print(f"(APIServer pid={os.getpid()}) INFO non-default args: {vars(args)}", flush=True)
    time.sleep(float(os.environ.get("FAKE_VLLM_START_DELAY_S", "0")))
    model = args.model or ""
    if model.startswith(("/", ".", "~")) and not (Path(model).expanduser() / "config.json").is_file():
        print(f"Value error, Invalid repository ID or local directory specified: '{model}'.", flush=True)
        return 1
    try:
        sock = bind(args.host, int(args.port))
    except OSError as exc:
        print(f"OSError: [Errno {exc.errno}] {exc.strerror}", flush=True)
        return 1
    spec = json.loads(args.speculative_config) if args.speculative_config else None
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])  # the engine core, in our group
    print(f"Starting vLLM API server on http://{args.host}:{args.port}", flush=True)
    serve(
        sock,
        args.served_model_name or model,
        spec is not None,
        nan=os.environ.get("FAKE_VLLM_METRICS") == "nan",
        max_model_len=int(args.max_model_len) if args.max_model_len else None,
    )
    return 0
