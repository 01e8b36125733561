# Remove one testbed guest: the VM, its own VHDX files and directory, its SSH forward (NAT static
# mapping of SshPort and the firewall rule named after it); with PurgeImages also the base VHDX directory.
# Nothing else. Idempotent, honours check mode.
[CmdletBinding(SupportsShouldProcess)]
param (
    [Parameter(Mandatory)]
    [string]
    $Name,

    [Parameter(Mandatory)]
    [string]
    $StoragePath,

    [string]
    $NatName = 'testbed-nat',

    [int]
    $SshPort = 0,

    [bool]
    $PurgeImages = $false
)

$ErrorActionPreference = 'Stop'
$Ansible.Changed = $false
$actions = [System.Collections.Generic.List[string]]::new()
$vmDir = Join-Path -Path $StoragePath -ChildPath $Name

function Invoke-Change {
    param ([string]$Description, [scriptblock]$Action)
    $actions.Add($Description)
    $Ansible.Changed = $true
    if ($PSCmdlet.ShouldProcess($Name, $Description)) {
        & $Action
    }
}

$vm = Get-VM -Name $Name -ErrorAction SilentlyContinue
if ($vm) {
    $disks = @(Get-VMHardDiskDrive -VMName $Name | ForEach-Object { $_.Path })
    if ("$($vm.State)" -ne 'Off') {
        Invoke-Change "Stop-VM $Name -TurnOff" { Stop-VM -Name $Name -TurnOff -Force }
    }
    Invoke-Change "Remove-VM $Name" { Remove-VM -Name $Name -Force }
    foreach ($disk in $disks) {
        if ($disk -like "$vmDir\*" -and (Test-Path -LiteralPath $disk)) {
            Invoke-Change "Remove-Item $disk" { Remove-Item -LiteralPath $disk -Force }
        }
    }
}
if (Test-Path -LiteralPath $vmDir) {
    Invoke-Change "Remove-Item $vmDir" { Remove-Item -LiteralPath $vmDir -Recurse -Force }
}
$rule = "testbed-ssh-$Name"
if (Get-NetFirewallRule -Name $rule -ErrorAction SilentlyContinue) {
    Invoke-Change "Remove-NetFirewallRule $rule" { Remove-NetFirewallRule -Name $rule }
}
$mapping = Get-NetNatStaticMapping -NatName $NatName -ErrorAction SilentlyContinue |
    Where-Object { $_.ExternalPort -eq $SshPort -and $_.InternalPort -eq 22 -and $_.Protocol -eq 'TCP' }
if ($SshPort -and $mapping) {
    Invoke-Change "Remove-NetNatStaticMapping TCP $SshPort" {
        $mapping | Remove-NetNatStaticMapping -Confirm:$false
    }
}
$images = Join-Path -Path $StoragePath -ChildPath 'images'
if ($PurgeImages -and (Test-Path -LiteralPath $images)) {
    Invoke-Change "Remove-Item $images" { Remove-Item -LiteralPath $images -Recurse -Force }
}
$Ansible.Result = @{ actions = $actions.ToArray() }
