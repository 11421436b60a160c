"""The one exception type that user-facing input problems travel in.

Everything a user can get wrong (a file, a line, a sequence) is raised as `InputError`; the CLI
turns it into a single paragraph on stderr and exit status 2 (DESIGN.md section 9). Any other
exception escaping to the CLI is a bug in papara-py, not in the user's data.
"""

from __future__ import annotations


class InputError(Exception):
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
