"""Credentials out of URLs before they are printed or stored. Pure.

An `--endpoint` such as `https://user:token@gateway/` authenticates through its userinfo; k3deploy sends it as
given, but every message, report, summary and recorded verdict shows `https://***@gateway/` instead.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

#: What stands for the userinfo of a URL shown or stored.
MASK = "***"


def redact_url(url: str) -> str:
    """`url` with its userinfo (user and password: a token is often put in the user part) replaced by MASK.

    A URL urlsplit misreads (a password holding `/`, `?`, `#` or a bracket puts part of it in the host, the
    path or the port) is masked from the scheme to its last `@`: a message may show too little, never a secret."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError:
        parts, netloc = None, ""
    if parts is not None and "@" in netloc:
        host = netloc.rsplit("@", 1)[1]
        rest = urlunsplit(parts._replace(netloc=f"{MASK}@{host}"))
        if "@" not in rest.split(f"{MASK}@", 1)[1]:
            return rest
    scheme, sep, rest = url.partition("://")
    if "@" not in (rest if sep else url):
        return url
    tail = (rest if sep else url).rsplit("@", 1)[1]
    return f"{scheme}{sep}{MASK}@{tail}" if sep else f"{MASK}@{tail}"


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
            netloc = ""
        _, sep, rest = url.partition("://")
        # The userinfo as urlsplit reads it, and as redact_url's fallback does (everything up to the last `@`).
        for userinfo in (netloc.rsplit("@", 1)[0] if "@" in netloc else "", (rest if sep else url).rsplit("@", 1)[0]):
            if userinfo:
                text = text.replace(userinfo + "@", MASK + "@")
    return text


def url_error(exc: ValueError, url: str) -> str:
    """urlsplit's reason for refusing `url`, safe to print: its text may quote a piece of a password it misread
    as the port (`http://u:pa/ss@h` gives "... integer value as 'pa'")."""
    text = str(exc)
    if "could not be cast" in text:
        return "its port is not a number"
    return redact_text(text, url)
