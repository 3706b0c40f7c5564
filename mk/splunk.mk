# The Splunk add-on: dist/TA-fortra-emailauth-<version>.tar.gz (tools/build_splunk_app.py), built by
# ucc-gen (splunk-add-on-ucc-framework, pinned) from splunk_app/. ucc-gen and splunk-appinspect each
# get a virtualenv of their own: their pins (appinspect: chardet 3, bs4 4.10) must not leak into the
# test environment. AppInspect needs libmagic from Debian.
UCC_VERSION     := 6.6.0
UCC_VENV        := .venv-ucc
UCC_GEN         := $(UCC_VENV)/bin/ucc-gen
APPINSPECT_VENV := .venv-appinspect
APPINSPECT      := $(APPINSPECT_VENV)/bin/splunk-appinspect

.PHONY: splunk-app

splunk-app: $(STAMP) $(UCC_GEN)
	UCC_GEN=$(abspath $(UCC_GEN)) $(BIN)/python tools/build_splunk_app.py

$(UCC_GEN): mk/splunk.mk
	rm -rf $(UCC_VENV)
	$(PYTHON) -m venv $(UCC_VENV)
	$(UCC_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(UCC_VENV)/bin/python -m pip install --quiet splunk-add-on-ucc-framework==$(UCC_VERSION)
	touch $@

$(APPINSPECT):
	dpkg -s libmagic1 >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libmagic1 >/dev/null; }
	$(PYTHON) -m venv $(APPINSPECT_VENV)
	$(APPINSPECT_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(APPINSPECT_VENV)/bin/python -m pip install --quiet splunk-appinspect
