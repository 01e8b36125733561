"""Services the toolkit runs for benchmarks: the FaaS emulator (``faas``), the local key service
(``kms``) and the launcher that starts, waits for and stops such a service (``launcher``). They
run on a FaaS host or beside the agent on a target (part of the agent bundle); the agent's CLI
exposes the emulator as ``testbed-agent faas``. Imports only :mod:`testbed_shared`.
"""
