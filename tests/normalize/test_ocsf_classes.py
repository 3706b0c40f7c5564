"""The OCSF classes by uid (forwarder/normalize/ocsf_classes.py): those the formatter writes."""

from __future__ import annotations

from forwarder.normalize import ocsf, ocsf_classes


def test_the_classes_are_the_ones_the_formatter_names():
    uids = {ocsf_classes.ACCOUNT_CHANGE, ocsf_classes.AUTHENTICATION, ocsf_classes.ENTITY_MANAGEMENT}
    assert uids | {ocsf_classes.USER_ACCESS} == set(ocsf.CLASS_NAMES)
