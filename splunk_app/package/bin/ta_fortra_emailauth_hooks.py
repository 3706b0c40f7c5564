"""The REST handler classes UCC's generated handlers use (globalConfig.json restHandlerClass):
a token request before an account is saved; an input's checkpoint id on create, its state dropped
on delete. The logic is in lib/handlers/splunk_hooks.py."""

import import_declare_test  # noqa: F401  (puts the add-on's lib/ first on sys.path)

import logging

from splunktaucclib.rest_handler.admin_external import AdminExternalHandler, get_splunkd_endpoint
from splunktaucclib.rest_handler.error import RestError

from forwarder.errors import StateError
from handlers.splunk_hooks import AccountRejected, check_account, drop_checkpoint, new_checkpoint_id
from handlers.splunk_input import scope_of
from handlers.splunk_settings import SettingsError, SplunkdSettings

log = logging.getLogger("ta_fortra_emailauth")
_MASKED = "******"  # what the form sends back for an encrypted field left unchanged


def _stored(handler, name):
    """The saved fields of ``name`` (secrets decrypted), or {} on a create."""
    for _name, data, _acl in handler.get(name, decrypt=True):
        return dict(data)
    return {}


class AccountHandler(AdminExternalHandler):
    def create_hook(self, session_key, config_name, stanza_id, payload):
        self._check(session_key, {}, payload)

    def edit_hook(self, session_key, config_name, stanza_id, payload):
        self._check(session_key, _stored(self.handler, stanza_id), payload)

    @staticmethod
    def _check(session_key, stored, payload):
        fields = dict(stored)
        fields.update({k: v for k, v in payload.items() if v not in ("", _MASKED, None)})
        try:
            proxy = SplunkdSettings(get_splunkd_endpoint(), session_key).proxy_url()
            check_account(fields, proxy)
        except (AccountRejected, SettingsError) as exc:
            raise RestError(400, f"the account was not saved: {exc}") from None


class InputHandler(AdminExternalHandler):
    def create_hook(self, session_key, config_name, stanza_id, payload):
        payload["checkpoint_id"] = new_checkpoint_id()

    def edit_hook(self, session_key, config_name, stanza_id, payload):
        # Set once, on create: an edit keeps the input's state.
        payload["checkpoint_id"] = _stored(self.handler, stanza_id).get("checkpoint_id", "")

    def delete_hook(self, session_key, config_name, stanza_id):
        scope = scope_of(stanza_id, _stored(self.handler, stanza_id))
        try:
            drop_checkpoint(get_splunkd_endpoint(), session_key, scope)
        except StateError as exc:
            raise RestError(500, f"the input's delivery state could not be deleted, so the input was kept: {exc}")
