"""What the S4 study adds to the crypto workload: unsafe key sizes behind ``allow_weak_keys``,
guests of a stated vCPU count, file kinds, a user's files, and which languages do what.

* **Unsafe key sizes** run only in a plan that sets ``allow_weak_keys: true`` at its top level
  (a study plan that says so, workloads/plans/crypto-hypervisor.yml): RSA below 2048 bits and
  ``rsa-raw`` (textbook RSA) at any size, Blowfish below 128 bits, 3DES. Everywhere else the plan
  is refused with an error naming the setting.
* ``guest_cpus: [N]``: a cell meant for a guest of exactly N vCPUs (S4 changed the VM's cores
  per experiment); it runs only where the machine has N CPUs and is skipped, with the reason,
  elsewhere. (``cpus`` pins with taskset inside one machine instead.)
* ``payload: pdf | image | archive``: files of that kind (:mod:`testbed_agent.workloads.crypto.files`);
  ``files_dir``: a user's own files, each a cell of its size and of the kind its extension says.
* Languages: ``rsa-raw`` and the decryption of a streamed file are implemented in Python only
  (S4's language); the other programs decrypt a file by reading it into memory, which is allowed
  up to :data:`MEMORY_DECRYPT_MAX` bytes; past that, and for ``rsa-raw``, their cells are skipped
  with the reason.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from testbed_agent.params import ParamError
from testbed_agent.workloads.crypto.files import KINDS, cached_file, minimum_size

#: kinds of a payload or of generated files (the first three are the original ones)
PAYLOADS = ("random", "json", "text", *KINDS)
#: files larger than this are decrypted by streaming only (Python); other languages skip them
MEMORY_DECRYPT_MAX = 64 << 20
PYTHON_ONLY_ALGS = {"rsa-raw": "rsa-raw (textbook RSA on the file, S4) is implemented in Python only"}
SETTING = "allow_weak_keys"


def weak_reason(alg: str, bits: int) -> str | None:
    """Why a key size is unsafe today, or None."""
    if alg == "rsa-raw":
        return f"rsa-raw (textbook RSA, no padding) with a {bits}-bit key"
    if alg.startswith("rsa") and bits < 2048:
        return f"{alg} with a {bits}-bit key (below 2048)"
    if alg == "blowfish-cbc" and bits < 128:
        return f"blowfish-cbc with a {bits}-bit key"
    if alg == "3des-cbc":
        return f"3des-cbc (Triple DES, {bits}-bit key)"
    return None


def check_weak_keys(alg: str, key_bits: Iterable[int], allowed: bool) -> None:
    """Refuse unsafe key sizes unless the plan says ``allow_weak_keys: true``."""
    if allowed:
        return
    for bits in key_bits:
        why = weak_reason(alg, bits)
        if why:
            raise ParamError(
                "params.key_bits",
                f"{why} is unsafe today: only a study plan setting {SETTING}: true at its top level runs it",
            )


def check_files(p: dict[str, Any], file_sizes: tuple[int, ...]) -> tuple[str | None, tuple[int, ...]]:
    """``payload`` kinds, ``files_dir`` and ``guest_cpus`` of a benchmark's parameters (``file_sizes``:
    the checked params.file_sizes, empty without): (files_dir or None, guest_cpus)."""
    kind = p.get("payload", "random")
    if kind not in PAYLOADS:
        raise ParamError("params.payload", f"must be one of {', '.join(PAYLOADS)}, got {kind!r}")
    files_dir = None
    if "files_dir" in p:
        d = p["files_dir"]
        if not isinstance(d, str) or not d or "\x00" in d:
            raise ParamError("params.files_dir", f"a directory path, got {d!r}")
        if "file_sizes" in p or "payload_bytes" in p:
            raise ParamError(
                "params.files_dir", "files_dir (your files) or file_sizes/payload_bytes, not both"
            )
        files_dir = d
    if kind in KINDS and file_sizes:
        least = minimum_size(kind)
        small = [s for s in file_sizes if s < least]
        if small:
            raise ParamError(
                "params.file_sizes", f"a {kind} file needs at least {least} bytes, got {small[0]}"
            )
    if kind in KINDS and not file_sizes and files_dir is None:
        raise ParamError("params.payload", f"{kind} is a kind of file: give file_sizes (or files_dir)")
    guest_cpus: tuple[int, ...] = ()
    if "guest_cpus" in p:
        if "cpus" in p:
            raise ParamError(
                "params.guest_cpus", "guest_cpus (a guest's vCPU count) or cpus (taskset), not both"
            )
        value = p["guest_cpus"]
        values = value if isinstance(value, list) else [value]
        if not values or any(isinstance(v, bool) or not isinstance(v, int) or v < 1 for v in values):
            raise ParamError("params.guest_cpus", f"a positive integer or a list of them, got {value!r}")
        guest_cpus = tuple(values)
    return files_dir, guest_cpus


def guest_skip(ncpu: int, machine_cpus: int) -> str | None:
    """Why a guest_cpus cell does not run on this machine, or None."""
    if ncpu == machine_cpus:
        return None
    return f"cell for a guest of {ncpu} vCPUs; this machine has {machine_cpus} (the guest of {ncpu} runs it)"


def language_skip(lang: str, alg: str, op: str, streamed: bool, size: int) -> str | None:
    """Why a language cannot do a cell (Python-only features), or None."""
    if lang != "python" and alg in PYTHON_ONLY_ALGS:
        return PYTHON_ONLY_ALGS[alg]
    if lang != "python" and streamed and op == "decrypt" and size > MEMORY_DECRYPT_MAX:
        return (
            f"decrypting a {size}-byte file: streamed decryption is implemented in Python only; "
            f"{lang} reads the file into memory (up to {MEMORY_DECRYPT_MAX} bytes)"
        )
    return None


def input_argv(lang: str, op: str, path: Path) -> list[str]:
    """How a cell gets its file: streamed (Python, and every encryption), else read into memory."""
    if op in ("decrypt", "verify") and lang != "python":
        return ["--input", str(path)]
    return ["--stream", str(path)]


def kind_file(scratch: Path, kind: str, size: int) -> Path:
    """A generated file of ``kind`` (pdf, image, archive) in the run's scratch, made once."""
    return cached_file(scratch / "crypto", kind, size)
