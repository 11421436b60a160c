"""papara-py's exceptions, one hierarchy (exported by `papara_py`):

    PaparaError                       anything papara-py itself refuses or cannot do
    ├── InputError (a ValueError)     a problem with the user's input: a file, a line, a sequence
    │   └── OptionError               an option (command line) or keyword (Python API) is wrong
    └── OutputError (an OSError)      an output could not be written after the work began
    Terminated (a KeyboardInterrupt)  SIGTERM or SIGHUP arrived

Everything a user can get wrong is raised as `InputError`; the CLI turns it into a single
paragraph on stderr and exit status 2 (DESIGN.md section 9). Any other exception escaping to the
CLI is a bug in papara-py, not in the user's data.
"""

from __future__ import annotations


class PaparaError(Exception):
    """The base of papara-py's own errors: catch it to catch any of them."""


class InputError(PaparaError, ValueError):
    """A problem with the user's input, described well enough to fix it without a debugger.

    `source` names the file (or option), `where` pinpoints the line, record or sequence and
    `problem` says what is wrong; the message reads "source, where: problem".
    """

    def __init__(self, source: str, problem: str, where: str | None = None) -> None:
        self.source = source
        self.where = where
        self.problem = problem
        location = f"{source}, {where}" if where else source
        super().__init__(f"{location}: {problem}")


class OptionError(InputError):
    """An option is wrong: a command-line option, or a keyword of the Python API (`source` names it)."""


class OutputError(PaparaError, OSError):
    """An output could not be written (no space, an I/O error, no permission) after the work began.

    `target` is the output the user named (never the temporary file behind it), `what` says which
    it is ("the log file"); `problem` says what the system answered. The CLI prints one paragraph
    and exits with status 3; the partial output has already been removed when this is raised
    (papara_py.io.outputs).
    """

    def __init__(self, target: str, problem: str, direct: bool = False, what: str = "the output") -> None:
        self.target = target
        self.problem = problem
        left = ("what was written before the fault is incomplete" if direct
                else "nothing was written, the previous file (if any) is unchanged")
        super().__init__(f"{target}: cannot write {what}: {problem}; {left}")


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived (a batch system's time limit or preemption, a closed terminal).

    A KeyboardInterrupt, so that every clean-up that Ctrl-C runs runs for it too; the CLI exits
    with 128 + `signal_number`.
    """

    def __init__(self, signal_number: int, signal_name: str) -> None:
        self.signal_number = signal_number
        self.signal_name = signal_name
        super().__init__(signal_name)
