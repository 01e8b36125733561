"""fio job files as fio reads them, checked against an allowlist of options and values.

A job file is not trusted text: fio options can run programs (``ioengine=exec``, ``exec_prerun``),
load code (``ioengine=external:lib.so``), map or write other files (``mem=mmapshared:FILE``,
``write_iolog``, ``verify_state_save``, ``directory``) or change the machine (``ioscheduler``,
``cgroup``). So the agent does not judge the options by their text: it asks fio's own parser to
turn the job into command-line options (``fio --showcmd``, with the same environment the run
gets, so sections and ``${VAR}`` expansion are seen exactly as fio will see them), and every
option that comes out must be on :data:`ALLOWED` with a value its rule accepts. Anything else is
refused before fio starts, naming the option. Each entry is justified in docs/io-guard.md.

Before fio reads a job at all, :func:`check_job_text` refuses every line fio would read as an
include (fio would read the named file as root, and quote its lines in its complaints) and any
line naming files or commands. A job file may be any file the agent can read, so no message
quotes it: the agent names line numbers and option names, never a line or a value, and fio's own
complaints are reported by kind (:func:`fio_complaint`), never passed on.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from testbed_shared.errors import TargetRefused

_NUM = r"[0-9]+(\.[0-9]+)?"
_SIZE = r"[0-9]+(\.[0-9]+)?([kKmMgGtTpP]([iI]?[bB])?|[bB])?"
_TIME = r"[0-9]+(\.[0-9]+)?(us|usec|ms|msec|s|sec|m|min|h|d)?"
_BOOL = r"(0|1|true|false|yes|no|on|off)?"
_PCT_LIST = r"[0-9]+(\.[0-9]+)?(:[0-9]+(\.[0-9]+)?){0,63}"
_CPUS = r"[0-9]{1,4}([-,][0-9]{1,4}){0,63}"

#: the I/O engines a job may use: plain file I/O of the target (no programs, no network, no
#: external libraries, no engines that create, delete or defragment other files)
ENGINES = ("libaio", "io_uring", "psync", "sync", "pvsync", "pvsync2", "vsync", "posixaio", "mmap", "null")
_RW = ("read", "write", "randread", "randwrite", "rw", "readwrite", "randrw")


@dataclass(frozen=True)
class Rule:
    """An allowed option: a full-match pattern for its value (None: the option takes no value)."""

    value: str | None
    why: str


def _rule(value: str | None, why: str) -> Rule:
    return Rule(value, why)


#: option -> rule; names as fio's parser prints them (``--showcmd`` resolves aliases: iomem -> mem)
ALLOWED: dict[str, Rule] = {
    "name": _rule(r"[A-Za-z0-9_.+-]{1,64}", "a job's name (fio names its output by it, no file)"),
    "description": _rule(r"[^\x00-\x1f]{0,200}", "free text"),
    "filename": _rule(None, "only the target the agent prepared (checked separately)"),
    "rw": _rule("(" + "|".join(_RW) + r")(:[0-9]+)?", "the access pattern (no trim: reads and writes only)"),
    "readwrite": _rule("(" + "|".join(_RW) + r")(:[0-9]+)?", "alias of rw"),
    "bs": _rule(_SIZE + r"(," + _SIZE + r"){0,2}", "block size"),
    "blocksize": _rule(_SIZE + r"(," + _SIZE + r"){0,2}", "alias of bs"),
    "ba": _rule(_SIZE, "block alignment"),
    "bsrange": _rule(_SIZE + r"-" + _SIZE, "block size range"),
    "bssplit": _rule(r"[0-9kKmMgG/:,]{1,200}", "block size mix"),
    "size": _rule(_SIZE + r"%?", "bytes of the target to use"),
    "io_size": _rule(_SIZE, "bytes to transfer"),
    "offset": _rule(_SIZE + r"%?", "start offset in the target"),
    "ioengine": _rule("|".join(ENGINES), "plain file I/O engines only (see ENGINES)"),
    "iodepth": _rule(r"[0-9]{1,5}", "queue depth"),
    "iodepth_batch": _rule(r"[0-9]{1,5}", "submission batch"),
    "iodepth_batch_complete_min": _rule(r"[0-9]{1,5}", "completion batch"),
    "iodepth_batch_complete_max": _rule(r"[0-9]{1,5}", "completion batch"),
    "iodepth_low": _rule(r"[0-9]{1,5}", "queue refill mark"),
    "direct": _rule(_BOOL, "O_DIRECT"),
    "buffered": _rule(_BOOL, "page-cache I/O"),
    "time_based": _rule(_BOOL, "run for runtime"),
    "runtime": _rule(_TIME, "duration"),
    "ramp_time": _rule(_TIME, "warm-up not measured"),
    "startdelay": _rule(_TIME, "delay before start"),
    "loops": _rule(r"[0-9]{1,6}", "repeat count"),
    "numjobs": _rule(r"[0-9]{1,3}", "parallel clones of a job (same target)"),
    "thread": _rule(_BOOL, "threads instead of processes"),
    "group_reporting": _rule(_BOOL, "one summary per group"),
    "new_group": _rule(_BOOL, "reporting group"),
    "stonewall": _rule(_BOOL, "wait for the jobs before"),
    "wait_for_previous": _rule(_BOOL, "alias of stonewall"),
    "randrepeat": _rule(_BOOL, "repeatable random offsets"),
    "allrandrepeat": _rule(_BOOL, "repeatable random everything"),
    "randseed": _rule(r"[0-9]{1,20}", "random seed"),
    "norandommap": _rule(_BOOL, "no coverage map"),
    "random_distribution": _rule(
        r"(random|zipf|pareto|normal|gauss|zoned|zoned_abs)(:[0-9.:,/%]{1,100})?", "offsets"
    ),
    "random_generator": _rule(r"tausworthe|lfsr|tausworthe64", "generator"),
    "percentage_random": _rule(r"[0-9]{1,3}(,[0-9]{1,3}){0,2}", "random share"),
    "rwmixread": _rule(r"[0-9]{1,3}", "read share of a mix"),
    "rwmixwrite": _rule(r"[0-9]{1,3}", "write share of a mix"),
    "fsync": _rule(r"[0-9]{1,9}", "fsync every N writes"),
    "fdatasync": _rule(r"[0-9]{1,9}", "fdatasync every N writes"),
    "end_fsync": _rule(_BOOL, "fsync at the end"),
    "fsync_on_close": _rule(_BOOL, "fsync on close"),
    "sync": _rule(r"(0|1|none|sync|dsync)", "O_SYNC / O_DSYNC"),
    "invalidate": _rule(_BOOL, "drop the target's cache first"),
    "fallocate": _rule(r"none|native|posix|keep|truncate|0|1", "how the target is allocated"),
    "fadvise_hint": _rule(r"0|1|sequential|random|normal", "posix_fadvise on the target"),
    "zero_buffers": _rule(_BOOL, "buffer content"),
    "refill_buffers": _rule(_BOOL, "buffer content"),
    "scramble_buffers": _rule(_BOOL, "buffer content"),
    "buffer_compress_percentage": _rule(r"[0-9]{1,3}", "buffer content"),
    "buffer_compress_chunk": _rule(_SIZE, "buffer content"),
    "dedupe_percentage": _rule(r"[0-9]{1,3}", "buffer content"),
    "rate": _rule(r"(" + _SIZE + r")?(," + _SIZE + r"){0,2}", "bandwidth cap"),
    "rate_iops": _rule(r"[0-9]{1,9}(,[0-9]{1,9}){0,2}", "IOPS cap"),
    "rate_process": _rule(r"linear|poisson", "rate pacing"),
    "thinktime": _rule(_TIME, "pause between I/Os"),
    "thinktime_spin": _rule(_TIME, "busy part of the pause"),
    "thinktime_blocks": _rule(r"[0-9]{1,9}", "I/Os between pauses"),
    "clat_percentiles": _rule(_BOOL, "reporting"),
    "lat_percentiles": _rule(_BOOL, "reporting"),
    "slat_percentiles": _rule(_BOOL, "reporting"),
    "percentile_list": _rule(_PCT_LIST, "reporting"),
    "significant_figures": _rule(r"[0-9]{1,2}", "reporting"),
    "unified_rw_reporting": _rule(r"0|1|none|mixed|both", "reporting"),
    "disable_lat": _rule(_BOOL, "reporting"),
    "disable_clat": _rule(_BOOL, "reporting"),
    "disable_slat": _rule(_BOOL, "reporting"),
    "disable_bw_measurement": _rule(_BOOL, "reporting"),
    "gtod_reduce": _rule(_BOOL, "fewer clock reads"),
    "clocksource": _rule(r"gettimeofday|clock_gettime|cpu", "clock"),
    "cpus_allowed": _rule(_CPUS, "CPU affinity"),
    "cpus_allowed_policy": _rule(r"shared|split", "CPU affinity"),
    "cpumask": _rule(r"[0-9]{1,20}", "CPU affinity"),
    "nice": _rule(
        r"[0-9]{1,2}", "scheduling: lower priority only (a negative nice as root starves the host)"
    ),
    "prio": _rule(r"[0-7]", "I/O priority"),
    "prioclass": _rule(r"[023]", "I/O priority class: none, best-effort or idle (not real-time)"),
    "hipri": _rule(_BOOL, "io_uring polled completions"),
    "fixedbufs": _rule(_BOOL, "io_uring registered buffers"),
    "registerfiles": _rule(_BOOL, "io_uring registered files"),
    "sqthread_poll": _rule(_BOOL, "io_uring submission thread"),
    "nonvectored": _rule(r"-?[0-9]", "io_uring non-vectored I/O"),
    "userspace_reap": _rule(_BOOL, "libaio completion reaping"),
}


def parse_showcmd(text: str, where: str) -> list[tuple[str, str | None]]:
    """``(option, value)`` pairs of fio's ``--showcmd`` output; refuse anything ambiguous."""
    line = text.strip()
    if not line.startswith("fio"):
        raise TargetRefused(f"{where}: fio --showcmd printed no command line", hint="check the job file")
    try:
        tokens = shlex.split(line)[1:]
    except ValueError:
        raise TargetRefused(f"{where}: fio's reading of the job file cannot be split into options") from None
    pairs: list[tuple[str, str | None]] = []
    for tok in tokens:
        m = re.fullmatch(r"--([A-Za-z0-9_-]+)(?:=(.*))?", tok, re.DOTALL)
        if not m:
            raise TargetRefused(
                f"{where}: refusing fio job: {tok[:60]!r} is not an option (a value with spaces?)",
                hint="values in custom fio jobs hold no spaces",
            )
        pairs.append((m.group(1).lower(), m.group(2)))
    return pairs


def check_options(pairs: list[tuple[str, str | None]], target: str, where: str) -> None:
    """Every option on :data:`ALLOWED` with an accepted value; every job's file is ``target``."""
    jobs = 0
    global_file = None
    job_file = None
    for key, value in pairs:
        if key == "name":
            if jobs and (job_file or global_file) != target:
                raise _no_target(where)
            jobs += 1
            job_file = None
        rule = ALLOWED.get(key)
        if rule is None:
            raise TargetRefused(
                f"{where}: refusing fio option {key!r}: not on the agent's allowlist",
                hint="allowed options and why: docs/io-guard.md",
            )
        if key == "filename":
            if value != target:
                raise TargetRefused(
                    f"{where}: refusing fio option 'filename': fio would use another file than the "
                    "agent's target",
                    hint="use filename=${FIO_FILENAME} and set params.filename in the plan",
                )
            if jobs:
                job_file = value
            else:
                global_file = value
            continue
        if rule.value is not None and not re.fullmatch(rule.value, value or "", re.ASCII):
            raise TargetRefused(
                f"{where}: refusing fio option {key!r}: its value is not allowed (not shown: a job "
                "file may be any file)",
                hint="allowed options and values: docs/io-guard.md",
            )
    if not jobs or (job_file or global_file) != target:
        raise _no_target(where)


def _no_target(where: str) -> TargetRefused:
    return TargetRefused(
        f"{where}: refusing fio job without filename=${{FIO_FILENAME}}: fio would name files itself",
        hint="add filename=${FIO_FILENAME} to the [global] section",
    )


#: fio's complaints by a fixed part of their wording, and what they mean; the rest of each message
#: quotes a line of the job file or of a file it included
_COMPLAINTS = (
    ("Bad option", "a line that is not a fio option"),
    ("outside of [] job section", "an option outside a [section]"),
    ("failed parsing", "a value fio cannot parse"),
    ("No new sections in included files", "a section in an included file"),
    ("unable to open", "a job file fio cannot open"),
)
_QUOTED_KEY = re.compile(r"(?:failed parsing |Bad option <)\s*([A-Za-z_]{1,40})\s*[=>]")
#: option names fio knows that the allowlist refuses (docs/io-guard.md): a complaint may name them
REFUSED = frozenset(
    {
        "mem",
        "iomem",
        "lockfile",
        "verify_state_save",
        "verify_state_load",
        "merge_blktrace_file",
        "program",
        "arguments",
        "uid",
        "gid",
        "unlink",
        "unlink_each_loop",
        "nrfiles",
        "file_service_type",
        "numa_cpu_nodes",
        "numa_mem_policy",
        "cgroup_weight",
        "cgroup_nodelete",
    }
)


def fio_complaint(text: str) -> str:
    """What fio objected to, in the agent's words (never fio's text: it quotes the job's lines);
    an option is named when its name is one of fio's (on :data:`ALLOWED`, :data:`PATH_KEYS` or
    :data:`REFUSED`), never anything else of the line."""
    for marker, meaning in _COMPLAINTS:
        if marker in text:
            m = _QUOTED_KEY.search(text)
            key = m.group(1).lower() if m else ""
            named = f" (option {key!r})" if key in ALLOWED or key in PATH_KEYS or key in REFUSED else ""
            return f"{meaning}{named}; fio's message is not shown: it quotes the job file"
    return "fio stopped with an error; its message is not shown: it may quote the job file"


Runner = Callable[[list[str], dict[str, str]], str]


def check_job(job: str, env: dict[str, str], target: str, run: Runner) -> list[str]:
    """Ask fio how it reads ``job`` under ``env`` (``run`` returns stdout), check every option, and
    return the checked options as fio arguments: the run uses these, not the job file, so a job
    or included file changed after the check changes nothing."""
    out = run(["fio", "--showcmd", job], env)
    pairs = parse_showcmd(out, job)
    check_options(pairs, target, job)
    return argv(pairs)


def argv(pairs: list[tuple[str, str | None]]) -> list[str]:
    """fio command-line options of ``pairs`` (global options first, then each ``--name`` job)."""
    return [f"--{k}" if v is None else f"--{k}={v}" for k, v in pairs]


# -- the job file's text, before fio reads it ---------------------------------------------------

#: fio options naming files or running commands; in a job file only ``filename=${FIO_FILENAME}``
#: is accepted, so every file fio touches is the guarded target
PATH_KEYS = frozenset(
    {
        "filename",
        "directory",
        "filename_format",
        "opendir",
        "include",
        "exec_prerun",
        "exec_postrun",
        "write_iolog",
        "read_iolog",
        "write_bw_log",
        "write_lat_log",
        "write_iops_log",
        "write_hist_log",
        "ioscheduler",
        "cgroup",
    }
)
_KEY = re.compile(r"^\s*([A-Za-z_]+)\s*(?:=\s*(.*?))?\s*$")
#: fio reads a job file with fgets into an OPT_LEN_MAX (8192) byte buffer (parse.h): a longer
#: line would be read as several lines, its tail as a line of its own
LINE_MAX = 8191
#: what the agent skips before a line's first word: every blank and control byte (fio skips only
#: C's isspace(), so a line the agent reads as an include is one at least)
_LEADING = bytes(range(33)) + b"\x7f"


def check_filename(path: Path) -> Path:
    """fio reads ``:`` in a file name as a list separator: refuse it."""
    if ":" in str(path):
        raise TargetRefused(
            f"refusing fio target {path}: fio reads ':' as a separator between files",
            hint="choose a path without ':'",
        )
    return path


def check_job_text(data: bytes, where: str) -> None:
    """Refuse a job file that includes other files or names files or commands itself instead of
    ``${FIO_FILENAME}``, reading its lines as fio 3.33 does (init.c, ``__parse_jobs_ini``): split
    at newlines, leading blanks skipped, and a line that then starts with ``include`` includes
    the file named from its ninth character on, whatever the eighth is (``include x``,
    ``include<TAB>x``, ``includeXx``, ``include=x``). Every such line is refused (in any case, and
    after control bytes too: more than fio reads), and so is a line longer than fio's line buffer.
    Messages name the line number, never the line."""
    named = False
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        if len(raw) > LINE_MAX:
            raise TargetRefused(f"{where}:{lineno}: refusing a line longer than fio's {LINE_MAX}-byte buffer")
        line = raw.lstrip(_LEADING)
        if line[:7].lower() == b"include" or line.startswith(b"$"):
            raise TargetRefused(
                f"{where}:{lineno}: refusing an include line: a custom fio job includes no other files",
                hint="put the options in the job file itself",
            )
        if not line or line[:1] in (b";", b"#", b"["):
            continue
        m = _KEY.match(line.decode("utf-8", "replace"))
        key = m.group(1).lower() if m else ""
        if key not in PATH_KEYS:
            continue
        if key == "filename" and m and m.group(2) == "${FIO_FILENAME}":
            named = True
            continue
        raise TargetRefused(
            f"{where}:{lineno}: refusing fio job option {key!r}: the agent chooses the file",
            hint="use filename=${FIO_FILENAME} and set params.filename in the plan",
        )
    if not named:
        raise _no_target(where)
