"""Write docs/commands.md: every command and option of testbed-agent and testbed-report, from their
argument parsers (the same text as ``--help``), so the reference cannot drift from the code.

    python scripts/gen-commands-doc.py            # rewrite docs/commands.md
    python scripts/gen-commands-doc.py --check    # exit 1 when docs/commands.md is out of date

tests/test_docs_commands.py runs the check.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "commands.md"

HEADER = """# Command reference

Every command and option of `testbed-agent` and `testbed-report`, generated from their argument
parsers by `scripts/gen-commands-doc.py` (the same text `--help` prints; tests/test_docs_commands.py
fails when this page is out of date). What the commands are for: README.md and the page of each
part in docs/; the contracts they keep: [design.md](design.md).
"""


def _subparsers(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, sub, helps.get(name, "")


def _option_rows(parser: argparse.ArgumentParser) -> list[str]:
    rows = []
    for a in parser._actions:
        if isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if a.option_strings:
            names = ", ".join(f"`{o}`" for o in a.option_strings)
            if a.nargs != 0:
                names += f" `{a.metavar or a.dest.upper()}`"
        else:
            names = f"`{a.metavar or a.dest}`"
        text = (a.help or "").replace("%(default)s", str(a.default)).replace("%%", "%")
        text = text.replace("|", "\\|").replace("\n", " ")
        if a.choices and a.option_strings:
            text += f" (one of: {', '.join(map(str, a.choices))})"
        rows.append(f"| {names} | {' '.join(text.split())} |")
    return rows


def _section(path: str, parser: argparse.ArgumentParser, about: str, level: int) -> list[str]:
    out = [f"{'#' * level} `{path}`", ""]
    if about:
        out += [" ".join(about.split()), ""]
    usage = " ".join(parser.format_usage().replace("usage: ", "").split())
    out += ["```", usage, "```", ""]
    rows = _option_rows(parser)
    if rows:
        out += ["| argument | meaning |", "|---|---|", *rows, ""]
    for name, sub, help_text in _subparsers(parser):
        out += _section(f"{path} {name}", sub, help_text, min(level + 1, 4))
    return out


def render() -> str:
    sys.path[:0] = [str(ROOT / "shared"), str(ROOT / "agent"), str(ROOT / "reports")]
    from testbed_agent.cli import build_parser as agent_parser  # noqa: PLC0415 - after sys.path
    from testbed_reports.cli import build_parser as report_parser  # noqa: PLC0415 - after sys.path

    lines = [HEADER]
    for prog, parser in (("testbed-agent", agent_parser()), ("testbed-report", report_parser())):
        parser.prog = prog
        lines += _section(prog, parser, "", 2)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print("docs/commands.md is out of date: run python scripts/gen-commands-doc.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
