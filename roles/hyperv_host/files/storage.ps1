# Create the directory of the guests' disks and configuration (idempotent, honours check mode).
[CmdletBinding(SupportsShouldProcess)]
param (
    [Parameter(Mandatory)]
    [string]
    $Path
)

$ErrorActionPreference = 'Stop'
$Ansible.Changed = $false
if (-not (Test-Path -LiteralPath $Path -PathType Container)) {
    if ($PSCmdlet.ShouldProcess($Path, 'Create directory')) {
        $null = New-Item -Path $Path -ItemType Directory -Force
    }
    $Ansible.Changed = $true
}
$Ansible.Result = @{ path = $Path }
