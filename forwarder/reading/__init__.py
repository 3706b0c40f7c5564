"""The read path: one pass over one stream's audit trail, from pages to the records to ship.

``pass_.read_pass`` is the face; behind it ``trail`` (the real source, with ``strategy``,
``windows`` and ``pages``) fetches pages, and ``select`` keeps the oldest new records of them.
This package imports nothing at load time, so ``api.client`` may use ``pages`` without a cycle.
"""
