"""``python -m testbed_agent``."""

from testbed_agent.cli import main

raise SystemExit(main())
