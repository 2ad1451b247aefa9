"""What smoke asks the server for: measured requests sampled as the profile says (the GB300 profile: as the published
figure was measured, T=1.0 / top_p 0.95, ending at EOS), correctness probes always greedy with reasoning off."""

from __future__ import annotations

from k3deploy.profile import load_profile
from k3deploy.report.model import Status
from k3deploy.smoke.correctness import PROBES
from k3deploy.smoke.runner import run_smoke
from tests.smoke.scripted_server import MODEL, Script, scripted_server
from tests.smoke.test_faults import RIGHT_ANSWERS

#: The GB300 profile served by the scripted server, small enough to run in a second.
SETS = [
    f"model.served_name={MODEL}",
    "smoke.requests=3",
    "smoke.output_tokens=40",
    "smoke.correctness_max_tokens=64",
    "smoke.request_timeout_s=10",
    "smoke.overall_timeout_s=60",
]


def test_the_gb300_profile_samples_like_the_published_run() -> None:
    smoke = load_profile("kimi-k3-gb300-tp16").smoke
    assert (smoke.temperature, smoke.top_p, smoke.ignore_eos) == (1.0, 0.95, False)
    assert 0 < smoke.decode_tolerance < 1


def test_measured_requests_are_sampled_and_probes_are_greedy() -> None:
    profile = load_profile("kimi-k3-gb300-tp16", SETS)
    answers = {p.prompt: RIGHT_ANSWERS[p.id] for p in PROBES}
    with scripted_server(Script(answers=answers)) as srv:
        report = run_smoke(profile, srv.url)
        bodies = list(srv.bodies)
    probe_prompts = {p.prompt for p in PROBES}
    probes = [b for b in bodies if b["messages"][-1]["content"] in probe_prompts]
    measured = [b for b in bodies if b["messages"][-1]["content"] not in probe_prompts]
    assert len(probes) == len(PROBES) and len(measured) == 1 + 3  # the warm-up and the measured requests
    for body in probes:
        assert body["temperature"] == 0.0 and "top_p" not in body and body["ignore_eos"] is False
    for body in measured:
        assert (body["temperature"], body["top_p"], body["ignore_eos"]) == (1.0, 0.95, False)
    checks = {c.name: c for c in report.checks}
    # The scripted model ends its answers after 12 tokens of the 40 asked: without ignore_eos that is no failure.
    assert checks["throughput"].status is not Status.FAIL, checks["throughput"].detail
    assert all(r.ok and r.completion_tokens == 12 for r in report.requests if r.phase == "measured")


def test_greedy_profiles_keep_ignore_eos_and_send_no_top_p() -> None:
    profile = load_profile("local-cpu", ["smoke.requests=2", "smoke.output_tokens=20", "smoke.overall_timeout_s=60"])
    with scripted_server() as srv:
        run_smoke(profile, srv.url)
        bodies = list(srv.bodies)
    assert bodies and all(b["ignore_eos"] is True and b["temperature"] == 0.0 and "top_p" not in b for b in bodies)


def test_up_s_headline_names_the_band() -> None:
    from k3deploy.smoke.headline import headline, headline_lines

    profile = load_profile("kimi-k3-gb300-tp16", SETS)
    with scripted_server(Script(answers={p.prompt: RIGHT_ANSWERS[p.id] for p in PROBES})) as srv:
        report = run_smoke(profile, srv.url)
    lines = headline_lines(headline(report, model=profile.model.id, rehearsal=False))
    assert "vs target 370 less 15%, 464 tok/s published peak" in lines[1]
