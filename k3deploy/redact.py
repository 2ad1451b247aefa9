"""Credentials out of URLs before they are printed or stored. Pure.

An `--endpoint` such as `https://user:token@gateway/` authenticates through its userinfo; k3deploy sends it as
given, but every message, report, summary and recorded verdict shows `https://***@gateway/` instead.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

#: What stands for the userinfo of a URL shown or stored.
MASK = "***"


def redact_url(url: str) -> str:
    """`url` with its userinfo (user and password: a token is often put in the user part) replaced by MASK."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url if "@" not in url else MASK
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{MASK}@{host}"))


def redact_text(text: str, *urls: str | None) -> str:
    """`text` with each of `urls` that carries credentials, and its userinfo alone, replaced by the redacted form."""
    for url in urls:
        if not url:
            continue
        shown = redact_url(url)
        if shown == url:
            continue
        text = text.replace(url, shown)
        try:
            netloc = urlsplit(url).netloc
        except ValueError:
            continue
        userinfo = netloc.rsplit("@", 1)[0] if "@" in netloc else ""
        if userinfo:
            text = text.replace(userinfo + "@", MASK + "@")
    return text
