"""Access to the machine's low-level facts: CPUID, MSRs, device nodes, kernel log.

Everything the confidential-computing detection reads goes through a :class:`Probe`, so the
detection can be tested on recorded inputs (:class:`RecordedProbe`).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

Regs = tuple[int, int, int, int]  # eax, ebx, ecx, edx

CC_PATHS = (
    "/dev/sev-guest",
    "/dev/tdx_guest",
    "/dev/tdx-guest",
    "/dev/tpmrm0",
    "/dev/tpm0",
    "/sys/kernel/config/tsm/report",
    "/sys/firmware/efi",
    "/dev/sev",
)


class Probe:
    """Reads the live machine. Any reading that is unavailable returns None."""

    def cpuid(self, leaf: int, subleaf: int = 0) -> Regs | None:
        dev = Path("/dev/cpu/0/cpuid")
        if dev.exists():
            try:
                fd = os.open(dev, os.O_RDONLY)
                try:
                    data = os.pread(fd, 16, (subleaf << 32) | leaf)
                finally:
                    os.close(fd)
                return struct.unpack("<4I", data) if len(data) == 16 else None
            except OSError:
                pass
        return _cpuid_tool(leaf, subleaf)

    def msr(self, index: int) -> int | None:
        try:
            fd = os.open("/dev/cpu/0/msr", os.O_RDONLY)
        except OSError:
            return None
        try:
            data = os.pread(fd, 8, index)
            return struct.unpack("<Q", data)[0] if len(data) == 8 else None
        except OSError:
            return None
        finally:
            os.close(fd)

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def kernel_log(self) -> str:
        for cmd in (["dmesg", "--notime"], ["journalctl", "-k", "-b", "--no-pager", "-o", "cat"]):
            if shutil.which(cmd[0]):
                try:
                    out = subprocess.run(cmd, capture_output=True, text=True, timeout=10, check=False)  # noqa: S603 - a read-only probe of the kernel log, bounded (10 s)
                except (OSError, subprocess.TimeoutExpired):
                    continue
                if out.returncode == 0 and out.stdout:
                    return out.stdout
        return ""

    def cpuinfo_flags(self) -> set[str]:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return set()
        m = re.search(r"^flags\s*:\s*(.*)$", text, re.M)
        return set(m.group(1).split()) if m else set()

    def read(self, path: str) -> str | None:
        """A small text file (DMI strings, /proc entries), stripped; None when unreadable."""
        try:
            return Path(path).read_text(errors="replace").strip()
        except OSError:
            return None

    def command(self, argv: list[str]) -> str | None:
        """A read-only probe command's stdout (e.g. systemd-detect-virt), stripped; None when it is
        missing, fails or prints nothing (systemd-detect-virt exits 1 when it finds nothing)."""
        if not shutil.which(argv[0]):
            return None
        try:
            out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)  # noqa: S603 - a read-only probe command of this module, bounded (10 s)
        except (OSError, subprocess.TimeoutExpired):
            return None
        text = out.stdout.strip()
        return text if out.returncode == 0 and text else None


def _cpuid_tool(leaf: int, subleaf: int) -> Regs | None:
    """Fallback through the ``cpuid`` tool (Debian package cpuid) when /dev/cpu/0/cpuid is absent."""
    if not shutil.which("cpuid"):
        return None
    try:
        out = subprocess.run(  # noqa: S603 - the cpuid tool, read-only, bounded (10 s)
            ["cpuid", "-1", "-r", "-l", hex(leaf), "-s", hex(subleaf)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"eax=(0x[0-9a-f]+)\s+ebx=(0x[0-9a-f]+)\s+ecx=(0x[0-9a-f]+)\s+edx=(0x[0-9a-f]+)", out)
    return tuple(int(g, 16) for g in m.groups()) if m else None  # type: ignore[return-value]


@dataclass
class RecordedProbe(Probe):
    """A probe answering from recorded values (tests, or re-analysis of a saved machine)."""

    cpuid_leaves: dict[tuple[int, int], Regs] = field(default_factory=dict)
    msrs: dict[int, int] = field(default_factory=dict)
    paths: set[str] = field(default_factory=set)
    dmesg: str = ""
    flags: set[str] = field(default_factory=set)
    files: dict[str, str] = field(default_factory=dict)
    commands: dict[str, str] = field(default_factory=dict)  # " ".join(argv) -> stdout

    def cpuid(self, leaf: int, subleaf: int = 0) -> Regs | None:
        return self.cpuid_leaves.get((leaf, subleaf))

    def msr(self, index: int) -> int | None:
        return self.msrs.get(index)

    def exists(self, path: str) -> bool:
        return path in self.paths

    def kernel_log(self) -> str:
        return self.dmesg

    def cpuinfo_flags(self) -> set[str]:
        return self.flags

    def read(self, path: str) -> str | None:
        return self.files.get(path)

    def command(self, argv: list[str]) -> str | None:
        return self.commands.get(" ".join(argv))


def regs_to_str(*regs: int) -> str:
    """Registers as the ASCII string they hold (little-endian), e.g. CPUID vendor ids."""
    return b"".join(struct.pack("<I", r) for r in regs).decode("ascii", "replace").rstrip("\x00")
