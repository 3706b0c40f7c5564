"""Write README.md's configuration table from forwarder/config/table.py (``--check``: exit 1 when
README.md is not what the table gives, without writing)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from forwarder.config import VARIABLES
from forwarder.config.readme import markdown_table, with_table

README = Path(__file__).resolve().parents[1] / "README.md"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="only tell whether README.md is current")
    args = parser.parse_args()
    current = README.read_text(encoding="utf-8")
    wanted = with_table(current, markdown_table(VARIABLES))
    if args.check:
        if wanted != current:
            sys.stderr.write("README.md's configuration table is stale: run python tools/config_table.py\n")
            return 1
        return 0
    README.write_text(wanted, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
