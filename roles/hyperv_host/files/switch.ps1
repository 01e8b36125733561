# The guests' virtual switch: internal with a NAT on the host (the host's address on it is the
# guests' gateway), or external on a physical adapter. Idempotent, honours check mode. The notes
# of a switch this script makes mark it, so teardown removes only what it made.
[CmdletBinding(SupportsShouldProcess)]
param (
    [Parameter(Mandatory)]
    [string]
    $SwitchName,

    [ValidateSet('internal', 'external')]
    [string]
    $SwitchType = 'internal',

    [string]
    $NetAdapterName = '',

    [string]
    $NatName = 'testbed-nat',

    [string]
    $NatPrefix = '192.168.250.0/24',

    [string]
    $GatewayAddress = '192.168.250.1'
)

$ErrorActionPreference = 'Stop'
$note = 'testbed: created by the hyperv_host role'
$Ansible.Changed = $false
$actions = [System.Collections.Generic.List[string]]::new()

$switch = Get-VMSwitch -Name $SwitchName -ErrorAction SilentlyContinue
if ($switch -and "$($switch.SwitchType)" -ne $SwitchType) {
    throw "virtual switch '$SwitchName' exists as $($switch.SwitchType), not $SwitchType: choose another hyperv_host_switch_name"
}
if (-not $switch) {
    $actions.Add("New-VMSwitch $SwitchName ($SwitchType)")
    if ($PSCmdlet.ShouldProcess($SwitchName, 'New-VMSwitch')) {
        if ($SwitchType -eq 'external') {
            $switch = New-VMSwitch -Name $SwitchName -NetAdapterName $NetAdapterName -AllowManagementOS $true -Notes $note
        }
        else {
            $switch = New-VMSwitch -Name $SwitchName -SwitchType Internal -Notes $note
        }
    }
    $Ansible.Changed = $true
}

if ($SwitchType -eq 'internal') {
    $alias = "vEthernet ($SwitchName)"
    $prefixLength = [int]($NatPrefix -split '/')[1]
    $address = Get-NetIPAddress -InterfaceAlias $alias -AddressFamily IPv4 -ErrorAction SilentlyContinue |
        Where-Object { $_.IPAddress -eq $GatewayAddress }
    if (-not $address) {
        $actions.Add("New-NetIPAddress $GatewayAddress/$prefixLength on $alias")
        if ($PSCmdlet.ShouldProcess($alias, 'New-NetIPAddress')) {
            $null = New-NetIPAddress -InterfaceAlias $alias -IPAddress $GatewayAddress -PrefixLength $prefixLength
        }
        $Ansible.Changed = $true
    }
    $nat = Get-NetNat -Name $NatName -ErrorAction SilentlyContinue
    if ($nat -and $nat.InternalIPInterfaceAddressPrefix -ne $NatPrefix) {
        throw "NAT '$NatName' exists for $($nat.InternalIPInterfaceAddressPrefix), not $NatPrefix"
    }
    if (-not $nat) {
        $actions.Add("New-NetNat $NatName $NatPrefix")
        if ($PSCmdlet.ShouldProcess($NatName, 'New-NetNat')) {
            $null = New-NetNat -Name $NatName -InternalIPInterfaceAddressPrefix $NatPrefix
        }
        $Ansible.Changed = $true
    }
}

$Ansible.Result = [ordered]@{
    name = $SwitchName
    type = $SwitchType
    gateway = if ($SwitchType -eq 'internal') { $GatewayAddress } else { '' }
    actions = $actions.ToArray()
}
