"""Keeps the noida engine reachable by the gateway alone: the engine runs in a private network namespace.

noida listens on TCP with no authentication and has no unix-socket or credential option, so anyone
who can connect to its port reads every tenant's memories. ``serve()`` therefore binds the gateway's
public socket on the host's loopback first, then moves the server process into a new network
namespace (unshare(2), ``CLONE_NEWNET``), brings that namespace's own ``lo`` up and starts the
engine there. network_namespaces(7): every socket belongs to the namespace it was created in, so the
pre-bound gateway socket keeps accepting connections from the host while the engine's 127.0.0.1 is a
loopback no other process on the host shares; the namespace is freed when its last process exits.

Without ``CAP_SYS_ADMIN`` (a non-root user) the kernel refuses ``CLONE_NEWNET`` alone; unshare(2)
with ``CLONE_NEWUSER | CLONE_NEWNET`` creates a user namespace in which the caller has that
capability (user_namespaces(7)), and we map our own uid and gid onto themselves so that every file
the server and the engine write keeps its real owner. unshare(2) acts on the calling thread and
refuses ``CLONE_NEWUSER`` in a multi-threaded process, and threads inherit their creator's
namespaces: it must run in the main thread before any other thread exists (before ``asyncio.run``).

Fail closed: where the kernel refuses both (``EPERM`` in many containers, user namespaces disabled)
the server does not start, unless the operator sets ``EMBEDDED_ES_ENGINE_ISOLATION=shared-loopback``;
then the engine listens on the host's loopback and every start prints a warning saying so.

Residual risks, stated plainly:
- root (``CAP_SYS_ADMIN``) on the host can still enter the namespace (setns(2) on
  ``/proc/<pid>/ns/net``, which is how the gateway benchmark measures the engine direct) and read
  the processes' memory;
- when the server runs as an ordinary user, that same user owns the user namespace and can enter it
  too (``nsenter --user --net -t <pid>``) or ptrace(2) the processes — the user who can read the
  0600 data files anyway; other users cannot;
- in ``shared-loopback`` mode every local user can reach the engine (its port shows in ``ps``).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import socket
import struct
from collections.abc import Mapping
from pathlib import Path

ISOLATION_ENV = "EMBEDDED_ES_ENGINE_ISOLATION"
NAMESPACE = "namespace"
SHARED_LOOPBACK = "shared-loopback"
SHARED_LOOPBACK_WARNING = (
    f"embedded_es: WARNING: {ISOLATION_ENV}={SHARED_LOOPBACK}: the engine listens on the host's loopback "
    "WITHOUT authentication; every local user and process can read and change every tenant's memories "
    "by connecting to it directly, bypassing the gateway. Use this only on a single-user machine."
)

# <sched.h>, <linux/sockios.h>, <net/if.h>
CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_IFREQ_FLAGS = "16sH14x"  # struct ifreq: the interface name, then ifr_flags in the union


class IsolationRefused(RuntimeError):
    """The kernel would not give the engine a private network."""


def isolation_mode(environ: Mapping[str, str]) -> str:
    """``namespace`` (the default) or ``shared-loopback``, the explicit, loudly warned opt-out."""
    value = environ.get(ISOLATION_ENV, "").strip() or NAMESPACE
    if value not in (NAMESPACE, SHARED_LOOPBACK):
        raise ValueError(f"{ISOLATION_ENV}={value!r} is not one of {NAMESPACE!r}, {SHARED_LOOPBACK!r}")
    return value


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL("libc.so.6", use_errno=True)


def _unshare(libc: ctypes.CDLL, flags: int) -> int:
    """0, or the errno unshare(2) failed with."""
    return 0 if libc.unshare(flags) == 0 else ctypes.get_errno()


def _map_own_ids() -> None:
    # user_namespaces(7): an unprivileged process may map only its own ids, and must deny
    # setgroups(2) before it may write gid_map.
    uid, gid = os.geteuid(), os.getegid()
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1\n")
    Path("/proc/self/setgroups").write_text("deny\n")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1\n")


def _loopback_up() -> None:
    # A new network namespace has only `lo`, and it is down (network_namespaces(7)).
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack(_IFREQ_FLAGS, b"lo", 0)
        flags = struct.unpack(_IFREQ_FLAGS, fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack(_IFREQ_FLAGS, b"lo", flags | _IFF_UP))


def enter_private_network() -> None:
    """Move this process into a new network namespace with its loopback up.

    Sockets bound before the call stay in the host's namespace; everything created after it
    (the engine, started afterwards, included) lives in the new one.
    """
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:
        raise RuntimeError(f"enter_private_network must run before any thread is started ({threads} running)")
    libc = _libc()
    refused = _unshare(libc, CLONE_NEWNET)
    if refused == errno.EPERM:  # no CAP_SYS_ADMIN here: try inside a user namespace of our own
        refused = _unshare(libc, CLONE_NEWUSER | CLONE_NEWNET)
        if not refused:
            _map_own_ids()
    if refused:
        raise IsolationRefused(
            f"the kernel refused a private network namespace for the engine (unshare: {os.strerror(refused)}); "
            f"refusing to start with the unauthenticated engine on the host's loopback. Set "
            f"{ISOLATION_ENV}={SHARED_LOOPBACK} to accept that risk on a single-user machine."
        )
    _loopback_up()


def join_network_of(pid: int) -> None:
    """Move the calling thread into the network namespace of process ``pid`` (setns(2)).

    Only the calling thread moves, so a dedicated thread can talk to the engine while the others
    stay on the host. setns(2) needs ``CAP_SYS_ADMIN`` both here and over the target namespace:
    root can, an ordinary user cannot — which is the point.
    """
    fd = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc().setns(fd, CLONE_NEWNET) != 0:
            code = ctypes.get_errno()
            raise OSError(code, f"setns into the network namespace of process {pid}: {os.strerror(code)}")
    finally:
        os.close(fd)
