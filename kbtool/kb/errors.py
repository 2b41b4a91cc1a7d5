"""Errors of the KB layer: each carries a one-line message fit for a user."""

from __future__ import annotations


class KBError(Exception):
    """Base class of every KB error; ``str(e)`` is a one-line, user-facing message."""


class KBMissingError(KBError, FileNotFoundError):
    """The KB file does not exist."""


class NotAKBError(KBError):
    """The file exists but is not a kbtool KB."""


class SchemaVersionError(KBError):
    """The KB was written by an older or newer kbtool."""


class KBLockedError(KBError):
    """Another process holds the KB's write lock for too long."""


class UnknownVersionError(KBError, LookupError):
    """No version with that id."""


class UnknownStableIdError(KBError, LookupError):
    """No function with that stable_id."""


class UnknownFunctionError(KBError, LookupError):
    """No function at that index of the version."""


class KBReadOnlyError(KBError):
    """The KB (or its directory) cannot be written: permissions, an immutable file, a
    read-only file system."""


class KBFullError(KBError):
    """The disk (or the file system quota) is full; the write was rolled back."""


class ModuleBytesMissingError(KBError, LookupError):
    """The version exists but its module bytes are not stored."""


class ImportedFunctionError(UnknownFunctionError):
    """The function is an import: it has no body to show."""
