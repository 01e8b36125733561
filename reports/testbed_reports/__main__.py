"""``python -m testbed_reports``."""

from testbed_reports.cli import main

raise SystemExit(main())
