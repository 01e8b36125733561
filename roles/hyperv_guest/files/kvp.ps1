# Hand key-value pairs to a running guest through Hyper-V data exchange (KVP, pool 0 in the guest):
# added when missing, modified when different, left alone when equal. Empty values are skipped.
[CmdletBinding(SupportsShouldProcess)]
param (
    [Parameter(Mandatory)]
    [string]
    $Name,

    [Parameter(Mandatory)]
    [hashtable]
    $Items
)

$ErrorActionPreference = 'Stop'
$Ansible.Changed = $false
$actions = [System.Collections.Generic.List[string]]::new()
$ns = 'root\virtualization\v2'
$vm = Get-CimInstance -Namespace $ns -ClassName Msvm_ComputerSystem -Filter "ElementName='$Name'"
if (-not $vm) {
    throw "VM $Name not found"
}
$service = Get-CimInstance -Namespace $ns -ClassName Msvm_VirtualSystemManagementService
$settings = Get-CimAssociatedInstance -InputObject $vm -ResultClassName Msvm_KvpExchangeComponent |
    Get-CimAssociatedInstance -ResultClassName Msvm_KvpExchangeComponentSettingData
$current = @{}
foreach ($xml in @($settings.HostExchangeItems)) {
    $doc = [xml]$xml
    $key = ($doc.INSTANCE.PROPERTY | Where-Object { $_.NAME -eq 'Name' }).VALUE
    $current[$key] = ($doc.INSTANCE.PROPERTY | Where-Object { $_.NAME -eq 'Data' }).VALUE
}

foreach ($key in @($Items.Keys | Sort-Object)) {
    $value = [string]$Items[$key]
    if (-not $value -or $current[$key] -eq $value) {
        continue
    }
    $method = if ($current.ContainsKey($key)) { 'ModifyKvpItems' } else { 'AddKvpItems' }
    $actions.Add("$method $key")
    $Ansible.Changed = $true
    if ($PSCmdlet.ShouldProcess($Name, "$method $key")) {
        $item = New-CimInstance -Namespace $ns -ClassName Msvm_KvpExchangeDataItem -ClientOnly -Property @{
            Name = $key; Data = $value; Source = [uint16]0
        }
        $text = ([Microsoft.Management.Infrastructure.Serialization.CimSerializer]::Create()).Serialize(
            $item, [Microsoft.Management.Infrastructure.Serialization.InstanceSerializationOptions]::None)
        $null = Invoke-CimMethod -InputObject $service -MethodName $method -Arguments @{
            TargetSystem = $vm; DataItems = @([System.Text.Encoding]::Unicode.GetString($text))
        }
    }
}
$Ansible.Result = @{ actions = $actions.ToArray() }
