"""SSRF refusals of web_extract's local fetches, and of URLs handed to remote extraction backends.

Local fetches go through ``safe_fetch``: every hop is resolved and must be public. Without
``web.allow_loopback`` even this machine is refused; with it, metadata and link-local addresses stay
refused, and a redirect from an allowed page to a private address is refused at the redirect. Remote
backends get an offline pre-check: literal private addresses (any IPv4 spelling) never leave the machine.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fakes.vendors import FakeFirecrawl, ServerThread, pages_app
from tools.web.support import call, configure, error_of

REFUSED = "is a private, loopback, link-local or metadata address, which is not fetched"

#: (URL, why) — each must be refused without the loopback flag
TABLE = [
    ("http://127.0.0.1/", "loopback"),
    ("http://127.8.9.10:8080/admin", "loopback /8"),
    ("http://localhost/", "a name for loopback"),
    ("http://app.localhost/", "a .localhost name"),
    ("http://[::1]/", "IPv6 loopback"),
    ("http://[::ffff:127.0.0.1]/", "IPv4-mapped IPv6 loopback"),
    ("http://[::ffff:a9fe:a9fe]/", "IPv4-mapped IPv6 metadata"),
    ("http://2130706433/", "decimal 127.0.0.1"),
    ("http://0177.0.0.1/", "octal 127.0.0.1"),
    ("http://0x7f.0.0.1/", "hex 127.0.0.1"),
    ("http://169.254.169.254/latest/meta-data/", "cloud metadata"),
    ("http://[fd00:ec2::254]/", "AWS IPv6 metadata"),
    ("http://100.100.100.200/", "Alibaba metadata"),
    ("http://169.254.10.1/", "link-local"),
    ("http://10.0.0.5/", "RFC 1918"),
    ("http://192.168.1.1/", "RFC 1918"),
    ("http://172.16.0.1/", "RFC 1918"),
    ("http://100.64.0.1/", "CGNAT"),
    ("http://[fc00::1]/", "IPv6 ULA"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://[64:ff9b::a00:1]/", "NAT64 of 10.0.0.1"),
    ("http://[2002:7f00:1::1]/", "6to4 of 127.0.0.1"),
    ("http://[2002:a9fe:a9fe::1]/", "6to4 of the metadata address"),
    ("http://[2002:c0a8:101::1]/", "6to4 of 192.168.1.1"),
    ("http://[2001:0:7f00:1::1]/", "Teredo with a loopback server"),
    ("http://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", "Teredo with client 10.0.0.1"),
]


@pytest.fixture(scope="module")
def pages() -> Iterator[str]:
    with ServerThread(pages_app()) as server:
        yield server.url


@pytest.mark.parametrize(("url", "why"), TABLE, ids=[t[1] + ":" + t[0] for t in TABLE])
def test_local_fetch_refuses(url: str, why: str, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(hermes_home, monkeypatch, {"web": {"extract_backend": "local"}})
    error = error_of("web_extract", {"urls": [url]})
    assert error.startswith(f"could not extract {url}: not fetched: "), error
    assert "not fetched from (private or local)" in error or REFUSED in error, error


def test_loopback_flag_opens_loopback_only(hermes_home: Path, monkeypatch: pytest.MonkeyPatch, pages: str) -> None:
    configure(hermes_home, monkeypatch, {"web": {"extract_backend": "local"}})
    assert REFUSED in error_of("web_extract", {"urls": [f"{pages}/article"]})
    configure(hermes_home, monkeypatch, {"web": {"extract_backend": "local", "allow_loopback": True}})
    assert "Main heading" in call("web_extract", {"urls": [f"{pages}/article"]})["results"][0]["content"]
    for url in ("http://169.254.169.254/", "http://10.0.0.1/", "http://[::ffff:169.254.169.254]/"):
        assert "not fetched" in error_of("web_extract", {"urls": [url]}), url


@pytest.mark.parametrize("target", ["http://169.254.169.254/latest/meta-data/", "http://10.1.2.3/", "http://[fd00::1]/"])
def test_redirect_to_a_private_address_is_refused(target: str, hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                  pages: str) -> None:
    configure(hermes_home, monkeypatch, {"web": {"extract_backend": "local", "allow_loopback": True}})
    error = error_of("web_extract", {"urls": [f"{pages}/redirect?to={target}"]})
    assert "resolves to an address that is not fetched from (private or local)" in error
    good = call("web_extract", {"urls": [f"{pages}/redirect?to=/article"]})["results"][0]
    assert good["final_url"] == f"{pages}/article"


def test_a_malformed_redirect_is_the_fetchers_own_error(hermes_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                         pages: str) -> None:
    configure(hermes_home, monkeypatch, {"web": {"extract_backend": "local", "allow_loopback": True}})
    for target in ("http://[::1", "http://[zz]/x", "http://a:99999/"):
        error = error_of("web_extract", {"urls": [f"{pages}/redirect?to={target}"]})
        assert "malformed address" in error or "not valid" in error, error


def test_name_resolving_to_a_private_address_is_refused(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DNS answers are checked, not just literals: a public-looking name pointing inside is refused."""
    import socket

    real = socket.getaddrinfo

    def fake_dns(host: str, *args: object, **kwargs: object) -> object:
        if host == "intranet.example.com":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", ("10.20.30.40", 80))]
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", fake_dns)
    configure(hermes_home, monkeypatch, {"web": {"extract_backend": "local"}})
    error = error_of("web_extract", {"urls": ["http://intranet.example.com/wiki"]})
    assert "intranet.example.com resolves to an address that is not fetched from" in error


def test_size_and_time_caps(hermes_home: Path, monkeypatch: pytest.MonkeyPatch, pages: str) -> None:
    configure(hermes_home, monkeypatch, {"web": {"extract_backend": "local", "allow_loopback": True,
                                                  "fetch_max_bytes": 262_144, "fetch_timeout": 1}})
    assert "larger than the limit of 262144 bytes" in error_of("web_extract", {"urls": [f"{pages}/big"]})
    assert "did not load within 1 s" in error_of("web_extract", {"urls": [f"{pages}/slow?s=3"]})


def test_remote_backends_never_get_private_literals(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeFirecrawl(api_key="fc-user-key")
    with ServerThread(fake.app) as server:
        configure(hermes_home, monkeypatch, {"web": {"backend": "firecrawl"}},
                  {"FIRECRAWL_API_KEY": "fc-user-key", "FIRECRAWL_API_URL": server.url})
        result = call("web_extract", {"urls": ["http://169.254.169.254/latest/", "https://example.org/ok",
                                               "http://0x0a000001/"]})
        assert [r["url"] for r in result["results"]] == ["https://example.org/ok"]
        assert [f["url"] for f in result["failed"]] == ["http://169.254.169.254/latest/", "http://0x0a000001/"]
        assert [r["json"]["url"] for r in fake.requests] == ["https://example.org/ok"]
