"""The benchmark agent: what runs on a target machine.

Plan parsing and derivation, the runner, workloads, the machine fingerprint (sysinfo), the I/O
guard and scratch space, process tracking and telemetry, and the result writer. Shared libraries
(records, errors, attestation, sizes, cost) are in :mod:`testbed_shared`; the services the
toolkit runs (the FaaS emulator, the local key service) are in :mod:`testbed_services`.
"""

__version__ = "0.1.0"
