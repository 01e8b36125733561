# Wait until the guest's KVP daemon reports an IPv4 address on its network adapter (read-only).
[CmdletBinding(SupportsShouldProcess)]
param (
    [Parameter(Mandatory)]
    [string]
    $Name,

    [int]
    $TimeoutSeconds = 600
)

$ErrorActionPreference = 'Stop'
$deadline = (Get-Date).AddSeconds($TimeoutSeconds)
$ipv4 = $null
while (-not $ipv4) {
    $ipv4 = @(Get-VMNetworkAdapter -VMName $Name).IPAddresses |
        Where-Object { $_ -match '^\d+\.\d+\.\d+\.\d+$' -and $_ -notlike '169.254.*' } |
        Select-Object -First 1
    if (-not $ipv4) {
        if ((Get-Date) -gt $deadline) {
            throw "VM $Name reported no IPv4 address through KVP within $TimeoutSeconds s (is hv_kvp_daemon running in the guest?)"
        }
        Start-Sleep -Seconds 3
    }
}
$Ansible.Result = @{ ipv4 = $ipv4 }
