# Forward a host port to the guest's SSH server: a NAT static mapping and an inbound firewall rule,
# both named after the VM so teardown finds them. Idempotent, honours check mode.
[CmdletBinding(SupportsShouldProcess)]
param (
    [Parameter(Mandatory)]
    [string]
    $Name,

    [Parameter(Mandatory)]
    [string]
    $NatName,

    [Parameter(Mandatory)]
    [int]
    $ExternalPort,

    [Parameter(Mandatory)]
    [string]
    $InternalAddress
)

$ErrorActionPreference = 'Stop'
$Ansible.Changed = $false
$actions = [System.Collections.Generic.List[string]]::new()
$rule = "testbed-ssh-$Name"

$mapping = Get-NetNatStaticMapping -NatName $NatName -ErrorAction SilentlyContinue |
    Where-Object { $_.ExternalPort -eq $ExternalPort -and $_.Protocol -eq 'TCP' }
if ($mapping -and ($mapping.InternalIPAddress -ne $InternalAddress -or $mapping.InternalPort -ne 22)) {
    throw "host port $ExternalPort is forwarded to $($mapping.InternalIPAddress):$($mapping.InternalPort) already: choose another hyperv_guest_ssh_port"
}
if (-not $mapping) {
    $actions.Add("Add-NetNatStaticMapping TCP $ExternalPort -> ${InternalAddress}:22")
    $Ansible.Changed = $true
    if ($PSCmdlet.ShouldProcess($NatName, 'Add-NetNatStaticMapping')) {
        $null = Add-NetNatStaticMapping -NatName $NatName -Protocol TCP -ExternalIPAddress 0.0.0.0 `
            -ExternalPort $ExternalPort -InternalIPAddress $InternalAddress -InternalPort 22
    }
}
if (-not (Get-NetFirewallRule -Name $rule -ErrorAction SilentlyContinue)) {
    $actions.Add("New-NetFirewallRule $rule TCP $ExternalPort")
    $Ansible.Changed = $true
    if ($PSCmdlet.ShouldProcess($rule, 'New-NetFirewallRule')) {
        $null = New-NetFirewallRule -Name $rule -DisplayName "testbed SSH to $Name" -Direction Inbound `
            -Protocol TCP -LocalPort $ExternalPort -Action Allow
    }
}
$Ansible.Result = @{ actions = $actions.ToArray() }
