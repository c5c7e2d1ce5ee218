"""The exceptions raised by vertebrae; the message is the Go library's (the CLI's)."""


class Error(Exception):
    """Base class of every vertebrae error. ``code`` is the C ABI's return code."""

    code = 0

    def __init__(self, message):
        super().__init__(message)
        self.message = message


class InputError(Error):
    """The inputs cannot be evaluated (the CLI's exit code 1): a NaN in an
    embedding, an unknown ID in the relevance, a query without positives..."""

    code = 1


class UsageError(Error, ValueError):
    """A bad option (the CLI's exit code 2): an unknown similarity, a primary
    metric whose cut-off is not in k, an unknown keyword..."""

    code = 2


class MemoryBudgetError(Error, MemoryError):
    """The evaluation does not fit the memory budget (max_memory)."""

    code = 3


class CancelledError(Error):
    """The Go call was cancelled by something other than this process's Ctrl-C
    (which raises KeyboardInterrupt instead)."""

    code = 4


class InternalError(Error):
    """A bug in vertebrae (please report it with the message)."""

    code = 5


_BY_CODE = {c.code: c for c in (InputError, UsageError, MemoryBudgetError, CancelledError, InternalError)}


def from_code(code, message):
    cls = _BY_CODE.get(code)
    if cls is None:
        return InternalError(f"unexpected return code {code} from libvertebrae: {message}")
    return cls(message)
