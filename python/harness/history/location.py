"""Which history database a command uses: ``--history PATH|URL``, else ``$HARNESS_HISTORY``, else the default.

The default is ``$XDG_DATA_HOME/harness/history.sqlite`` (``~/.local/share``
when unset): data the user keeps, not a cache, so never under the cache root
that ``cache clear`` empties. A value holding ``://`` is a SQLAlchemy URL
(``postgresql+psycopg://user@host/db``, ``sqlite:////abs/path``); anything
else is a file path.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from harness.errors import UsageError
from harness.options import HISTORY_ENV, XDG_DATA_HOME_ENV, env


@dataclasses.dataclass(frozen=True)
class Location:
    """A database: its SQLAlchemy ``url``, the file when it is SQLite (``path``), and how to name it."""

    url: str
    path: Path | None = None

    @property
    def shown(self) -> str:
        """The path of a file, or the URL with its password hidden."""
        if self.path is not None:
            return str(self.path)
        from sqlalchemy.engine import make_url

        return make_url(self.url).render_as_string(hide_password=True)


def default_path() -> Path:
    data = env(XDG_DATA_HOME_ENV) or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(data) / "harness" / "history.sqlite"


def locate(target: str | os.PathLike[str] | None = None) -> Location:
    """The database ``target`` names (None or "": ``$HARNESS_HISTORY``, else ``default_path()``)."""
    text = os.fspath(target) if target else (env(HISTORY_ENV) or "")
    if not text:
        return _file(default_path())
    if "://" in text:
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        try:
            url = make_url(text)
        except ArgumentError:
            raise UsageError(f"history database {text!r}: not a database URL; give a file path, or a URL "
                             "such as postgresql+psycopg://user@host/dbname") from None
        if url.get_backend_name() == "sqlite" and url.database not in (None, "", ":memory:"):
            return _file(Path(url.database))
        return Location(text)
    return _file(Path(text))


def _file(path: Path) -> Location:
    path = path.expanduser().absolute()
    return Location(f"sqlite:///{path}", path)
