"""The add-on's REST handler classes (bin/ta_fortra_emailauth_hooks.py), from the built package, on
Splunk's Python with a stand-in for ``splunk.admin`` (only splunkd has the real one): an account is
checked against the simulator before it is saved, an input gets its checkpoint id once, and deleting
an input drops its KV store scope in the fake splunkd."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from forwarder.sim.generate import generate_org
from forwarder.sim.simulator import DEMO_CLIENT_ID, DEMO_CLIENT_SECRET, Simulator
from handlers.splunk_settings import COLLECTION, SETTINGS_CONF

from .conftest import APP, PY39
from .fake_splunkd import SESSION_KEY, FakeSplunkd

SPLUNK_STUB = {
    "__init__.py": "class RESTException(Exception):\n    pass\n",
    "admin.py": (
        "ACTION_LIST, ACTION_CREATE, ACTION_EDIT, ACTION_REMOVE = 1, 2, 4, 8\n"
        "CONTEXT_APP_ONLY = 'app'\nEAI_ENTRY_ACL = 'eai:acl'\n"
        "class MConfigHandler:\n    pass\n"
        "def init(*args, **kwargs):\n    raise AssertionError('not under splunkd')\n"
    ),
}

DRIVER = """
import json, sys
import ta_fortra_emailauth_hooks as hooks
from splunktaucclib.rest_handler.error import RestError

class Saved:
    def __init__(self, stored):
        self.stored = stored
    def get(self, name, decrypt=False):
        if name in self.stored:
            yield name, dict(self.stored[name]), {}

def handler(cls, stored):
    made = object.__new__(cls)
    made.handler = Saved(stored)
    return made

out = {}
step = json.loads(sys.argv[1])
try:
    target = handler(getattr(hooks, step["class"]), step.get("stored", {}))
    payload = step.get("payload")
    if step["hook"] == "delete_hook":
        target.delete_hook(step["key"], "conf", step["name"])
    else:
        getattr(target, step["hook"])(step["key"], "conf", step["name"], payload)
    out["payload"] = payload
except RestError as exc:
    out["error"] = [exc.status, str(exc)]
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def stub(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("splunk-stub")
    (root / "splunk").mkdir()
    for name, text in SPLUNK_STUB.items():
        (root / "splunk" / name).write_text(text)
    return root


@pytest.fixture
def splunkd(tmp_path):
    with FakeSplunkd(APP, tmp_path / "certs") as fake:
        fake.confs[SETTINGS_CONF] = {"proxy": {"proxy_enabled": "0"}, "logging": {"loglevel": "INFO"}}
        fake.collections[COLLECTION] = {}
        yield fake


def call(app_dir: Path, stub: Path, splunkd: FakeSplunkd, cls: str, hook: str, name: str, **step) -> dict:
    """Run ``cls().<hook>`` in the package on Splunk's Python; ``stored`` is what splunkd has saved."""
    step.update({"class": cls, "hook": hook, "name": name, "key": SESSION_KEY})
    path = f"import sys; sys.path[:0] = [{str(stub)!r}, {str(app_dir / 'bin')!r}]\n"
    env = {"PATH": os.environ.get("PATH", ""), "SPLUNKD_URI": splunkd.url}
    done = subprocess.run(
        [PY39, "-S", "-B", "-c", path + DRIVER, json.dumps(step)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_input_gets_a_checkpoint_id_on_create_and_keeps_it_on_edit(app_dir, stub, splunkd):
    created = call(app_dir, stub, splunkd, "InputHandler", "create_hook", "x", payload={})
    assert len(created["payload"]["checkpoint_id"]) == 32
    again = call(app_dir, stub, splunkd, "InputHandler", "create_hook", "x", payload={})
    assert again["payload"]["checkpoint_id"] != created["payload"]["checkpoint_id"]
    stored = {"x": {"checkpoint_id": "keep"}}
    payload = {"checkpoint_id": "", "interval": "60"}
    edited = call(app_dir, stub, splunkd, "InputHandler", "edit_hook", "x", stored=stored, payload=payload)
    assert edited["payload"] == {"checkpoint_id": "keep", "interval": "60"}


def test_deleting_an_input_drops_its_state(app_dir, stub, splunkd):
    records = splunkd.collections[COLLECTION]
    for scope in ("gone", "other"):
        records[scope] = {"_key": scope, "scope": scope, "slot": "streams/k", "seq": 1, "doc": "{}"}
    stored = {"x": {"checkpoint_id": "gone"}}
    assert "error" not in call(app_dir, stub, splunkd, "InputHandler", "delete_hook", "x", stored=stored)
    assert set(records) == {"other"}


def test_an_input_whose_state_cannot_be_dropped_is_kept_with_a_message(app_dir, stub, splunkd):
    del splunkd.collections[COLLECTION]
    stored = {"x": {"checkpoint_id": "c"}}
    done = call(app_dir, stub, splunkd, "InputHandler", "delete_hook", "x", stored=stored)
    assert done["error"][0] == 500 and "the input was kept" in done["error"][1]


def test_saving_an_account_requests_a_token_and_refuses_bad_credentials(app_dir, stub, splunkd):
    with Simulator(generate_org(2)) as sim:
        good = {"api_url": sim.base_url, "client_id": DEMO_CLIENT_ID, "client_secret": DEMO_CLIENT_SECRET}
        assert "error" not in call(
            app_dir, stub, splunkd, "AccountHandler", "create_hook", "prod", payload=good
        )
        wrong = {**good, "client_secret": "nope-nope"}
        bad = call(app_dir, stub, splunkd, "AccountHandler", "create_hook", "prod", payload=wrong)
        assert bad["error"][0] == 400
        assert "the account was not saved" in bad["error"][1]
        assert "refused this client id and secret" in bad["error"][1] and "nope-nope" not in bad["error"][1]
        # an edit that leaves the secret alone sends it masked: the saved one is used
        masked = {**good, "client_secret": "******"}
        kept = call(
            app_dir,
            stub,
            splunkd,
            "AccountHandler",
            "edit_hook",
            "prod",
            stored={"prod": good},
            payload=masked,
        )
        assert "error" not in kept
