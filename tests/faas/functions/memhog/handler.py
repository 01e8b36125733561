"""Test function: allocate ``mb`` MiB and touch every page (to cross the memory limit)."""


def handler(event, context):
    mb = int((event or {}).get("mb", 1))
    block = bytearray(mb << 20)
    for i in range(0, len(block), 4096):
        block[i] = 1
    return {"allocated_mb": mb, "limit_mb": context.memory_limit_in_mb}
