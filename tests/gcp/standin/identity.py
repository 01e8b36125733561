"""Google's OAuth 2.0 token endpoint for one service account, as the stand-in needs it.

The rehearsal makes a service account key (``sa.json``, the file GOOGLE_APPLICATION_CREDENTIALS
names). google-auth signs RS256 JWT assertions with it: exchanged at ``/token`` for an access token
(``scope``) or an ID token (``target_audience``), or sent directly as a self-signed JWT (the
``aud`` is the API's root URL). This module checks those signatures with the key's public half
and issues the tokens; the ID tokens it issues are RS256 JWTs signed by the stand-in's own key.
"""

from __future__ import annotations

import base64
import json
import secrets
import time
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

PROJECT = "testbed-rehearsal"
EMAIL = f"testbed-runner@{PROJECT}.iam.gserviceaccount.com"
TOKEN_URI = "https://oauth2.googleapis.com/token"
CLOUD_PLATFORM = "https://www.googleapis.com/auth/cloud-platform"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class TokenError(Exception):
    """An OAuth error (``error``, ``error_description``) or a rejected bearer token."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(f"{error}: {description}")
        self.error, self.description = error, description


class Identity:
    """The service account, its key file, and the tokens issued to it."""

    def __init__(self, directory: Path) -> None:
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.key_id = secrets.token_hex(20)
        self.signer = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.access: dict[str, float] = {}
        self.counts = {"access_tokens": 0, "id_tokens": 0, "self_signed": 0}
        pem = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        ).decode()
        info = {
            "type": "service_account",
            "project_id": PROJECT,
            "private_key_id": self.key_id,
            "private_key": pem,
            "client_email": EMAIL,
            "client_id": "100000000000000000001",
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": TOKEN_URI,
            "universe_domain": "googleapis.com",
        }
        self.key_file = directory / "sa.json"
        self.key_file.write_text(json.dumps(info, indent=1))
        self.key_file.chmod(0o600)

    def _claims(self, token: str, audiences: tuple[str, ...]) -> dict[str, Any]:
        """Verify an RS256 JWT signed with the service account's key; its claims."""
        try:
            head_b64, body_b64, sig_b64 = token.split(".")
            header = json.loads(_unb64(head_b64))
            claims = json.loads(_unb64(body_b64))
        except (ValueError, json.JSONDecodeError):
            raise TokenError("invalid_grant", "Invalid JWT: malformed") from None
        if header.get("alg") != "RS256" or header.get("kid") not in (None, self.key_id):
            raise TokenError("invalid_grant", "Invalid JWT Signature.")
        try:
            self.key.public_key().verify(
                _unb64(sig_b64), f"{head_b64}.{body_b64}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
        except InvalidSignature:
            raise TokenError("invalid_grant", "Invalid JWT Signature.") from None
        now = time.time()
        if claims.get("iss") != EMAIL:
            raise TokenError("invalid_grant", f"Invalid issuer: {claims.get('iss')}")
        scoped = claims.get("aud") is None and CLOUD_PLATFORM in str(claims.get("scope", "")).split()
        if claims.get("aud") not in audiences and not (scoped and TOKEN_URI not in audiences):
            raise TokenError("invalid_grant", f"Invalid JWT audience {claims.get('aud')!r}")
        iat, exp = float(claims.get("iat", 0)), float(claims.get("exp", 0))
        if not (iat - 300 <= now <= exp + 300) or exp - iat > 3600:
            raise TokenError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes)")
        return claims

    def token(self, form: dict[str, str]) -> dict[str, Any]:
        """The ``/token`` endpoint (grant type jwt-bearer)."""
        if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
            raise TokenError("unsupported_grant_type", f"Invalid grant_type: {form.get('grant_type')}")
        claims = self._claims(form.get("assertion", ""), (TOKEN_URI,))
        if claims.get("target_audience"):
            self.counts["id_tokens"] += 1
            return {"id_token": self.id_token(str(claims["target_audience"]))}
        if CLOUD_PLATFORM not in str(claims.get("scope", "")).split():
            raise TokenError("invalid_scope", "the rehearsal grants the cloud-platform scope only")
        access = "ya29." + secrets.token_urlsafe(48)
        self.access[access] = time.time() + 3600
        self.counts["access_tokens"] += 1
        return {"access_token": access, "expires_in": 3599, "token_type": "Bearer"}

    def id_token(self, audience: str) -> str:
        now = int(time.time())
        header = _b64(json.dumps({"alg": "RS256", "typ": "JWT", "kid": "standin"}).encode())
        body = {"aud": audience, "azp": EMAIL, "email": EMAIL, "exp": now + 3600, "iat": now}
        body |= {"iss": "https://accounts.google.com", "sub": "100000000000000000001"}
        payload = _b64(json.dumps(body).encode())
        sig = self.signer.sign(f"{header}.{payload}".encode(), padding.PKCS1v15(), hashes.SHA256())
        return f"{header}.{payload}.{_b64(sig)}"

    def check_bearer(self, header: str, api_root: str) -> None:
        """An API request's ``Authorization``: an access token issued here, or a self-signed JWT."""
        token = header.removeprefix("Bearer ").strip()
        if not header.startswith("Bearer ") or not token:
            raise TokenError("UNAUTHENTICATED", "Request is missing required authentication credential.")
        if token in self.access:
            if self.access[token] < time.time():
                raise TokenError(
                    "UNAUTHENTICATED", "Request had invalid authentication credentials (expired)."
                )
            return
        if token.count(".") == 2:  # a self-signed JWT: the API's root as audience, or a scope
            claims = self._claims(token, (api_root, api_root.rstrip("/")))
            if claims.get("sub", EMAIL) != EMAIL:
                raise TokenError("UNAUTHENTICATED", "self-signed JWT of another principal")
            self.counts["self_signed"] += 1
            return
        raise TokenError("UNAUTHENTICATED", "Request had invalid authentication credentials.")

    def check_id_token(self, header: str, audience: str) -> None:
        """Cloud Run's check of an invocation: an ID token issued here for this service's URL."""
        token = header.removeprefix("Bearer ").strip()
        try:
            head_b64, body_b64, sig_b64 = token.split(".")
            self.signer.public_key().verify(
                _unb64(sig_b64), f"{head_b64}.{body_b64}".encode(), padding.PKCS1v15(), hashes.SHA256()
            )
            claims = json.loads(_unb64(body_b64))
        except (ValueError, InvalidSignature, json.JSONDecodeError):
            raise TokenError(
                "forbidden", "Your client does not have permission to the requested URL."
            ) from None
        if claims.get("aud", "").rstrip("/") != audience.rstrip("/") or claims.get("exp", 0) < time.time():
            raise TokenError("forbidden", "Your client does not have permission to the requested URL.")
