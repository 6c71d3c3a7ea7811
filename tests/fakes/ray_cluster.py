"""A throw-away two-node Ray cluster on 127.0.0.1 for the ``hermes batch --ray`` tests.

The head is ``ray start --head --node-ip-address=127.0.0.1`` with its own temp dir and dashboard port.
Ray replaces a loopback address by the machine's outward one unless its switch
``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` is set; with it every server of the node binds and advertises
127.0.0.1. Token authentication is on, with a token made for the cluster (``client_env``).
``ray start --address`` refuses to add a second node while that switch is off, so the second node is
started by this file run as a script (``python ray_cluster.py node ADDRESS CPUS``), which makes the node
as ``ray start`` does, through Ray's ``Node`` class, with ``node_ip_address="127.0.0.1"``.

:meth:`LoopbackRayCluster.stop` ends every process of the cluster — the ones whose command line names
its temp dir and all their descendants (workers, agents) — by process id: TERM, then KILL after a grace.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _proc_args(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended; only its parent can reap it


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def descendants(root: int) -> list[int]:
    """``root`` and every living process below it."""
    tree, found, stack = _children(), set(), [root]
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(tree.get(pid, []))
    return sorted(pid for pid in found if _alive(pid))


def _decode_host(hex_addr: str) -> str:
    raw = bytes.fromhex(hex_addr)
    if len(raw) == 4:
        return str(ipaddress.IPv4Address(raw[::-1]))
    host = ipaddress.IPv6Address(b"".join(raw[i:i + 4][::-1] for i in range(0, 16, 4)))
    return str(host.ipv4_mapped or host)


def listening_hosts(pids: list[int]) -> set[str]:
    """The addresses the TCP sockets of ``pids`` listen on (from /proc, no tools needed)."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        inodes.add(target[8:-1])
    hosts = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                hosts.add(_decode_host(fields[1].split(":")[0]))
    return hosts


class LoopbackRayCluster:
    def __init__(self, head_cpus: int = 2, node_cpus: int = 1) -> None:
        # short: Ray's unix sockets live under it and a socket path has at most 107 bytes
        self.temp_dir = tempfile.mkdtemp(prefix="hr-", dir="/tmp")
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.head_cpus = head_cpus
        self.node_cpus = node_cpus
        #: what the nodes and any driver joining them need: loopback only, and token authentication with a
        #: token of this cluster's own (never written to ~/.ray)
        self.client_env = {LOOPBACK_SWITCH: "0", "RAY_USAGE_STATS_ENABLED": "0", "RAY_AUTH_MODE": "token",
                           "RAY_AUTH_TOKEN": secrets.token_hex(32)}
        self.env = {**os.environ, **self.client_env}
        self.ray = str(Path(sys.executable).with_name("ray"))

    def start(self) -> LoopbackRayCluster:
        run = subprocess.run(
            [self.ray, "start", "--head", "--node-ip-address=127.0.0.1", f"--port={self.port}",
             "--include-dashboard=false", f"--dashboard-port={free_port()}", f"--num-cpus={self.head_cpus}",
             f"--temp-dir={self.temp_dir}", "--object-store-memory=80000000", "--disable-usage-stats"],
            env=self.env, capture_output=True, text=True, timeout=180)
        if run.returncode != 0:
            self.stop()
            raise RuntimeError(f"ray start --head failed: {run.stdout[-2000:]}{run.stderr[-2000:]}")
        node = subprocess.run([sys.executable, __file__, "node", self.address, str(self.node_cpus)],
                              env=self.env, capture_output=True, text=True, timeout=180)
        if node.returncode != 0:
            self.stop()
            raise RuntimeError(f"the second node did not start: {node.stdout[-2000:]}{node.stderr[-2000:]}")
        return self

    def processes(self) -> list[int]:
        """Every living process of this cluster: those naming its temp dir, and their descendants."""
        roots = [int(p.name) for p in Path("/proc").iterdir()
                 if p.name.isdigit() and any(self.temp_dir in arg for arg in _proc_args(int(p.name)))]
        return sorted({pid for root in roots for pid in descendants(root)} - {os.getpid()})

    def task_processes(self, task: str) -> list[int]:
        """Worker processes of this cluster running a task now (Ray titles them ``ray::TASK``)."""
        return [pid for pid in self.processes() if (_proc_args(pid) or [""])[0].startswith(f"ray::{task}")]

    def stop(self) -> list[int]:
        """End every process of the cluster; returns those still alive afterwards (none, normally)."""
        for sig, grace in ((signal.SIGTERM, 8.0), (signal.SIGKILL, 5.0)):
            pids = self.processes()
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            deadline = time.monotonic() + grace
            while pids and time.monotonic() < deadline:
                time.sleep(0.2)
                pids = [pid for pid in pids if _alive(pid)]
            if not self.processes():
                break
        left = self.processes()
        if not left:
            shutil.rmtree(self.temp_dir, ignore_errors=True)  # the session's logs and sockets
        return left


def _start_node(address: str, cpus: int) -> None:
    """Add a node to the cluster at ``address`` on 127.0.0.1 (what ``ray start --address`` does)."""
    from ray._private.node import Node
    from ray._private.parameter import RayParams

    params = RayParams(node_ip_address="127.0.0.1", gcs_address=address, num_cpus=cpus,
                       object_store_memory=80_000_000, min_worker_port=0, max_worker_port=0,
                       include_log_monitor=True)
    Node(params, head=False, shutdown_at_exit=False, spawn_reaper=False)


if __name__ == "__main__" and sys.argv[1:2] == ["node"]:
    _start_node(sys.argv[2], int(sys.argv[3]))
