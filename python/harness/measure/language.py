"""Language: which language a statement is written in (torch's enum, with names accepted too)."""

from __future__ import annotations

import enum

from harness.errors import UsageError


class Language(enum.Enum):
    PYTHON = 0
    CPP = 1


_LANGUAGE_NAMES = {"py": Language.PYTHON, "python": Language.PYTHON, "cpp": Language.CPP, "c++": Language.CPP}


def parse_language(language: Language | str) -> Language:
    if isinstance(language, Language):
        return language
    if isinstance(language, enum.Enum) and language.name in Language.__members__:
        return Language[language.name]  # torch's own Language enum
    try:
        return _LANGUAGE_NAMES[str(language).lower()]
    except KeyError:
        raise UsageError(
            f"unknown language {language!r}: use 'python' or 'cpp' (or harness.Language)"
        ) from None
