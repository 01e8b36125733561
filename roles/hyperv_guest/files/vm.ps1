# One testbed guest as a Generation 2 VM: a differencing VHDX over the base image, static memory,
# vCPU count and resource controls, Secure Boot with the given template, optional vTPM,
# checkpoints off, KVP on; started. Idempotent (settings are compared before they are set; a
# running VM whose settings differ is refused rather than restarted) and honours check mode.
[CmdletBinding(SupportsShouldProcess)]
param (
    [Parameter(Mandatory)]
    [string]
    $Name,

    [Parameter(Mandatory)]
    [string]
    $StoragePath,

    [Parameter(Mandatory)]
    [string]
    $BaseVhdx,

    [Parameter(Mandatory)]
    [string]
    $SwitchName,

    [int]
    $ProcessorCount = 1,

    [int]
    $MemoryMiB = 1024,

    [int]
    $Reserve = 0,

    [int]
    $Maximum = 100,

    [int]
    $RelativeWeight = 100,

    [bool]
    $ExposeVirtualizationExtensions = $false,

    [string]
    $SecureBootTemplate = 'MicrosoftUEFICertificateAuthority',

    [bool]
    $Tpm = $false
)

$ErrorActionPreference = 'Stop'
$Ansible.Changed = $false
$actions = [System.Collections.Generic.List[string]]::new()
$vmDir = Join-Path -Path $StoragePath -ChildPath $Name
$vhdx = Join-Path -Path $vmDir -ChildPath "$Name.vhdx"
$memoryBytes = [int64]$MemoryMiB * 1048576

function Invoke-Change {
    param ([string]$Description, [scriptblock]$Action)
    $actions.Add($Description)
    $Ansible.Changed = $true
    if ($PSCmdlet.ShouldProcess($Name, $Description)) {
        & $Action
    }
}

$vm = Get-VM -Name $Name -ErrorAction SilentlyContinue
if (-not $vm) {
    if (-not (Test-Path -LiteralPath $vhdx)) {
        Invoke-Change "New-VHD $vhdx (differencing, parent $BaseVhdx)" {
            $null = New-Item -Path $vmDir -ItemType Directory -Force
            $null = New-VHD -Path $vhdx -ParentPath $BaseVhdx -Differencing
        }
    }
    Invoke-Change "New-VM $Name (generation 2)" {
        $null = New-VM -Name $Name -Generation 2 -MemoryStartupBytes $memoryBytes -VHDPath $vhdx `
            -SwitchName $SwitchName -Path $StoragePath
    }
    $vm = Get-VM -Name $Name -ErrorAction SilentlyContinue
}

if ($vm) {
    $processor = Get-VMProcessor -VMName $Name
    $memory = Get-VMMemory -VMName $Name
    $firmware = Get-VMFirmware -VMName $Name
    $security = Get-VMSecurity -VMName $Name
    $wanted = [ordered]@{
        processor = $processor.Count -eq $ProcessorCount -and $processor.Reserve -eq $Reserve -and
            $processor.Maximum -eq $Maximum -and $processor.RelativeWeight -eq $RelativeWeight -and
            $processor.ExposeVirtualizationExtensions -eq $ExposeVirtualizationExtensions
        memory = -not $memory.DynamicMemoryEnabled -and $memory.Startup -eq $memoryBytes
        firmware = "$($firmware.SecureBoot)" -eq 'On' -and $firmware.SecureBootTemplate -eq $SecureBootTemplate
        checkpoints = "$($vm.CheckpointType)" -eq 'Disabled' -and -not $vm.AutomaticCheckpointsEnabled
        tpm = [bool]$security.TpmEnabled -eq $Tpm
    }
    $differs = @($wanted.Keys | Where-Object { -not $wanted[$_] })
    if ($differs -and "$($vm.State)" -ne 'Off') {
        throw "VM $Name runs with other settings ($($differs -join ', ')) than asked; remove it (teardown) or stop it first"
    }
    if (-not $wanted.processor) {
        Invoke-Change "Set-VMProcessor -Count $ProcessorCount -Reserve $Reserve -Maximum $Maximum -RelativeWeight $RelativeWeight" {
            Set-VMProcessor -VMName $Name -Count $ProcessorCount -Reserve $Reserve -Maximum $Maximum `
                -RelativeWeight $RelativeWeight -ExposeVirtualizationExtensions $ExposeVirtualizationExtensions
        }
    }
    if (-not $wanted.memory) {
        Invoke-Change "Set-VMMemory -DynamicMemoryEnabled false -StartupBytes $memoryBytes" {
            Set-VMMemory -VMName $Name -DynamicMemoryEnabled $false -StartupBytes $memoryBytes
        }
    }
    if (-not $wanted.firmware) {
        Invoke-Change "Set-VMFirmware -EnableSecureBoot On -SecureBootTemplate $SecureBootTemplate" {
            Set-VMFirmware -VMName $Name -EnableSecureBoot On -SecureBootTemplate $SecureBootTemplate
        }
    }
    if (-not $wanted.checkpoints) {
        Invoke-Change 'Set-VM -CheckpointType Disabled -AutomaticCheckpointsEnabled false' {
            Set-VM -Name $Name -CheckpointType Disabled -AutomaticCheckpointsEnabled $false
        }
    }
    if (-not $wanted.tpm) {
        if ($Tpm) {
            Invoke-Change 'Enable-VMTPM (local key protector)' {
                Set-VMKeyProtector -VMName $Name -NewLocalKeyProtector
                Enable-VMTPM -VMName $Name
            }
        }
        else {
            Invoke-Change 'Disable-VMTPM' { Disable-VMTPM -VMName $Name }
        }
    }
    $kvp = Get-VMIntegrationService -VMName $Name | Where-Object { $_.Id -like '*2A34B1C2-FD73-4043-8A5B-DD2159BC743F' }
    if ($kvp -and -not $kvp.Enabled) {
        Invoke-Change 'Enable-VMIntegrationService Key-Value Pair Exchange' {
            Enable-VMIntegrationService -VMName $Name -Name $kvp.Name
        }
    }
    if ("$($vm.State)" -ne 'Running') {
        Invoke-Change "Start-VM $Name" { Start-VM -Name $Name }
    }
    $vm = Get-VM -Name $Name
    $processor = Get-VMProcessor -VMName $Name
    $firmware = Get-VMFirmware -VMName $Name
}

$summary = $null
if ($vm) {
    $summary = [ordered]@{
        name = $vm.Name
        id = "$($vm.Id)"
        state = "$($vm.State)"
        generation = $vm.Generation
        version = "$($vm.Version)"
        processor_count = $processor.Count
        memory_startup_bytes = $vm.MemoryStartup
        dynamic_memory = $vm.DynamicMemoryEnabled
        secure_boot = "$($firmware.SecureBoot)"
        secure_boot_template = $firmware.SecureBootTemplate
        checkpoint_type = "$($vm.CheckpointType)"
        vhdx = $vhdx
    }
}
$Ansible.Result = [ordered]@{
    exists = [bool]$vm
    actions = $actions.ToArray()
    vm = $summary
}
