"""The per-user secret key that authenticates disk cache entries (`objcache`).

Where: `$S2SAD_CACHE_KEY`, else `$XDG_CONFIG_HOME/s2sad/cache.key`, else
`~/.config/s2sad/cache.key`: outside the cache directory, so that whoever can write
entries cannot forge them. Created on first use: 32 bytes from `secrets`, mode 0600, in
a directory created 0700. Read through `safedir`: its directory and the directory's
parents pass ssh's checks, and the file is a regular file of this user's, readable and
writable by nobody else, 32 bytes long. Anything else is `safedir.Unsafe` (the caller
warns and does not use the cache).
"""
from __future__ import annotations

import os

from . import safedir

__all__ = ["ENV", "KEY_BYTES", "path", "load"]

ENV = "S2SAD_CACHE_KEY"
KEY_BYTES = 32


def path() -> str:
    """Where the key is kept (absolute)."""
    env = os.environ.get(ENV, "").strip()
    if env:
        return os.path.abspath(os.path.expanduser(env))
    config = os.environ.get("XDG_CONFIG_HOME", "").strip()
    if not os.path.isabs(config):                # the XDG spec: a relative value is ignored
        config = os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(config, "s2sad", "cache.key")


def load(where: str, cache_real: str) -> bytes:
    """The key at `where`, made if missing; raises safedir.Unsafe when it cannot be
    trusted, or when it would lie in the cache directory (real path `cache_real`)."""
    folder, name = os.path.split(where)
    real = os.path.realpath(folder)
    if real == cache_real or real.startswith(cache_real.rstrip(os.sep) + os.sep):
        raise safedir.Unsafe("key", f"the key file {where} is inside the cache directory {cache_real}, "
                                    f"where it protects nothing")
    d = safedir.open_private(folder)
    key = d.read(name, KEY_BYTES, secret=True)
    if key is None:
        import secrets                            # (1-2 ms to import: only on first use)

        try:
            d.create(name, secrets.token_bytes(KEY_BYTES))
        except OSError as e:
            raise safedir.Unsafe("key", f"the key file {where} could not be created ({e.strerror})") from None
        key = d.read(name, KEY_BYTES, secret=True)
    if key is None or len(key) != KEY_BYTES:
        raise safedir.Unsafe("key", f"the key file {where} is {0 if key is None else len(key)} bytes, "
                                    f"not {KEY_BYTES}")
    return key
