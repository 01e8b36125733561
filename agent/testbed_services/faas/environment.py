"""What environment a function instance gets, and which deployment variables are refused.

A worker starts as root (it joins its cgroups, mounts its sandbox, then drops to the function
user), so nothing a caller controls may reach it before the drop. It is exec'd with
:func:`worker_env` only - fixed values and the emulator's own facts, no variable of the caller or
of the deployment - and applies the deployment's variables inside itself after the drop. On top of
that, :func:`check` refuses, at deployment, names that steer a loader, an interpreter or a shell
(:data:`LOADER_NAMES`, :data:`LOADER_PREFIXES`): they could only serve to run other code than the
function's. The Lambda API also refuses the names Lambda reserves (:data:`LAMBDA_RESERVED`), with
Lambda's own message.
"""

from __future__ import annotations

import os
import re
import sys

#: prefixes of the dynamic loader's and Python's variables (LD_PRELOAD, LD_AUDIT, PYTHONPATH,
#: PYTHONHOME, PYTHONSTARTUP, PYTHONINSPECT ...)
LOADER_PREFIXES = ("LD_", "PYTHON", "MALLOC_")
#: other names that make a program load or run something else: glibc's list of variables it drops
#: for setuid programs (unsecvars.h), shells' start-up files, other runtimes' preload options
LOADER_NAMES = frozenset(
    {
        "PATH",
        "GCONV_PATH",
        "GETCONF_DIR",
        "GLIBC_TUNABLES",
        "HOSTALIASES",
        "LOCALDOMAIN",
        "LOCPATH",
        "NIS_PATH",
        "NLSPATH",
        "RESOLV_HOST_CONF",
        "RES_OPTIONS",
        "TMPDIR",
        "TZDIR",
        "BASH_ENV",
        "SHELLOPTS",
        "BASHOPTS",
        "PERL5LIB",
        "PERL5OPT",
        "PERLLIB",
        "RUBYLIB",
        "RUBYOPT",
        "NODE_OPTIONS",
        "NODE_PATH",
        "JAVA_TOOL_OPTIONS",
        "_JAVA_OPTIONS",
        "JDK_JAVA_OPTIONS",
        "CLASSPATH",
        "OPENSSL_CONF",
        "OPENSSL_ENGINES",
    }
)
#: the names Lambda sets itself and refuses in a function's configuration
LAMBDA_RESERVED = (
    "_HANDLER",
    "_X_AMZN_TRACE_ID",
    "AWS_DEFAULT_REGION",
    "AWS_REGION",
    "AWS_EXECUTION_ENV",
    "AWS_LAMBDA_FUNCTION_NAME",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
    "AWS_LAMBDA_FUNCTION_VERSION",
    "AWS_LAMBDA_INITIALIZATION_TYPE",
    "AWS_LAMBDA_LOG_GROUP_NAME",
    "AWS_LAMBDA_LOG_STREAM_NAME",
    "AWS_ACCESS_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_LAMBDA_RUNTIME_API",
    "LAMBDA_TASK_ROOT",
    "LAMBDA_RUNTIME_DIR",
)
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: total size of a deployment's variables (names and values, UTF-8)
MAX_BYTES = 64 * 1024
#: the search path instances get whatever the emulator's own is
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def is_loader_name(name: str) -> bool:
    """Whether ``name`` steers a loader, an interpreter or a shell."""
    upper = name.upper()
    return upper in LOADER_NAMES or upper.startswith(LOADER_PREFIXES)


def check(env: dict[str, str]) -> None:
    """Raise ValueError naming the first variable a deployment may not set: not a name of letters,
    digits and ``_``, a NUL in the value, a loader or interpreter variable; or all of them too big."""
    size = 0
    for name, value in env.items():
        if not NAME.fullmatch(name):
            raise ValueError(f"env: {name[:80]!r} is not a variable name ([A-Za-z_][A-Za-z0-9_]*)")
        if "\0" in value:
            raise ValueError(f"env: the value of {name} contains a NUL character")
        if is_loader_name(name):
            raise ValueError(
                f"env: {name} is a loader, interpreter or search-path variable; the emulator never "
                "passes one to a function"
            )
        size += len(name.encode()) + len(value.encode())
    if size > MAX_BYTES:
        raise ValueError(f"env: {size} bytes of variables, over the limit of {MAX_BYTES}")


def reserved(env: dict[str, str]) -> list[str]:
    """The Lambda-reserved names in ``env``, in the order given."""
    return [name for name in env if name in LAMBDA_RESERVED]


def worker_env(facts: dict[str, str]) -> dict[str, str]:
    """The whole environment a worker is exec'd with: the system search path (plus the emulator's
    Python's own bin directory), a UTF-8 locale and the emulator's ``facts`` (instance ids, HOME,
    TMPDIR); nothing of the emulator's caller or of the deployment."""
    path = [os.path.dirname(sys.executable), *SYSTEM_PATH]
    return {"PATH": ":".join(dict.fromkeys(path)), "LANG": "C.UTF-8", **facts}
