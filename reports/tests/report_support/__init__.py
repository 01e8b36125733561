"""Test and bench support of the report (not shipped with testbed_reports): synthetic result stores
(``synth``) and the seeded simulations that calibrate the decision rules (``calibration``).

The report tests find this package on their own path (reports/tests); bench scripts and other test
directories put reports/tests on ``sys.path`` first.
"""
