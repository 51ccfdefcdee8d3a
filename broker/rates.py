"""A rate over sampled windows, as Kafka's metrics measure one for a quota (a ``Rate`` over a
``SampledStat`` with ``quota.window.num`` samples of ``quota.window.size.seconds``): what
client quotas (:mod:`broker.security.quotas`) and connection-creation quotas
(:mod:`broker.net.limits`) measure.
"""

from __future__ import annotations

import threading


class SampledRate:
    """Kafka's ``Rate`` over a ``SampledStat``: ``samples`` windows of ``window_ms``. Not
    thread-safe by itself: callers hold :attr:`lock` around its methods."""

    __slots__ = ("last_record_ms", "lock", "samples", "slots", "window_ms")

    def __init__(self, samples: int, window_ms: int, now_ms: int) -> None:
        self.slots = max(2, samples)
        self.window_ms = window_ms
        #: [start_ms, value] per sample, oldest first
        self.samples: list[list[float]] = [[float(now_ms), 0.0]]
        self.lock = threading.Lock()
        self.last_record_ms = now_ms

    def _purge(self, now_ms: int) -> None:
        horizon = now_ms - self.slots * self.window_ms
        kept = [s for s in self.samples if s[0] >= horizon]
        self.samples = kept or [[float(now_ms), 0.0]]

    def record(self, value: float, now_ms: int) -> None:
        self._purge(now_ms)
        current = self.samples[-1]
        if now_ms - current[0] >= self.window_ms:
            current = [float(now_ms), 0.0]
            self.samples.append(current)
            if len(self.samples) > self.slots:
                del self.samples[0]
        current[1] += value
        self.last_record_ms = now_ms

    def window_size_ms(self, now_ms: int) -> float:
        total = now_ms - self.samples[0][0]
        full = int(total // self.window_ms)
        minimum = self.slots - 1
        if full < minimum:
            total += (minimum - full) * self.window_ms
        return max(total, 1.0)

    def measure(self, now_ms: int) -> float:
        """Per second."""
        self._purge(now_ms)
        return sum(s[1] for s in self.samples) / (self.window_size_ms(now_ms) / 1000)

    def _rate_at(self, t_ms: float) -> float:
        """The rate :meth:`measure` would give at ``t_ms`` if nothing more were recorded."""
        horizon = t_ms - self.slots * self.window_ms
        kept = [s for s in self.samples if s[0] >= horizon]
        if not kept:
            return 0.0
        elapsed = t_ms - kept[0][0]
        full = int(elapsed // self.window_ms)
        if full < self.slots - 1:
            elapsed += (self.slots - 1 - full) * self.window_ms
        return sum(s[1] for s in kept) / (max(elapsed, 1.0) / 1000)

    def time_to_quota_ms(self, now_ms: int, limit: float) -> float:
        """How long until the rate is back within ``limit`` if nothing more is recorded:
        the first time, in steps of a twentieth of a window, at which :meth:`measure` would
        be within the quota (the samples that made the excess expire, the window grows).
        Kafka's ``QuotaUtils.throttleTime`` estimates the same time as
        ``(rate - limit) / limit * window``, which assumes the window keeps growing; it does
        not once it is full, and a client throttled that way goes on at more than its quota
        for as long as an early burst stays in the window."""
        step = self.window_ms / 20
        t = float(now_ms)
        end = now_ms + (self.slots + 1) * self.window_ms
        while t < end:
            if self._rate_at(t) <= limit:
                return t - now_ms
            t += step
        return float(self.slots * self.window_ms)

    def record_within(
        self, value: float, now_ms: int, limit: float, cap_ms: int | None = None
    ) -> int:
        """Records ``value``; returns 0 if the rate stays within ``limit``, else the time in
        ms (at most ``cap_ms``, if given) until it would be back within it. Holds
        :attr:`lock`."""
        with self.lock:
            self.record(value, now_ms)
            if self.measure(now_ms) <= limit:
                return 0
            throttle = round(self.time_to_quota_ms(now_ms, limit))
        return max(1, throttle if cap_ms is None else min(throttle, cap_ms))

    def take_back(self, value: float, now_ms: int) -> None:
        """Takes back ``value`` recorded for what did not happen after all (a throttled fetch's
        bytes, a throttled connection). Holds :attr:`lock`."""
        with self.lock:
            self.record(-value, now_ms)
