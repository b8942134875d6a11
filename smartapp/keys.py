"""The app's own secrets: the private_key_jwt signing key, the token encryption key, and the
secret that CSRF tokens are derived from.

Each comes from settings when configured, else is generated once under the data directory
(file mode 0600) so that restarts keep the same key and stored tokens stay readable.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet
from joserfc.jwk import ECKey, KeySet, RSAKey

from smartapp.settings import AppSettings


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(data)


def signing_key(settings: AppSettings) -> RSAKey | ECKey:
    path = settings.signing_key_file or settings.data_dir / f"client-{settings.signing_alg}.pem"
    parameters = {"alg": settings.signing_alg, "use": "sig"}
    if not path.exists():
        generated = (
            RSAKey.generate_key(2048, parameters=parameters)
            if settings.signing_alg == "RS384"
            else ECKey.generate_key("P-384", parameters=parameters)
        )
        _write_private(path, generated.as_pem(private=True))
    kind = RSAKey if settings.signing_alg == "RS384" else ECKey
    key = kind.import_key(path.read_bytes(), parameters=parameters)
    key.ensure_kid()
    return key


def public_jwks(key: RSAKey | ECKey) -> dict[str, object]:
    return KeySet([key]).as_dict(private=False)


def token_cipher(settings: AppSettings) -> Fernet:
    if settings.token_encryption_key is not None:
        return Fernet(settings.token_encryption_key.get_secret_value().encode("ascii"))
    path = settings.data_dir / "token-encryption.key"
    if not path.exists():
        _write_private(path, Fernet.generate_key())
    return Fernet(path.read_bytes().strip())


def app_secret(settings: AppSettings) -> bytes:
    if settings.app_secret is not None:
        return settings.app_secret.get_secret_value().encode("utf-8")
    path = settings.data_dir / "app-secret.key"
    if not path.exists():
        _write_private(path, os.urandom(32).hex().encode("ascii"))
    return path.read_bytes().strip()
