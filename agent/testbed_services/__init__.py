"""Services the toolkit runs for benchmarks: the FaaS emulator (``faas``) and the local key
service (``kms``). They run on a FaaS host or beside the agent on a target; the agent's CLI
exposes the emulator as ``testbed-agent faas``.
"""
