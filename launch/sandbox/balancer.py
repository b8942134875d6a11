"""The shipped nginx site (deploy/nginx/provenote.conf) run on loopback, in a folder of its own:
the balancer the multi-process tests and bench/scale_out.py run behind, and the site the deploy
tests check. Only the addresses change (upstreams, listening port, certificate); every proxy rule
is the shipped one. Without a certificate the site's TLS server listens in plain HTTP."""

from __future__ import annotations

import contextlib
import getpass
import os
import re
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from launch.sandbox.servers import free_port
from launch.sandbox.tls import Certificate

ROOT = Path(__file__).resolve().parents[2]
SITE = ROOT / "deploy" / "nginx" / "provenote.conf"
# What the access log says of each request: the path and the upstream that answered it.
ROUTED_FORMAT = "log_format routed '$uri $upstream_addr';"


def nginx_binary() -> str | None:
    found = shutil.which("nginx")
    return found or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)


def site_for(
    upstreams: list[int],
    listen: int,
    certificate: Certificate | None,
    logs: Path | None = None,
    idle_upstream_s: int | None = None,
) -> str:
    """The shipped site with loopback addresses (and a test certificate, or none: plain HTTP);
    its access log in ``logs`` beside the balancer's routing log. ``idle_upstream_s`` replaces
    the shipped keep-alive of idle app connections, for the bench that shows why it is shipped
    shorter than the app's own."""
    site = SITE.read_text(encoding="utf-8")
    if idle_upstream_s is not None:
        site = re.sub(r"keepalive_timeout \d+s;", f"keepalive_timeout {idle_upstream_s}s;", site)
    if logs is not None:
        site = site.replace(
            "access_log /var/log/nginx/provenote.access.log provenote_redacted;",
            f"access_log {logs / 'provenote.access.log'} provenote_redacted;\n"
            f"    access_log {logs / 'access.log'} routed;",
        )
    servers = "".join(f"    server 127.0.0.1:{port};\n" for port in upstreams)
    # Only the servers change: the shipped upstream's keep-alive rules stay as deployed.
    site = re.sub(
        r"(upstream provenote \{\n)(?:    server [^\n]*\n)+",
        lambda found: found.group(1) + servers,
        site,
    )
    site = site.replace(
        "location ~ ^/ready/(8000|8001)$",
        f"location ~ ^/ready/({'|'.join(str(port) for port in upstreams)})$",
    )
    # The redirect from port 80 is not the balancer's business on loopback.
    site = re.sub(r"server \{\n    listen 80;.*?\n\}\n", "", site, flags=re.S)
    if certificate is None:
        site = site.replace("listen 443 ssl http2;", f"listen 127.0.0.1:{listen};")
        return re.sub(r"\n    ssl_[^\n]*", "", site)
    site = site.replace("listen 443 ssl", f"listen 127.0.0.1:{listen} ssl")
    site = site.replace("/etc/ssl/provenote/fullchain.pem", str(certificate.cert_file))
    return site.replace("/etc/ssl/provenote/privkey.pem", str(certificate.key_file))


def main_config(prefix: Path, site: Path) -> str:
    """What Debian's /etc/nginx/nginx.conf gives a site, within ``prefix``."""
    user = f"user {getpass.getuser()};\n" if os.geteuid() == 0 else ""
    temp = "\n".join(
        f"    {kind}_temp_path {prefix / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"{user}worker_processes 1;\npid {prefix / 'nginx.pid'};\n"
        f"error_log {prefix / 'error.log'};\nevents {{}}\nhttp {{\n    {ROUTED_FORMAT}\n"
        f"    access_log {prefix / 'access.log'} routed;\n{temp}\n    include {site};\n}}\n"
    )


def nginx_command(prefix: Path, config: Path) -> list[str]:
    binary = nginx_binary()
    if binary is None:
        raise RuntimeError("nginx is not installed (Debian: apt-get install nginx)")
    return [binary, "-p", str(prefix), "-e", str(prefix / "error.log"), "-c", str(config)]


@dataclass
class Balancer:
    """nginx running the shipped site: its base URL, and where each request went."""

    base_url: str
    upstreams: list[int]
    access_log: Path

    def routed(self) -> list[tuple[str, int]]:
        """(path, index of the upstream that answered) of every request so far, in order."""
        found = []
        for line in self.access_log.read_text(encoding="utf-8").splitlines():
            path, _, upstream = line.partition(" ")
            port = upstream.rsplit(":", 1)[-1].split(",")[0].strip()
            if port.isdigit() and int(port) in self.upstreams:
                found.append((path, self.upstreams.index(int(port))))
        return found


@contextlib.contextmanager
def nginx(
    upstreams: list[int],
    prefix: Path,
    certificate: Certificate | None = None,
    idle_upstream_s: int | None = None,
) -> Iterator[Balancer]:
    """nginx with the shipped site in front of ``upstreams``, until the block ends."""
    prefix.mkdir(parents=True, exist_ok=True)
    port = free_port()
    site = prefix / "provenote.conf"
    site.write_text(
        site_for(upstreams, port, certificate, prefix, idle_upstream_s), encoding="utf-8"
    )
    config = prefix / "nginx.conf"
    config.write_text(main_config(prefix, site), encoding="utf-8")
    (prefix / "access.log").touch()
    scheme = "https" if certificate is not None else "http"
    process = subprocess.Popen([*nginx_command(prefix, config), "-g", "daemon off;"])
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and process.poll() is None:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            time.sleep(0.05)
        if process.poll() is not None:
            raise RuntimeError((prefix / "error.log").read_text(encoding="utf-8"))
        yield Balancer(f"{scheme}://127.0.0.1:{port}", upstreams, prefix / "access.log")
    finally:
        process.terminate()
        process.wait(timeout=20)
