# The Splunk add-on: dist/TA-fortra-emailauth-<version>.tar.gz (tools/build_splunk_app.py).
# splunk-appinspect gets a virtualenv of its own: it pins old packages (chardet 3, bs4 4.10) that
# must not leak into the test environment. It needs libmagic from Debian.
APPINSPECT_VENV := .venv-appinspect
APPINSPECT      := $(APPINSPECT_VENV)/bin/splunk-appinspect

.PHONY: splunk-app

splunk-app: $(STAMP)
	$(BIN)/python tools/build_splunk_app.py

$(APPINSPECT):
	dpkg -s libmagic1 >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmagic1 >/dev/null; }
	$(PYTHON) -m venv $(APPINSPECT_VENV)
	$(APPINSPECT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(APPINSPECT_VENV)/bin/python -m pip install --quiet splunk-appinspect
