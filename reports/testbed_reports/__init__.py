"""Controller-side analysis and report builder of the testbed toolkit."""

__version__ = "0.1.0"
