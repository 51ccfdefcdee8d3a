"""A TCP proxy in front of a server that can refuse new connections for a while.

ZooKeeper 3.8 binds its client port before it has loaded its database. A client that reconnects
in that window is neither served nor closed ("ZooKeeperServer not running", then an exception
while closing the connection), so it waits for its whole connect timeout, which kazoo sets to
the session timeout: the session expires meanwhile. Tests that restart ZooKeeper and expect
sessions to survive put this proxy between the clients and the server and keep it closed until
the restarted server answers ``srvr`` with its mode.

:meth:`GatedProxy.hold` makes the server slow instead: bytes already accepted stop flowing (both
ways, on every connection) until :meth:`GatedProxy.release`, as a ZooKeeper stalled by a long
GC pause or a slow disk would look to its clients.
"""

from __future__ import annotations

import contextlib
import socket
import threading


class GatedProxy:
    """Listens on 127.0.0.1:``port`` and forwards each accepted connection to ``backend``;
    while :meth:`close_gate` is in effect, new connections are closed at once."""

    def __init__(self, backend_host: str, backend_port: int) -> None:
        self.backend = (backend_host, backend_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._open = threading.Event()
        self._open.set()
        self._flowing = threading.Event()
        self._flowing.set()
        self._stopped = False
        self._sockets: set[socket.socket] = set()
        self._lock = threading.Lock()
        threading.Thread(target=self._accept_loop, name="gated-proxy", daemon=True).start()

    def close_gate(self) -> None:
        self._open.clear()

    def open_gate(self) -> None:
        self._open.set()

    def hold(self) -> None:
        """Stops forwarding: what arrives from now on waits (connections stay open)."""
        self._flowing.clear()

    def release(self) -> None:
        """Forwards again, what waited first."""
        self._flowing.set()

    def _accept_loop(self) -> None:
        while not self._stopped:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            if not self._open.is_set():
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.backend, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets.update((client, upstream))
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(src, dst), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        try:
            while data := src.recv(65536):
                self._flowing.wait()
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
            with self._lock:
                self._sockets.difference_update((src, dst))

    def stop(self) -> None:
        self._stopped = True
        self._flowing.set()
        self._listener.close()
        with self._lock:
            sockets = list(self._sockets)
        for s in sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
