"""The OCSF event classes the forwarder writes (Identity & Access Management), by class_uid: a module
of their own so that a reader of them (the Security Lake sink's custom sources) loads no formatter."""

ACCOUNT_CHANGE, AUTHENTICATION, ENTITY_MANAGEMENT, USER_ACCESS = 3001, 3002, 3004, 3005
