"""The layering stays true (rules and walk in tests/layering.py), and each rule fails when broken."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict, List

import pytest

from tests.layering import (
    GRAPH_RULES,
    HEAVY_CLIENTS,
    IO_MODULES,
    PRIVATE_HOOKS,
    RULES,
    TRANSPORT_INTERNALS,
    check,
    check_loaded,
)

ROOT = Path(__file__).resolve().parents[1]


def test_the_tree_keeps_every_layering_rule() -> None:
    broken = check(ROOT)
    assert not broken, "layering broken:\n" + "\n".join(map(str, broken))


def test_importing_the_pipeline_loads_no_http_or_aws_client() -> None:
    broken = check_loaded(ROOT)
    assert not broken, "\n".join(map(str, broken))


# The test of the test: small packages in tmp_path, each breaking one rule in one way.

CLEAN: Dict[str, str] = {
    "forwarder/__init__.py": "",
    "forwarder/http.py": "import requests\n",
    "forwarder/app.py": (
        "import os\nimport time\nfrom . import http, pipeline\nPROXY = os.environ.get('HTTPS_PROXY')\n"
    ),
    "forwarder/timeutil.py": "from datetime import datetime\n\ndef now_us():\n    return datetime.now()\n",
    "forwarder/pipeline.py": (
        "from typing import TYPE_CHECKING\nfrom .delivery import shipper\nfrom .reading import pass_\n"
        "if TYPE_CHECKING:\n    import boto3\n"
    ),
    "forwarder/delivery/__init__.py": "",
    "forwarder/delivery/shipper.py": "def owner():\n    from ..http import requests  # runs when called\n",
    "forwarder/transport/__init__.py": "",
    "forwarder/transport/watched.py": (
        "from urllib3.connectionpool import HTTPConnectionPool\n"
        "class Pool(HTTPConnectionPool):\n    def _put_conn(self, conn):\n        super()._put_conn(conn)\n"
    ),
    "forwarder/reading/__init__.py": "",
    "forwarder/reading/pass_.py": "from dataclasses import dataclass\nfrom . import pages\n",
    "forwarder/reading/pages.py": "import hashlib\n",
    "forwarder/reading/trail.py": "import requests\nfrom . import pages\n",
    "forwarder/normalize/__init__.py": "",
    "forwarder/normalize/ecs.py": (
        "import re\nfrom datetime import datetime, timezone\nfrom ..timeutil import format_us\n"
        "def render(options):\n    return options.ingest_time_us\n"
        "def newer(pairs):\n    return [now for was, now in pairs if now > was]\n"
    ),
    "forwarder/sinks/__init__.py": "",
    "forwarder/sinks/hec.py": "import requests\nfrom .. import http\nfrom .base import Sink\n",
    "forwarder/sinks/base.py": "class Sink: ...\n",
    "forwarder/sinks/securitylake.py": "from .hec import x\n",  # a sink may build on another
    "forwarder/state/__init__.py": "",
    "forwarder/state/store.py": "import boto3\n",
    "forwarder/config/__init__.py": "",
    "handlers/__init__.py": "",
    "handlers/aws_lambda.py": "import boto3\nfrom forwarder import app\nfrom forwarder.state import store\n",
    "splunk_app/package/bin/emailauth_audit_helper.py": "from handlers import aws_lambda\n",
}

TYPE_ONLY = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"

# rule name -> {file: source}, each breaking that rule once: every forbidden module and every form.
BREAKS: Dict[str, List[Dict[str, str]]] = {
    "forwarder-imports-runtimes": [  # from modules the runtime does not import: no circle
        {"forwarder/cli.py": "import handlers.aws_lambda\n"},
        {"forwarder/cli.py": "from handlers import aws_lambda\n"},
        {"forwarder/streams.py": "def f():\n    from handlers.aws_lambda import handler\n"},
        {"forwarder/cli.py": "import splunk_app\n"},
        {"forwarder/cli.py": "import emailauth_audit_helper\n"},  # the add-on's bin/ script
    ],
    "normalize-does-io": [
        *({"forwarder/normalize/ecs.py": f"import {name}\n"} for name in sorted(IO_MODULES)),
        *({"forwarder/normalize/ecs.py": f"from {name} import x\n"} for name in sorted(IO_MODULES)),
        {"forwarder/normalize/ecs.py": "def f():\n    import os.path\n"},
        {"forwarder/normalize/ecs.py": "from .. import http\n"},  # through a project module
        {"forwarder/normalize/ecs.py": "from ..state import store\n"},  # through a sibling package
        {"forwarder/normalize/ecs.py": "from datetime import datetime\nT = datetime.now()\n"},
        {"forwarder/normalize/ecs.py": "import datetime\ndef f():\n    return datetime.datetime.utcnow()\n"},
        {"forwarder/normalize/ecs.py": "from datetime import date\ndef f():\n    return date.today()\n"},
        {"forwarder/normalize/ecs.py": "from ..timeutil import now_us\n"},
        {"forwarder/normalize/ecs.py": "from .. import timeutil\ndef f():\n    return timeutil.now_us()\n"},
    ],
    "sinks-import-state": [
        {"forwarder/sinks/hec.py": "from ..state import store\n"},
        {"forwarder/sinks/hec.py": "from ..state.store import x\n"},
        {"forwarder/sinks/base.py": "import forwarder.state\n"},
        {"forwarder/sinks/__init__.py": "def f():\n    from forwarder import state\n"},
        {  # sinks.hec -> api.token -> state
            "forwarder/sinks/hec.py": "from ..api import token\n",
            "forwarder/api/__init__.py": "",
            "forwarder/api/token.py": "from ..state import store\n",
        },
    ],
    "plugins-through-their-registry": [
        {"forwarder/app.py": "from .sinks import hec\n"},
        {"forwarder/app.py": "from .sinks.hec import HecOptions\n"},  # a sink's options, read outside it
        {"forwarder/delivery/shipper.py": "def owner():\n    import forwarder.sinks.hec\n"},  # lazily too
        {"forwarder/app.py": TYPE_ONLY + "    from .state.s3 import S3Store\n"},  # type-only: a dependency
    ],
    "config-loads-sinks": [  # the registry loading a sink as it is imported
        {
            "forwarder/config/__init__.py": "from ..sinks import base\n",
            "forwarder/sinks/__init__.py": "from . import hec\n",
        },
        {  # through a module of the configuration's own
            "forwarder/config/__init__.py": "from . import settings\n",
            "forwarder/config/settings.py": "from .. import sinks\n",
            "forwarder/sinks/__init__.py": "from .securitylake import x\n",
        },
    ],
    "pipeline-reads-through-the-face": [
        {"forwarder/pipeline.py": "from .reading.pages import Page\n"},
        {"forwarder/pipeline.py": "def f():\n    from .reading import trail\n"},
        {"forwarder/pipeline.py": "from .api import client\n"},
    ],
    "delivery-writes-reports": [
        {"forwarder/delivery/shipper.py": "from ..report import StreamReport\n"},
        {
            "forwarder/delivery/shipper.py": TYPE_ONLY + "    from .. import report\n",
            "forwarder/report.py": "",
        },
        {"forwarder/delivery/shipper.py": "def f():\n    from ..observer import RunObserver\n"},
        {  # delivery.shipper -> events -> report
            "forwarder/delivery/shipper.py": "from .. import events\n",
            "forwarder/events.py": "from .report import StreamReport\n",
            "forwarder/report.py": "",
        },
    ],
    "pipeline-loads-clients": [
        *({"forwarder/pipeline.py": f"import {name}\n"} for name in sorted(HEAVY_CLIENTS)),
        {"forwarder/pipeline.py": "from botocore.exceptions import ClientError\n"},
        {"forwarder/delivery/shipper.py": "from ..http import requests\n"},  # pipeline -> shipper -> http
        {"forwarder/delivery/shipper.py": "from ..state import store\n"},  # ... -> shipper -> state -> boto3
    ],
    "transport-privates-outside-the-fence": [
        *({"forwarder/sinks/hec.py": f"import {name}\n"} for name in sorted(TRANSPORT_INTERNALS)),
        {"forwarder/http.py": "from requests.adapters import HTTPAdapter\n"},
        {"forwarder/state/store.py": "def f():\n    from botocore.httpsession import URLLib3Session\n"},
        *(
            {"forwarder/sinks/hec.py": f"def f(client):\n    return client.{name}\n"}
            for name in sorted(PRIVATE_HOOKS)
        ),
        {"forwarder/sinks/hec.py": "class Connection:\n    def _new_conn(self):\n        return None\n"},
        {"handlers/aws_lambda.py": "import boto3\ndef f(client):\n    client._endpoint.http_session.x = 1\n"},
    ],
    "environment-written": [
        {"handlers/aws_lambda.py": "import os\nos.environ['HTTPS_PROXY'] = 'http://proxy:3128'\n"},
        {"handlers/aws_lambda.py": "import os\ndef f():\n    os.environ.pop('HTTPS_PROXY', None)\n"},
        {"forwarder/app.py": "import os\nos.environ.update(HTTPS_PROXY='x')\n"},
        {"forwarder/app.py": "import os\nos.environ.setdefault('A', 'b')\n"},
        {"forwarder/app.py": "import os\ndel os.environ['A']\n"},
        {"forwarder/app.py": "import os\nos.environ['PATH'] += ':/x'\n"},
        {"forwarder/app.py": "import os\nos.environ = {}\n"},
        {"forwarder/app.py": "from os import environ\nenviron['A'] = 'b'\n"},
        {"forwarder/app.py": "import os\nos.putenv('A', 'b')\n"},
        {"forwarder/app.py": "from os import unsetenv\nunsetenv('A')\n"},
    ],
    "import-circle": [
        {"forwarder/sinks/base.py": "from . import hec\n"},  # hec -> base -> hec
        {"forwarder/sinks/base.py": "def f():\n    from .hec import x\n"},  # lazy: still a dependency
        {"forwarder/sinks/base.py": TYPE_ONLY + "    from . import hec\n"},
        {  # three modules round, three packages
            "forwarder/state/store.py": "from ..api import token\n",
            "forwarder/api/__init__.py": "",
            "forwarder/api/token.py": "from ..quarantine import entries\n",
            "forwarder/quarantine/__init__.py": "",
            "forwarder/quarantine/entries.py": "from ..state import store\n",
        },
    ],
    "import-up": [
        {"forwarder/errors.py": "def later():\n    from . import app\n"},  # foundation -> runs
        {"forwarder/http.py": "from .sinks import base\n"},  # transport -> clients, stores, ...
        {"forwarder/sinks/base.py": "from ..reading import pass_\n"},  # sinks -> run parts
        {"forwarder/errors.py": TYPE_ONLY + "    from .sinks import base\n"},  # type-only: a dependency
        {"forwarder/unplaced.py": "import json\n"},  # a module in no layer
    ],
}


def _package(tmp_path: Path, changes: Dict[str, str]) -> Path:
    for name, text in {**CLEAN, **changes}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return tmp_path


def test_every_rule_has_breaks_to_fail_on() -> None:
    assert sorted(BREAKS) == sorted([rule.name for rule in RULES] + list(GRAPH_RULES))


def test_a_clean_package_passes(tmp_path: Path) -> None:
    """Allowed: I/O, the clock and reading the environment outside normalize/, lazy and type-only
    imports of the clients, the transport's overrides in forwarder/transport, imports down the layers
    and inside one."""
    assert check(_package(tmp_path, {})) == []


@pytest.mark.parametrize(
    ("rule", "changes"),
    [(rule, changes) for rule, cases in BREAKS.items() for changes in cases],
    ids=lambda value: value if isinstance(value, str) else "|".join(value.values()).strip(),
)
def test_each_forbidden_import_fails_its_rule(tmp_path: Path, rule: str, changes: Dict[str, str]) -> None:
    broken = check(_package(tmp_path, changes))
    assert broken and {v.rule for v in broken} == {rule}, broken


def test_the_runtime_check_sees_a_client_the_static_walk_cannot(tmp_path: Path) -> None:
    root = _package(
        tmp_path, {"forwarder/delivery/shipper.py": "import importlib\nimportlib.import_module('requests')\n"}
    )
    assert check(root) == []
    assert [(v.rule, v.target) for v in check_loaded(root)] == [("pipeline-loads-clients", "requests")]
    assert check_loaded(_package(tmp_path, {})) == []
