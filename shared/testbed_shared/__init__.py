"""Libraries shared by the controller and the targets.

Errors and the one CLI error policy (``errors.cli_main``), atomic and guarded output files
(``atomic``), result records (``records``: their fields, checks, reading and which record counts
for an execution), sizes (``units``), the FaaS cost model (``cost``), where workload definitions
live (``paths``), study manifests (``studies``) and attestation verification and binding
(``attest``). Nothing here depends on :mod:`testbed_agent` or on the report; both depend on this
package.
"""
