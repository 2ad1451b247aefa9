"""Every alert's `runbook_url` lands on a section of the built site's runbook page: the default base is the site's
own address (mkdocs.yml site_url) plus the page, and the committed example PrometheusRule's links resolve too.
The README's links into docs/ land on built pages and anchors as well."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import yaml

from k3deploy.observe.alerts import rule_groups
from k3deploy.profile.load import load_profile
from k3deploy.profile.observe_spec import RUNBOOK_BASE_URL
from tests.conftest import REPO_ROOT
from tests.docs.site import Build, built_page, page_ids

K3 = "kimi-k3-gb300-tp16"
#: Every alert the profile can render: the guard's and the canary's with the serving ones.
ALL_ALERTS = [
    "kubernetes.guard=true",
    "observe.canary.enabled=true",
    "observe.pushgateway_url=http://pushgateway.monitoring.svc:9091",
]
EXAMPLE_RULE = REPO_ROOT / "manifests" / K3 / f"15-prometheusrule-{K3}-alerts.yaml"


def _site_url() -> str:
    url: str = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["site_url"]
    return url


def _lands(site: Build, url: str) -> bool:
    """The URL is a page of the built site (under site_url) that holds the URL's anchor."""
    base = _site_url()
    if not url.startswith(base):
        return False
    parts = urlsplit(url)
    html = site.site / url[len(base) :].split("#")[0] / "index.html"
    return html.is_file() and parts.fragment in page_ids(html)


def test_the_default_runbook_base_is_the_sites_runbook_page() -> None:
    assert _site_url() + "operations/runbooks/" == RUNBOOK_BASE_URL
    assert str(load_profile(K3).observe.runbook_base_url) == RUNBOOK_BASE_URL


def test_every_alerts_runbook_link_lands_in_the_built_site(site: Build) -> None:
    rules = [r for g in rule_groups(load_profile(K3, ALL_ALERTS)) for r in g["rules"] if "alert" in r]
    assert len(rules) == 20
    for rule in rules:
        assert _lands(site, rule["annotations"]["runbook_url"]), rule["annotations"]["runbook_url"]


def test_the_committed_example_rules_links_land_in_the_built_site(site: Build) -> None:
    rule = yaml.safe_load(EXAMPLE_RULE.read_text(encoding="utf-8"))
    urls = [r["annotations"]["runbook_url"] for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r]
    assert len(urls) >= 15
    for url in urls:
        assert _lands(site, url), url


def test_a_link_to_a_missing_anchor_does_not_land(site: Build) -> None:
    assert not _lands(site, RUNBOOK_BASE_URL + "#runbook-k3deploynosuchalert")
    assert not _lands(site, _site_url() + "operations/no-such-page/#runbook-k3deployleadernotready")


def test_the_readmes_links_into_the_docs_land_on_built_pages(site: Build) -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)", readme)
    assert len(links) >= 25
    for target, anchor in links:
        assert (REPO_ROOT / target).is_file(), target
        html = built_page(site.site, str(Path(target).relative_to("docs")))
        assert html.is_file(), target
        assert not anchor or anchor in page_ids(html), f"{target}#{anchor}"
