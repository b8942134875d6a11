"""What a configuration cannot do once it spans processes, checked before anything starts.

Settings validate one process's values. A layout of web processes and workers sharing one
database and queue (``PROVENOTE_JOB_QUEUE=procrastinate``) also needs them to share their
secrets: a token-encryption key or app secret that each process generates for itself under its
own data directory makes a launch that crosses processes fail (a callback answered by another web
process, a job whose tokens a worker cannot read), and nothing says why. ``provenote
check-config`` reports these, and ``serve`` and ``worker`` refuse to start on them.
"""

from __future__ import annotations

from pydantic import SecretStr

from smartapp.core.settings import Settings

# How an operator makes each shared secret (docs/operations.md says the same).
_MAKE = {
    "PROVENOTE_TOKEN_ENCRYPTION_KEY": (
        'python -c "from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())"'
    ),
    "PROVENOTE_APP_SECRET": 'python -c "import secrets; print(secrets.token_hex(32))"',
}


def _configured(value: SecretStr | None, file: object) -> bool:
    return value is not None or file is not None


def deployment_problems(settings: Settings) -> list[str]:
    """One short paragraph per thing that cannot work across processes; empty when none."""
    if settings.job_queue != "procrastinate":
        return []
    problems = []
    shared = {
        "PROVENOTE_TOKEN_ENCRYPTION_KEY": _configured(
            settings.token_encryption_key, settings.token_encryption_key_file
        ),
        "PROVENOTE_APP_SECRET": _configured(settings.app_secret, settings.app_secret_file),
    }
    for variable, configured in shared.items():
        if not configured:
            problems.append(
                f"{variable} (or {variable}_FILE) is not set, so each process would generate "
                "its own under its data directory: with PROVENOTE_JOB_QUEUE=procrastinate, web "
                "processes and workers must share it, or launches and jobs that cross processes "
                f"fail. Generate one once (`{_MAKE[variable]}`) and give it to every process."
            )
    unshared_key = [
        registration.issuer
        for registration in settings.all_registrations()
        if registration.client_auth == "private_key_jwt"
        and registration.signing_key_file is None
        and settings.signing_key_file is None
    ]
    if unshared_key:
        problems.append(
            "PROVENOTE_SIGNING_KEY_FILE is not set, so each process would sign private_key_jwt "
            f"assertions for {', '.join(unshared_key)} with a key of its own, which the EHR "
            "does not know: give every process the same PEM key file."
        )
    return problems
