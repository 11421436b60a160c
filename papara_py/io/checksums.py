"""SHA-256 of input files: the run record stores them, and shards and prepared profiles are
checked against them (README: Running at cluster scale)."""

from __future__ import annotations

import hashlib


def sha256_file(path: str) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB pieces."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
