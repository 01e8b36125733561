"""The controller's report: reads result directories through :mod:`testbed_shared.records`,
builds the report, audits attestation evidence and rebuilds the published studies' views. Runs on
the controller only; never part of the agent bundle a target gets.
"""

__version__ = "0.1.0"
