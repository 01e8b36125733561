# Facts of a Hyper-V host, read-only (SupportsShouldProcess: it runs in check mode too).
# Returned in $Ansible.Result; hyperv_usable is false, with hyperv_reason, when the role or the
# Virtual Machine Management service is missing.
[CmdletBinding(SupportsShouldProcess)]
param ()

$ErrorActionPreference = 'Stop'
$os = Get-CimInstance -ClassName Win32_OperatingSystem
$cs = Get-CimInstance -ClassName Win32_ComputerSystem
$cpu = @(Get-CimInstance -ClassName Win32_Processor)
$server = $os.ProductType -ne 1

if ($server) {
    $feature = Get-WindowsFeature -Name Hyper-V
    $installed = [bool]$feature.Installed
}
else {
    $feature = Get-WindowsOptionalFeature -Online -FeatureName Microsoft-Hyper-V-All
    $installed = "$($feature.State)" -eq 'Enabled'
}
$vmms = Get-Service -Name vmms -ErrorAction SilentlyContinue

$facts = [ordered]@{
    host_name = $env:COMPUTERNAME
    os_caption = $os.Caption
    os_version = $os.Version
    os_build = [int]$os.BuildNumber
    server = $server
    cpu_model = $cpu[0].Name.Trim()
    cpu_vendor = $cpu[0].Manufacturer
    cpu_sockets = $cpu.Count
    logical_processors = [int]$cs.NumberOfLogicalProcessors
    memory_bytes = [int64]$cs.TotalPhysicalMemory
    virtualization_firmware_enabled = [bool]$cpu[0].VirtualizationFirmwareEnabled
    host_is_virtual_machine = $cs.Model -eq 'Virtual Machine'
    hyperv_installed = $installed
    hyperv_usable = $false
    hyperv_reason = ''
}

if (-not $installed) {
    $facts.hyperv_reason = 'the Hyper-V role is not installed'
}
elseif (-not $vmms -or "$($vmms.Status)" -ne 'Running') {
    $facts.hyperv_reason = 'the Virtual Machine Management service (vmms) is not running'
}
else {
    $vmHost = Get-VMHost
    $facts.hyperv_usable = $true
    $facts.hyperv_version = (Get-Item -LiteralPath "$env:SystemRoot\System32\vmms.exe").VersionInfo.ProductVersion
    $facts.vm_config_versions = @(Get-VMHostSupportedVersion | ForEach-Object { "$($_.Version)" })
    $facts.logical_processors = [int]$vmHost.LogicalProcessorCount
    $facts.memory_bytes = [int64]$vmHost.MemoryCapacity
    $facts.numa_spanning = [bool]$vmHost.NumaSpanningEnabled
    $facts.numa_nodes = @(Get-VMHostNumaNode).Count
    $facts.default_vhd_path = $vmHost.VirtualHardDiskPath
    $facts.switches = @(Get-VMSwitch | ForEach-Object {
            [ordered]@{ name = $_.Name; type = "$($_.SwitchType)"; notes = $_.Notes }
        })
}

# Virtualization-based security and HVCI (memory integrity): Win32_DeviceGuard
$dg = Get-CimInstance -Namespace root\Microsoft\Windows\DeviceGuard -ClassName Win32_DeviceGuard -ErrorAction SilentlyContinue
$vbsStates = @{ 0 = 'off'; 1 = 'enabled, not running'; 2 = 'running' }
$facts.vbs = if ($dg) { $vbsStates[[int]$dg.VirtualizationBasedSecurityStatus] } else { 'unknown' }
$facts.hvci = [bool]($dg -and @($dg.SecurityServicesRunning) -contains 2)

# Hypervisor scheduler type: event 2 of the hypervisor's log at boot
$schedulers = @{ 1 = 'classic (SMT off)'; 2 = 'classic'; 3 = 'core'; 4 = 'root' }
$event = Get-WinEvent -FilterHashtable @{ LogName = 'System'; ProviderName = 'Microsoft-Windows-Hyper-V-Hypervisor'; Id = 2 } `
    -MaxEvents 1 -ErrorAction SilentlyContinue
$facts.scheduler_type = if ($event) { $schedulers[[int]$event.Properties[0].Value] } else { 'unknown' }

# Nested virtualization: this host runs inside a VM, and its guests may expose virtualization
$facts.nested_virtualization = [bool]($facts.host_is_virtual_machine -and $cs.HypervisorPresent)

$Ansible.Result = $facts
