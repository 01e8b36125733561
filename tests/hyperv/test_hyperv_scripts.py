"""Every PowerShell script of the Hyper-V roles parses with a real PowerShell grammar
(tree-sitter-powershell), and every inline ``script:`` of their tasks too."""

from __future__ import annotations

from pathlib import Path

import pytest
import tree_sitter_powershell
import yaml
from tree_sitter import Language, Node, Parser

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(ROOT.glob("roles/hyperv_*/files/*.ps1"))
PARSER = Parser(Language(tree_sitter_powershell.language()))


def syntax_errors(source: bytes) -> list[str]:
    """ERROR and MISSING nodes of *source*, as 'line:column text'."""
    found: list[str] = []

    def walk(node: Node) -> None:
        if node.type == "ERROR" or node.is_missing:
            text = source[node.start_byte : node.end_byte][:60].decode(errors="replace")
            found.append(f"{node.start_point[0] + 1}:{node.start_point[1] + 1} {node.type} {text!r}")
        for child in node.children:
            walk(child)

    walk(PARSER.parse(source).root_node)
    return found


def inline_scripts() -> list[tuple[str, str]]:
    """(task file: task name, script) of every win_powershell task with an inline script."""
    found = []
    for path in sorted(ROOT.glob("roles/hyperv_*/tasks/*.yml")):
        for task in yaml.safe_load(path.read_text()) or []:
            args = task.get("ansible.windows.win_powershell") or {}
            if "script" in args:
                found.append((f"{path.relative_to(ROOT)}: {task['name']}", args["script"]))
    return found


def test_the_grammar_finds_errors() -> None:
    """The check can fail: a broken script has ERROR or MISSING nodes."""
    assert syntax_errors(b"if ($a -eq 1 {\n  Write-Output 'x'\n")
    assert syntax_errors(b"function f( { }")
    assert not syntax_errors(
        b"[CmdletBinding(SupportsShouldProcess)]\nparam ([string]$Name)\n$x = @{ a = 1 }\n"
    )


def test_there_are_scripts() -> None:
    names = {p.stem for p in SCRIPTS}
    assert {"host_facts", "switch", "vm", "vm_absent", "kvp", "forward", "wait_ip"} <= names


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_script_parses(script: Path) -> None:
    assert syntax_errors(script.read_bytes()) == [], script


def test_inline_scripts_parse() -> None:
    for where, script in inline_scripts():
        assert syntax_errors(script.encode()) == [], where


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_scripts_declare_check_mode_support(script: Path) -> None:
    """win_powershell runs a script in check mode only with SupportsShouldProcess (else it is skipped
    and reported changed): every role script declares it and guards its changes with ShouldProcess."""
    text = script.read_text()
    assert "[CmdletBinding(SupportsShouldProcess)]" in text
    changes = ("New-", "Set-", "Remove-", "Start-", "Stop-", "Add-", "Enable-", "Disable-")
    if any(f"{verb}VM" in text or f"{verb}Net" in text for verb in changes):
        assert "$PSCmdlet.ShouldProcess(" in text
