"""The platform API simulator: a local fake of the token, audits, users and domains endpoints over
loopback HTTP, for the demo, the tests and the benchmarks (``simulator.Simulator``).

The service: ``simulator`` (the parts put together), ``server`` (HTTP plumbing and life cycle),
``endpoints``, ``tokens``, ``styles`` (how it lists), ``faults`` (what a hostile service does),
``messages`` (query parameters, JSON replies), ``serve`` (``audit-forwarder simulate``).
The organization it serves: ``entities``, ``history`` (the trail's writer), ``org`` (the trail as
the API scopes it), ``generate`` (seeded organizations), ``scenarios`` (the detection scenarios).
"""
