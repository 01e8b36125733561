# Remove the guests' switch and NAT, only when the hyperv_host role made them (switch notes).
[CmdletBinding(SupportsShouldProcess)]
param (
    [Parameter(Mandatory)]
    [string]
    $SwitchName,

    [string]
    $NatName = 'testbed-nat'
)

$ErrorActionPreference = 'Stop'
$note = 'testbed: created by the hyperv_host role'
$Ansible.Changed = $false
$actions = [System.Collections.Generic.List[string]]::new()

$switch = Get-VMSwitch -Name $SwitchName -ErrorAction SilentlyContinue
if ($switch -and $switch.Notes -eq $note) {
    $nat = Get-NetNat -Name $NatName -ErrorAction SilentlyContinue
    if ($nat) {
        $actions.Add("Remove-NetNat $NatName")
        if ($PSCmdlet.ShouldProcess($NatName, 'Remove-NetNat')) {
            Remove-NetNat -Name $NatName -Confirm:$false
        }
    }
    $actions.Add("Remove-VMSwitch $SwitchName")
    if ($PSCmdlet.ShouldProcess($SwitchName, 'Remove-VMSwitch')) {
        Remove-VMSwitch -Name $SwitchName -Force
    }
    $Ansible.Changed = $true
}
$Ansible.Result = @{ actions = $actions.ToArray() }
