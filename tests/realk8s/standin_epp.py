"""The endpoint picker's stand-in image (kubernetes.routing: inference-pool): the real one
(ghcr.io/llm-d/llm-d-router-endpoint-picker) cannot run here, it watches an InferencePool through a Gateway's data
plane and scores vLLM's /metrics. Under the same name, `/epp` (the real image's ENTRYPOINT, llm-d/llm-d-router
Dockerfile.epp) does what the rendered Deployment's probes and mounts expect of it, and no less:

- it reads `--config-file` and exits 1 unless the file is an EndpointPickerConfig (the real one fails to start on a
  missing or unparsable config, cmd/epp/runner/runner.go);
- it reports what the kubelet gave it, one `key value` line each (its args, uid and gid, the downward-API env, its
  capabilities, no_new_privs and seccomp mode, and whether `/`, `/tmp` and the config folder take a file);
- it answers the kubelet's gRPC probes (`grpc.health.v1.Health/Check`, HTTP/2 without TLS, one connection per probe
  as pkg/probe/grpc/grpc.go makes them) on `--grpc-health-port` (default 9003, as upstream's flag), with busybox's
  `nc -ll -e` and a shell that reads the HTTP/2 frames: NOT_SERVING to the first check, as the real one answers
  until its datastore has synced the pool (cmd/epp/runner/health.go, `healthServer.Check` without leader
  election), SERVING after, which takes a file in /tmp (so a read-only /tmp never turns Ready); each check is logged
  with the service it asked for;
- it serves /metrics on the metrics port (9090, upstream's default) and exits 0 on SIGTERM.

The ext-proc port (9002) is not served: no proxy calls it here."""

from __future__ import annotations

from tests.realk8s.ociimage import Image

#: The image the built-in GB300 profile renders (kubernetes.epp_image's default).
EPP = "ghcr.io/llm-d/llm-d-router-endpoint-picker:v0.9.0"

_EPP = b"""#!/bin/sh
echo "args $*"
echo "uid $(id -u)"
echo "gid $(id -g)"
echo "pod $NAMESPACE/$POD_NAME"
grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status | sed 's/:\t*/ /'
config= health=9003 previous=
for arg in "$@"; do
  case $previous in --config-file) config=$arg ;; --grpc-health-port) health=$arg ;; esac
  previous=$arg
done
grep -q '^kind: EndpointPickerConfig$' "$config" || { echo "no EndpointPickerConfig in '$config'" >&2; exit 1; }
for path in / /tmp "${config%/*}"; do
  if out=$(touch "$path/.standin-write" 2>&1); then echo "write $path ok"; rm -f "$path/.standin-write"
  else echo "write $path ${out##*: }"; fi
done
httpd -f -p 9090 -h /srv/standin & pids=$!
nc -ll -p "$health" -e /usr/local/bin/grpc-health & pids="$pids $!"
trap 'kill $pids; exit 0' TERM
wait
"""
#: One connection: the client's preface, then its frames (9-byte header, payload) until GOAWAY or EOF. SETTINGS and
#: PING are acknowledged; a request's DATA frame (END_STREAM) is answered on its stream with the response headers,
#: the HealthCheckResponse (status 1 SERVING or 2 NOT_SERVING) and the trailers `grpc-status: 0`, each header as an
#: HPACK literal without indexing (RFC 7541 6.2.2) or the static table's `:status: 200` (index 8).
_GRPC_HEALTH = b"""#!/bin/sh
bytes() { dd bs=1 count="$1" 2>/dev/null | od -An -v -tu1; }
out() { for b in "$@"; do printf "\\\\$(printf %03o "$b")"; done; }
frame() {
  out $(($1 >> 16 & 255)) $(($1 >> 8 & 255)) $(($1 & 255)) "$2" "$3" \\
    $(($4 >> 24 & 127)) $(($4 >> 16 & 255)) $(($4 >> 8 & 255)) $(($4 & 255))
}
[ "$(dd bs=1 count=24 2>/dev/null)" = "$(printf 'PRI * HTTP/2.0\\r\\n\\r\\nSM\\r\\n\\r\\n')" ] || exit 0
frame 0 4 0 0
while :; do
  set -- $(bytes 9)
  [ $# -eq 9 ] || exit 0
  len=$(($1 << 16 | $2 << 8 | $3)) type=$4 flags=$5 stream=$(($6 << 24 & 0x7f000000 | $7 << 16 | $8 << 8 | $9))
  case $type in
  0)
    service=$(dd bs=1 count="$len" 2>/dev/null | tail -c +8)
    [ $((flags & 1)) = 1 ] || continue
    if [ -e /tmp/.standin-pool-synced ]; then status=1; else status=2; touch /tmp/.standin-pool-synced; fi
    echo "grpc-health service=$service status=$status" >&2
    frame 32 1 4 "$stream"; out 136 0 12; printf content-type; out 16; printf application/grpc
    frame 7 0 0 "$stream"; out 0 0 0 0 2 8 "$status"
    frame 15 1 5 "$stream"; out 0 11; printf grpc-status; out 1; printf 0
    ;;
  4) bytes "$len" >/dev/null; [ $((flags & 1)) = 1 ] || frame 0 4 1 0 ;;
  6) payload=$(bytes "$len"); [ $((flags & 1)) = 1 ] || { frame 8 6 1 0; out $payload; } ;;
  7) exit 0 ;;
  *) [ "$len" -eq 0 ] || bytes "$len" >/dev/null ;;
  esac
done
"""
EPP_IMAGE = Image(
    EPP,
    entrypoint=("/epp",),
    cmd=(),
    env=("PATH=/usr/local/bin:/bin",),
    files={"/epp": _EPP, "/usr/local/bin/grpc-health": _GRPC_HEALTH, "/srv/standin/metrics": b"# stand-in\n"},
)
