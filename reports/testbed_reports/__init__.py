"""Controller-side analysis and report builder of the testbed toolkit."""
