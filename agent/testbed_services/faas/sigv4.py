"""AWS Signature Version 4 checked on the server: the Lambda API's requests must be signed with the
access key the emulator issued at start (testbed_services.faas.credentials).

The signature is recomputed with botocore's own signer (``botocore.auth.SigV4Auth``: canonical
request, string to sign, signing key) over exactly the headers the request names in
``SignedHeaders``, its path and query as sent and the SHA-256 of its body, at the time in its
``X-Amz-Date``; the comparison is constant-time. A request is refused as AWS refuses it - status,
``x-amzn-ErrorType`` and a JSON body ``{"message": ...}`` with AWS's wording:

- no ``Authorization`` header: 403 MissingAuthenticationTokenException;
- a header without Credential, SignedHeaders or Signature, no ``X-Amz-Date``, ``host`` not signed:
  400 IncompleteSignatureException;
- an access key the emulator did not issue, or a session token (it issues none): 403
  UnrecognizedClientException;
- a credential scope for another service or day, a time more than 5 minutes off the emulator's
  clock (either way), a wrong signature, a body whose signed hash does not match: 403
  InvalidSignatureException.

:func:`precheck` runs on the headers alone, before the body is read, so an unauthenticated caller
never gets a body read or an upload slot; :func:`verify` checks the signature with the body.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import re
from dataclasses import dataclass

SERVICE = "lambda"
#: how far a request's time may be from the emulator's clock (AWS: 5 minutes)
SKEW = dt.timedelta(minutes=5)
AMZ_DATE = "%Y%m%dT%H%M%SZ"
MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS "
    "Secret Access Key and signing method. Consult the service documentation for details."
)
UNRECOGNIZED = "The security token included in the request is invalid."


class AuthError(Exception):
    """A refused request: HTTP status, AWS error code, message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.status, self.code, self.message = status, code, message


@dataclass(frozen=True)
class Signed:
    """The parts of a request's ``Authorization`` header and its time."""

    access_key: str
    day: str
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str
    amz_date: str


def _header(items: list[tuple[str, str]], name: str) -> str | None:
    return next((v for k, v in items if k.lower() == name), None)


def parse(items: list[tuple[str, str]]) -> Signed:
    """The signature parts of a request's headers; AuthError when missing or incomplete."""
    auth = _header(items, "authorization")
    if not auth:
        raise AuthError(403, "MissingAuthenticationTokenException", "Missing Authentication Token")
    algorithm, _, rest = auth.strip().partition(" ")
    fields = {}
    for part in rest.split(","):
        key, eq, value = part.strip().partition("=")
        if eq:
            fields[key] = value.strip()
    missing = [
        f"Authorization header requires '{name}' parameter."
        for name in ("Credential", "Signature", "SignedHeaders")
        if not fields.get(name)
    ]
    amz_date = _header(items, "x-amz-date")
    if not amz_date:
        missing.append("Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header.")
    if algorithm != "AWS4-HMAC-SHA256" or missing:
        shown = auth if len(auth) <= 200 else auth[:200] + "..."
        text = " ".join(missing) or f"Unsupported signing algorithm {algorithm[:40]!r}."
        raise AuthError(400, "IncompleteSignatureException", f"{text} Authorization={shown}")
    scope = fields["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise AuthError(
            400,
            "IncompleteSignatureException",
            f"Credential should be scoped to a valid region, not {fields['Credential'][:120]!r}.",
        )
    if not re.fullmatch(r"\d{8}T\d{6}Z", amz_date.strip()):
        raise AuthError(
            400,
            "IncompleteSignatureException",
            f"Date must be in ISO-8601 'basic format'. Got '{amz_date[:40]}'. "
            "See http://en.wikipedia.org/wiki/ISO_8601",
        )
    return Signed(
        access_key=scope[0],
        day=scope[1],
        region=scope[2],
        service=scope[3],
        signed_headers=tuple(h.strip().lower() for h in fields["SignedHeaders"].split(";")),
        signature=fields["Signature"],
        amz_date=amz_date.strip(),
    )


def precheck(signed: Signed, items: list[tuple[str, str]], access_key: str, now: dt.datetime) -> None:
    """What can be checked before the body: the issuer, the scope, the time, ``host`` signed."""
    if not hmac.compare_digest(signed.access_key.encode(), access_key.encode()):
        raise AuthError(403, "UnrecognizedClientException", UNRECOGNIZED)
    if _header(items, "x-amz-security-token") is not None:
        raise AuthError(403, "UnrecognizedClientException", UNRECOGNIZED)
    if signed.service != SERVICE:
        raise AuthError(
            403, "InvalidSignatureException", f"Credential should be scoped to correct service: '{SERVICE}'. "
        )
    if signed.day != signed.amz_date[:8]:
        raise AuthError(
            403,
            "InvalidSignatureException",
            "Date in Credential scope does not match YYYYMMDD from ISO-8601 version of date from HTTP: "
            f"'{signed.day}' != '{signed.amz_date[:8]}', from 'x-amz-date'.",
        )
    if "host" not in signed.signed_headers:
        raise AuthError(
            400,
            "IncompleteSignatureException",
            "'Host' or ':authority' must be a 'SignedHeader' in the AWS Authorization.",
        )
    try:
        when = dt.datetime.strptime(signed.amz_date, AMZ_DATE)
    except ValueError:
        raise AuthError(
            400,
            "IncompleteSignatureException",
            f"Date must be in ISO-8601 'basic format'. Got '{signed.amz_date}'.",
        ) from None
    now = now.replace(tzinfo=None, microsecond=0)
    if when < now - SKEW:
        raise AuthError(
            403,
            "InvalidSignatureException",
            f"Signature expired: {signed.amz_date} is now earlier than {(now - SKEW).strftime(AMZ_DATE)} "
            f"({now.strftime(AMZ_DATE)} - 5 min.)",
        )
    if when > now + SKEW:
        raise AuthError(
            403,
            "InvalidSignatureException",
            f"Signature not yet current: {signed.amz_date} is still later than "
            f"{(now + SKEW).strftime(AMZ_DATE)} ({now.strftime(AMZ_DATE)} + 5 min.)",
        )


def verify(
    signed: Signed,
    method: str,
    target: str,
    items: list[tuple[str, str]],
    body: bytes,
    secret_key: str,
) -> None:
    """Recompute the signature of the request; AuthError unless it matches (constant time)."""
    # botocore loads here, on the first signed request, not at every emulator start
    from botocore.auth import SigV4Auth  # noqa: PLC0415 - see above
    from botocore.awsrequest import AWSRequest  # noqa: PLC0415 - see above
    from botocore.compat import HTTPHeaders  # noqa: PLC0415 - see above
    from botocore.credentials import Credentials  # noqa: PLC0415 - see above

    class Recompute(SigV4Auth):
        """botocore's signer over the headers the request signed, as it sent them."""

        def headers_to_sign(self, request: AWSRequest) -> HTTPHeaders:
            return chosen

    chosen = HTTPHeaders()
    for name, value in items:
        if name.lower() in signed.signed_headers:
            chosen[name.lower()] = value
    absent = [h for h in signed.signed_headers if h not in chosen]
    if absent:
        raise AuthError(403, "InvalidSignatureException", MISMATCH)
    declared = chosen.get("x-amz-content-sha256")
    if declared is not None and declared != hashlib.sha256(body).hexdigest():
        raise AuthError(403, "InvalidSignatureException", MISMATCH)
    request = AWSRequest(method=method, url=f"http://{chosen['host']}{target}", data=body)
    if declared is not None:  # botocore's canonical request takes the body hash from this header
        request.headers["X-Amz-Content-SHA256"] = declared
    request.context["timestamp"] = signed.amz_date
    signer = Recompute(Credentials(signed.access_key, secret_key), SERVICE, signed.region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected.encode(), signed.signature.encode()):
        raise AuthError(403, "InvalidSignatureException", MISMATCH)
