"""The app's own secrets: the private_key_jwt signing key, the token encryption key, and the
secret that CSRF tokens are derived from.

Each comes from settings when configured (a value, or a file that may live outside the data
directory), else is generated once under the data directory (file mode 0600, the directory 0700)
so that restarts keep the same key and stored tokens stay readable.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

from cryptography.fernet import Fernet
from joserfc.jwk import ECKey, KeyParameters, KeySet, RSAKey
from pydantic import SecretStr

from smartapp.core.registrations import ClientRegistration, SigningAlg
from smartapp.core.settings import Settings


def private_data_dir(settings: Settings) -> None:
    """The data directory, readable by its owner only."""
    settings.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    settings.data_dir.chmod(0o700)


def _write_private(path: Path, data: bytes) -> None:
    """Create ``path`` (mode 0600) holding ``data``, unless it exists: processes starting together
    on one data directory all end up reading the one key that was linked in first, and no
    process ever reads a half-written file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
        with contextlib.suppress(FileExistsError):
            path.hardlink_to(temporary)
    finally:
        Path(temporary).unlink()


def _key_at(path: Path, alg: SigningAlg) -> RSAKey | ECKey:
    parameters: KeyParameters = {"alg": alg, "use": "sig"}
    if not path.exists():
        generated = (
            RSAKey.generate_key(2048, parameters=parameters)
            if alg == "RS384"
            else ECKey.generate_key("P-384", parameters=parameters)
        )
        _write_private(path, generated.as_pem(private=True))
    kind = RSAKey if alg == "RS384" else ECKey
    key = kind.import_key(path.read_bytes(), parameters=parameters)
    key.ensure_kid()
    return key


def signing_key(settings: Settings) -> RSAKey | ECKey:
    path = settings.signing_key_file or settings.data_dir / f"client-{settings.signing_alg}.pem"
    return _key_at(path, settings.signing_alg)


def registration_key(settings: Settings, registration: ClientRegistration) -> RSAKey | ECKey | None:
    """The private_key_jwt key for one EHR: its own file, else the app's key for that alg."""
    if registration.client_auth != "private_key_jwt":
        return None
    alg = registration.signing_alg
    if registration.signing_key_file is not None:
        return _key_at(registration.signing_key_file, alg)
    if settings.signing_key_file is not None and settings.signing_alg == alg:
        return _key_at(settings.signing_key_file, alg)
    return _key_at(settings.data_dir / f"client-{alg}.pem", alg)


def public_jwks(keys: list[RSAKey | ECKey]) -> dict[str, object]:
    unique = {key.kid: key for key in keys}
    return dict(KeySet(list(unique.values())).as_dict(private=False))


def token_cipher(settings: Settings) -> Fernet:
    if settings.token_encryption_key is not None:
        return Fernet(settings.token_encryption_key.get_secret_value().encode("ascii"))
    path = settings.token_encryption_key_file or settings.data_dir / "token-encryption.key"
    if not path.exists():
        _write_private(path, Fernet.generate_key())
    return Fernet(path.read_bytes().strip())


def _random_secret(configured: SecretStr | None, path: Path) -> bytes:
    """A secret given in settings, else the one kept at ``path`` (32 random bytes in hex,
    generated there once): how every secret that is not a key is found."""
    if configured is not None:
        return configured.get_secret_value().encode("utf-8")
    if not path.exists():
        _write_private(path, os.urandom(32).hex().encode("ascii"))
    return path.read_bytes().strip()


def pseudonym_secret(settings: Settings) -> bytes:
    """The key of the edits export's editor pseudonyms: its own, so that no other secret (the
    CSRF tokens') ever helps reverse them."""
    path = settings.pseudonym_secret_file or settings.data_dir / "pseudonym-secret.key"
    return _random_secret(settings.pseudonym_secret, path)


def app_secret(settings: Settings) -> bytes:
    path = settings.app_secret_file or settings.data_dir / "app-secret.key"
    return _random_secret(settings.app_secret, path)
