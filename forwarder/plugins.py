"""The one registry of plugins (sinks, state stores, quarantines, secret sources): a key (a URI
scheme, a reference kind) -> the module that implements it, imported only when chosen, so a build
without boto3 (the Splunk add-on) still runs every plugin that does not need it. Every plugin of a
kind exposes the same functions; the kind's package says which."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Dict, List, Mapping

from .logs import quoted


class Registry:
    """``modules``: key -> absolute module name. ``variable`` and ``what`` name the setting that
    chooses a plugin and what it chooses (``FORWARDER_SINK``, ``sink``) in the errors."""

    def __init__(self, variable: str, what: str, modules: Mapping[str, str]) -> None:
        self.variable = variable
        self.what = what
        self._modules: Dict[str, str] = dict(modules)

    def keys(self) -> List[str]:
        """The keys, sorted (to list the choices)."""
        return sorted(self._modules)

    def modules(self) -> List[str]:
        """The plugin modules, each once, in the order of the registry."""
        return list(dict.fromkeys(self._modules.values()))

    def __contains__(self, key: object) -> bool:
        return key in self._modules

    def load(self, key: str, where: str = "") -> ModuleType:
        """The module for ``key``; ValueError naming the variable (or ``where``: the value) and the
        choices for an unknown key, or saying the plugin is not available in this build when its
        import fails."""
        named = where or self.variable
        try:
            name = self._modules[key]
        except KeyError:
            raise ValueError(
                f"{named}: {self.what} {quoted(key)} is not supported (choose from {', '.join(self.keys())})"
            ) from None
        try:
            return importlib.import_module(name)
        except ImportError as exc:
            raise ValueError(
                f"{named}: the {key} {self.what} is not available in this build ({exc})"
            ) from None
