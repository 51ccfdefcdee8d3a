"""A recording TCP proxy in front of a broker: which request versions does each client send?

The broker is started with ``advertised.listeners`` pointing at the proxy, so every connection a
client makes (bootstrap, then the addresses Metadata names) goes through it. The proxy forwards
bytes both ways unchanged and reads only the request headers going to the broker (api_key,
api_version, client_id). It listens on 127.0.0.1 port 0 and runs its asyncio loop in a thread,
because the clients under test block or run as subprocesses.
"""

from __future__ import annotations

import asyncio
import struct
import threading
from collections import defaultdict

from protocol.api_keys import ApiKey

_HEADER = struct.Struct(">ihhih")  # size, api_key, api_version, correlation_id, client_id length


def api_name(key: int) -> str:
    return ApiKey(key).name if key in ApiKey._value2member_map_ else str(key)


class ApiTrace:
    """Forwards 127.0.0.1:<port> to an upstream broker and records (client_id, api, version)."""

    def __init__(self) -> None:
        self.port = 0
        self.upstream: tuple[str, int] | None = None
        self._seen: dict[str, dict[int, set[int]]] = defaultdict(lambda: defaultdict(set))
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._run, name="api-trace", daemon=True)

    def start(self) -> ApiTrace:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("trace proxy did not start")
        return self

    def stop(self) -> None:
        if self._stop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._stop.set)
            self._thread.join(10)

    def versions(self, client_prefix: str = "") -> dict[str, list[int]]:
        """API name -> sorted versions, over the clients whose client_id starts with the prefix."""
        out: dict[int, set[int]] = defaultdict(set)
        with self._lock:
            for client, apis in self._seen.items():
                if client.startswith(client_prefix):
                    for key, vs in apis.items():
                        out[key] |= vs
        return {api_name(k): sorted(out[k]) for k in sorted(out)}

    def clients(self) -> list[str]:
        with self._lock:
            return sorted(self._seen)

    def clear(self) -> None:
        with self._lock:
            self._seen.clear()

    # -- the loop thread --------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            server.close()
            for task in asyncio.all_tasks() - {asyncio.current_task()}:
                task.cancel()

    async def _serve(self, creader: asyncio.StreamReader, cwriter: asyncio.StreamWriter) -> None:
        if self.upstream is None:
            cwriter.close()
            return
        try:
            breader, bwriter = await asyncio.open_connection(*self.upstream)
        except OSError:
            cwriter.close()
            return
        down = asyncio.ensure_future(self._copy(breader, cwriter))
        try:
            while True:
                head = await creader.readexactly(4)
                (size,) = struct.unpack(">i", head)
                body = await creader.readexactly(size)
                self._record(head + body)
                bwriter.write(head + body)
                await bwriter.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            bwriter.close()
            down.cancel()
            cwriter.close()

    @staticmethod
    async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(1 << 16):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def _record(self, frame: bytes) -> None:
        if len(frame) < _HEADER.size:
            return
        _, key, version, _, n = _HEADER.unpack_from(frame)
        start = _HEADER.size
        client = frame[start : start + n].decode(errors="replace") if n >= 0 else ""
        with self._lock:
            self._seen[client][key].add(version)
