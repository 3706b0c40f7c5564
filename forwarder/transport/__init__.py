"""The fence around the HTTP libraries' private parts: the only package that overrides or writes them.

The deadline watchdog (``forwarder.deadline``) can cut a call at every step only because its
connections hand their sockets over: ``watched`` overrides urllib3's ``_new_conn``, ``_tunnel`` and
``_put_conn`` (and requests' adapter, and PySocks' connect), ``aws_deadline`` writes botocore's pool
table. None of those is a public interface, so each module checks at import, with ``hooks``, that
every hook it relies on is still there (with the parameters it expects): a renamed hook stops the
program with a message naming the library and its version, instead of silently leaving calls that no
deadline can cut. pyproject.toml bounds the libraries to the majors checked.

Importing this package loads nothing: ``aws_deadline`` needs botocore, which the Splunk add-on
leaves out.
"""
