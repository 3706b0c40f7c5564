"""Importing botocore's side of the deadline checks the pool table it writes is still the one every
pool manager of a session shares; watching a client checks the client holds that session. (The
deadline itself is tested against trickling peers in tests/hostile/test_aws_deadline.py and tests/aws.)"""

from __future__ import annotations

import botocore
import pytest
from botocore.httpsession import URLLib3Session

from forwarder.transport import aws_deadline
from forwarder.transport.hooks import UnsupportedLibrary
from tests.transport.sabotage import outcome

BOTOCORE = f"botocore {botocore.__version__} is not a version"


def test_the_installed_botocore_passes():
    aws_deadline._check_botocore(URLLib3Session())


@pytest.mark.parametrize(
    ("change", "told"),
    [
        (
            "import botocore.httpsession as s; remove(s.URLLib3Session, '_get_proxy_manager')",
            "_get_proxy_manager is missing",
        ),
        (
            # a version whose pool managers copy the table: writing the session's would change nothing
            "import botocore.httpsession as s\ninit = s.URLLib3Session.__init__\n"
            "def copying(self, *a, **k):\n    init(self, *a, **k)\n"
            "    self._manager.pool_classes_by_scheme = dict(self._pool_classes_by_scheme)\n"
            "s.URLLib3Session.__init__ = copying",
            "pool_classes_by_scheme is no longer the table the forwarder writes",
        ),
        (
            "import botocore.httpsession as s\ninit = s.URLLib3Session.__init__\n"
            "def renamed(self, *a, **k):\n    init(self, *a, **k)\n"
            "    self._pool_classes = self.__dict__.pop('_pool_classes_by_scheme')\n"
            "s.URLLib3Session.__init__ = renamed",
            "URLLib3Session._pool_classes_by_scheme is missing",
        ),
    ],
    ids=["proxy-manager-renamed", "table-copied", "table-renamed"],
)
def test_importing_it_stops_when_botocore_changed_what_it_writes(change, told):
    ran = outcome(change, "import forwarder.transport.aws_deadline")
    assert ran.returncode != 0
    assert BOTOCORE in ran.stderr and told in ran.stderr, ran.stderr


def test_watching_a_client_without_the_endpoint_session_stops_naming_it():
    class Client:
        _endpoint = object()  # no http_session

    with pytest.raises(UnsupportedLibrary, match="http_session is missing"):
        aws_deadline.watch(Client())
