"""Splunk runs this script for the emailauth_audit modular input; the work is in handlers.splunk_input."""

import os
import sys

# The add-on's own copies of the forwarder and its dependencies come first on the path.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "lib"))

from handlers.splunk_input import main

if __name__ == "__main__":
    sys.exit(main(sys.argv))
