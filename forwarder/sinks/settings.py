"""What a sink is configured with: ``SinkSettings``, what every sink shares (FORWARDER_SINK_*), and
the chosen sink's own options (a ``SinkOptions`` its module defines as ``Options``). Built by
forwarder.config."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any, List, Mapping, Optional, Tuple, Type, TypeVar
from urllib.parse import SplitResult, urlsplit

from ..kinds import Text
from ..variables import Variable

OptionsT = TypeVar("OptionsT", bound="SinkOptions")


def option(variable: Variable) -> Any:
    """A field of a sink's options, filled from ``variable``, which the sink declares here (the
    configuration table collects it): unset, the field holds the variable's default, parsed."""
    declared = replace(variable, sink_option=True)
    default = declared.kind.parse(declared.default or "")
    return field(default=default, repr=not declared.secret, metadata={"variable": declared})


# Both Splunk HEC and syslog stamp the host name: one variable, declared once.
HOST = Variable(
    "FORWARDER_HEC_HOST",
    "Splunk `host` field, also the syslog HOSTNAME (empty: HEC's default / this host)",
    Text(),
)


@dataclass(frozen=True)
class SinkOptions:
    """A sink's own settings, one frozen dataclass per sink module (its ``Options``), each field an
    ``option`` naming the variable that fills it. Only the sink reads them."""

    @classmethod
    def variables(cls) -> Tuple[Variable, ...]:
        """The variables this sink reads, in field order."""
        return tuple(f.metadata["variable"] for f in dataclasses.fields(cls))

    @classmethod
    def from_values(cls: Type[OptionsT], values: Mapping[str, Any]) -> OptionsT:
        """These options from parsed variable values by name (None or absent: the field's default)."""
        given = {f.name: values.get(f.metadata["variable"].name) for f in dataclasses.fields(cls)}
        return cls(**{name: value for name, value in given.items() if value is not None})

    def for_health(self: OptionsT) -> OptionsT:
        """These options for the run's health event (the same, unless the sink says otherwise)."""
        return self

    def secrets(self) -> List[str]:
        """The values of the secret fields that are set: never to reach a log line."""
        found = (getattr(self, f.name) for f in dataclasses.fields(self) if f.metadata["variable"].secret)
        return [value for value in found if value]


@dataclass(frozen=True)
class SinkSettings:
    uri: str  # FORWARDER_SINK, never holding a secret
    token: Optional[str] = field(default=None, repr=False)  # FORWARDER_SINK_TOKEN
    batch_events: Optional[int] = None  # None: the sink's own default
    batch_bytes: Optional[int] = None
    ca_bundle: Optional[str] = None  # a PEM file for private CAs (FORWARDER_SINK_CA_BUNDLE)
    verify_tls: bool = True
    timeout_seconds: float = 60.0
    max_attempts: int = 5  # FORWARDER_MAX_ATTEMPTS: tries per request, the first included
    gzip: bool = True
    # extra request headers for generic HTTP collectors (never logged)
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    # how the token is presented: "" (the sink's default), "apikey" (Elasticsearch), "basic"
    # (token is user:password), "bearer" (HTTP NDJSON default), "token" (the header is the token)
    auth: str = ""
    # the S3 and Security Lake sinks and the quarantine: SSE-KMS with this key, else SSE-S3
    sse_kms_key_id: Optional[str] = None
    # the chosen sink's own options (its module's ``Options``); None: that sink's defaults
    options: Optional[SinkOptions] = None
    # ``uri`` parsed, once: what the sink's checks and its constructor read
    address: SplitResult = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "address", urlsplit(self.uri))

    def options_of(self, kind: Type[OptionsT]) -> OptionsT:
        """The options as the sink of ``kind`` reads them: those given, else its defaults."""
        return self.options if isinstance(self.options, kind) else kind()
