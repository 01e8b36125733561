"""Cloud Storage's JSON API for the source uploads: objects in the rehearsal's buckets (multipart
and media uploads as google-cloud-storage sends them, get, list by prefix, delete), and Cloud
Logging's ``entries:list`` over the request logs the function front writes."""

from __future__ import annotations

import datetime as dt
import email.parser
import email.policy
import hashlib
import re
from typing import Any

from functions import ApiError

NAME_MAX = 1024


class Storage:
    """Buckets (made at start) and their objects with generations and custom metadata."""

    def __init__(self, buckets: list[str]) -> None:
        self.buckets: dict[str, dict[str, dict[str, Any]]] = {b: {} for b in buckets}
        self.generation = 1_700_000_000_000_000

    def _bucket(self, bucket: str) -> dict[str, dict[str, Any]]:
        if bucket not in self.buckets:
            raise ApiError(404, "The specified bucket does not exist.")
        return self.buckets[bucket]

    def bucket(self, bucket: str) -> dict[str, Any]:
        self._bucket(bucket)
        return {
            "kind": "storage#bucket",
            "id": bucket,
            "name": bucket,
            "location": "EU",
            "storageClass": "STANDARD",
        }

    def upload(self, bucket: str, query: dict[str, str], content_type: str, raw: bytes) -> dict[str, Any]:
        objects = self._bucket(bucket)
        kind = query.get("uploadType")
        if kind == "multipart":
            meta, data = _multipart(content_type, raw)
        elif kind == "media":
            meta, data = {"name": query.get("name"), "contentType": content_type}, raw
        else:
            raise ApiError(501, f"uploadType={kind} is not served by the rehearsal (multipart, media)")
        name = meta.get("name") or query.get("name")
        if (
            not isinstance(name, str)
            or not name
            or len(name.encode()) > NAME_MAX
            or re.search(r"[\r\n]", name)
        ):
            raise ApiError(400, f"Invalid object name {name!r}")
        extra = meta.get("metadata") or {}
        if not isinstance(extra, dict) or not all(isinstance(v, str) for v in extra.values()):
            raise ApiError(400, "Invalid value for metadata: a map of strings")
        unknown = set(meta) - {"name", "contentType", "metadata", "crc32c", "md5Hash", "cacheControl"}
        if unknown:
            raise ApiError(400, f"Invalid JSON payload received. Unknown name {sorted(unknown)[0]!r}")
        if "ifGenerationMatch" in query and query["ifGenerationMatch"] == "0" and name in objects:
            raise ApiError(
                412, "At least one of the pre-conditions you specified did not hold.", "FAILED_PRECONDITION"
            )
        self.generation += 1
        objects[name] = {
            "data": data,
            "generation": str(self.generation),
            "metadata": extra,
            "contentType": meta.get("contentType") or "application/octet-stream",
            "updated": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        }
        return self.resource(bucket, name)

    def resource(self, bucket: str, name: str) -> dict[str, Any]:
        obj = self._bucket(bucket).get(name)
        if obj is None:
            raise ApiError(404, f"No such object: {bucket}/{name}")
        return {
            "kind": "storage#object",
            "id": f"{bucket}/{name}/{obj['generation']}",
            "name": name,
            "bucket": bucket,
            "generation": obj["generation"],
            "metageneration": "1",
            "contentType": obj["contentType"],
            "size": str(len(obj["data"])),
            "md5Hash": _b64(hashlib.md5(obj["data"]).digest()),
            "metadata": obj["metadata"],
            "updated": obj["updated"],
        }

    def read(self, bucket: str, name: str, generation: Any = None) -> bytes:
        obj = self._bucket(bucket).get(name)
        if obj is None or (generation not in (None, "", 0, "0") and str(generation) != obj["generation"]):
            raise ApiError(
                404, f"Build failed: source object gs://{bucket}/{name} (generation {generation}) not found"
            )
        return obj["data"]

    def listing(self, bucket: str, prefix: str) -> dict[str, Any]:
        items = [self.resource(bucket, n) for n in sorted(self._bucket(bucket)) if n.startswith(prefix)]
        return {"kind": "storage#objects", "items": items}

    def delete(self, bucket: str, name: str) -> None:
        objects = self._bucket(bucket)
        if name not in objects:
            raise ApiError(404, f"No such object: {bucket}/{name}")
        del objects[name]

    def count(self) -> int:
        return sum(len(o) for o in self.buckets.values())


def _b64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def _multipart(content_type: str, raw: bytes) -> tuple[dict[str, Any], bytes]:
    """The metadata part (JSON) and the data part of a multipart/related upload."""
    import json

    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    msg = parser.parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    parts = list(msg.iter_parts()) if msg.is_multipart() else []
    if len(parts) != 2:
        raise ApiError(400, "A multipart upload has two parts: the metadata and the media")
    try:
        meta = json.loads(parts[0].get_payload(decode=True))
    except ValueError:
        raise ApiError(400, "Invalid JSON payload received in the metadata part") from None
    return meta, parts[1].get_payload(decode=True) or b""


class RequestLog:
    """Cloud Run's request log entries and the ``entries:list`` query over them."""

    TERM = re.compile(r'^\s*([A-Za-z_.]+)\s*(>=|<=|=|>|<)\s*"([^"]*)"\s*$')

    def __init__(self, project: str) -> None:
        self.project = project
        self.entries: list[dict[str, Any]] = []

    def add(self, entry: dict[str, Any]) -> None:
        self.entries.append(entry)

    def query(self, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise ApiError(400, "Invalid JSON payload received.")
        unknown = set(body) - {"resourceNames", "filter", "orderBy", "pageSize", "pageToken"}
        if unknown:
            raise ApiError(
                400, f'Invalid JSON payload received. Unknown name "{sorted(unknown)[0]}": Cannot find field.'
            )
        if body.get("resourceNames") != [f"projects/{self.project}"]:
            raise ApiError(403, f"The caller does not have permission on {body.get('resourceNames')}")
        size = int(body.get("pageSize", 50))
        if not 0 < size <= 1000:
            raise ApiError(400, "page_size must be in 1..1000")
        terms = [self._term(t) for t in re.split(r"\s+AND\s+", body.get("filter", "").strip()) if t.strip()]
        hits = [e for e in self.entries if all(_match(e, *t) for t in terms)]
        if body.get("orderBy", "timestamp asc") == "timestamp desc":
            hits.reverse()
        start = int(body.get("pageToken") or 0)
        out: dict[str, Any] = {"entries": hits[start : start + size]}
        if start + size < len(hits):
            out["nextPageToken"] = str(start + size)
        return out

    def _term(self, text: str) -> tuple[str, str, str]:
        m = self.TERM.match(text)
        if not m:
            raise ApiError(
                400, f'Invalid filter term {text!r} (the rehearsal takes field OP "value" joined by AND)'
            )
        return m.group(1), m.group(2), m.group(3)


def _match(entry: dict[str, Any], field: str, op: str, value: str) -> bool:
    node: Any = entry
    for key in field.split("."):
        node = node.get(key) if isinstance(node, dict) else None
    if node is None:
        return False
    text = str(node)
    return {
        "=": text == value,
        ">=": text >= value,
        "<=": text <= value,
        ">": text > value,
        "<": text < value,
    }[op]
