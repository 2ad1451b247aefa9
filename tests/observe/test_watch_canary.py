"""`k3deploy watch --prometheus` shows the canary's last run (observe.canary on): a real Pushgateway holds a run's
series as `bench --push` pushes them, a real Prometheus scrapes it (honor_labels), and watch's JSON lines and table
carry the run's time, decode tok/s, acceptance and verdict."""

from __future__ import annotations

import json

from k3deploy.bench.push import push
from k3deploy.observe import canary_series as series
from k3deploy.profile.load import load_profile
from tests.conftest import run_cli
from tests.observe.prometheus_server import start_prometheus, wait_for
from tests.observe.pushgateway_server import start_pushgateway
from tests.observe.test_canary_status import AT, ON, _kept

K3 = "kimi-k3-gb300-tp16"


def test_watch_shows_the_canarys_last_run_from_prometheus() -> None:
    profile = load_profile(K3, ON)
    with start_pushgateway() as gateway:
        push(gateway, series.samples(_kept(300.0, 4.7), AT.timestamp()), series.grouping_key(profile, 0))
        with start_prometheus([gateway.removeprefix("http://")], {}, job="pushgateway", honor_labels=True) as prom:
            wait_for(prom, f'count({series.DECODE}{{release="{K3}"}})', 1)
            sets = [x for s in ON for x in ("--set", s)]
            as_json = run_cli("watch", "-p", K3, *sets, "--prometheus", prom, "--count", "1", "-o", "json")
            table = run_cli("watch", "-p", K3, *sets, "--prometheus", prom, "--count", "1")
    assert as_json.returncode == 0, as_json.stderr
    (doc,) = [json.loads(x) for x in as_json.stdout.splitlines() if x.strip()]
    canary = doc["canary"]
    assert canary["decode_tok_s"] == 300.0 and canary["acceptance"]["low_entropy"] == 4.7
    assert canary["verdict"] == "decode 300.0 < 333 tok/s"
    # When: the push (the gateway's push_time_seconds), not the report's own stamp: the run just pushed.
    assert canary["finished_at"] is not None
    assert table.returncode == 0, table.stderr
    assert "last canary: " in table.stderr and "decode 300.0 tok/s" in table.stderr
    assert "decode 300.0 < 333 tok/s" in table.stderr
    plain = run_cli("watch", "-p", K3, "--prometheus", "http://127.0.0.1:9", "--count", "1", "-o", "json")
    assert "canary" not in plain.stdout  # canary off: no canary key (and here no Prometheus at all)
