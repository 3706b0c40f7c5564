"""Forward an email-authentication platform's audit trail to a SIEM."""

__version__ = "0.1.0"
