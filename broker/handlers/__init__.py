"""One module per Kafka API: decode is done by the dispatcher; a handler maps the request to
calls on the broker's services (partitions, coordinators, admin) and their answers back to the
response. Each module registers itself in :data:`broker.registry.REGISTRY` when imported."""

from __future__ import annotations

import importlib
import pkgutil

from broker.registry import REGISTRY, HandlerRegistry


def load_handlers() -> HandlerRegistry:
    """Imports every handler module (each registers itself) and returns the registry."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY
