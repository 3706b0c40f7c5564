"""DKIM public keys for the analytics tests, made with the cryptography package (so the tests need
no key generation, and run on Python 3.9 without it)."""

KEYS = {
    "spki-1024": (
        "MIGfMA0GCSqGSIb3DQEBAQUAA4GNADCBiQKBgQDWX4HV51AVaTpJwhEnJ8CEdASxk5lIDy+IvBDJ7kzVsKuuxfrsKpaGixA7"
        "iSFPqcIIxONmUwecjQoGk9KVJHOBF9ssgoaiYYFeGg+OLJgKYiA11RvIPcTX0om+xMwQI5ZAMu5dmjr0fwaQDAQUMm8ZE7SH"
        "QJLigCvUZNdjHw+xlQIDAQAB"
    ),
    "spki-2048": (
        "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAozBZ4DFKxeAPcVkB43kh0aPMdvvkB2DBE3uc0IGCJa/pNaXC+0Ja"
        "oNeNO8uLkanIfIh5UFP4jN4fIAssEmRADwtoXfHAt8u1PU1mbVIDO0jq2gxpFUgw/oPas49Fwb7SdM4qDh4v1aiOLR4yAE4V"
        "upH8rad4lkJjcEHII7PhZRdLP80AXw/dPMvMh8vac/9MWY+0pfOo4GDKgApjZxzBypqbkMMqN0kBHK7o07L4y4YwSojO3JHl"
        "C0keTZOOOScVN+MCrP9I4Qt8GaptqIFl/+YfNj7WIRxYnLbYTeKgZzdRJXKy7Dr1Dh3ReTUuUeAD69kWDuhJvcqt08H+JezN"
        "AQIDAQAB"
    ),
    "pkcs1-2048": (
        "MIIBCgKCAQEArelGxONvyIkf88FO1KGQgsuPxFDkyi/idEudkMWAeVmqF0KmE9sWSC5/n7Uh6/h82Qt8UjJfhIRtPd7UYUsC"
        "NJalVi6Nn1u1PUQqww2/jRkPm3rxPvdiq0VUj1Ql0cySh4GsgYnz1N0Hk15S3hkoBCmIQw8ZLYu4ADygGV/dcWxWnC/imnH+"
        "PHmb077B18Cw9PxnFz5plclUB15+dKMkaAys7gwEzMP2U5ykZrepNTX4emOuRJpWIqhZQPjVzI28BtRUri3OptUUQAyKFMJg"
        "XyXyWO2TF/Kd5FxfiNAsyN8HT7pnUY73j2Ofjehlwg+LXKzIC8nu5wJXJeGYWOjpuwIDAQAB"
    ),
    "ed25519": ("eJjKmOf9MBLqFW+qchIaeR59KCm3y11nezKoO8Av0sw="),
}
