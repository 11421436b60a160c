"""Every path a command will write, checked against the others and against every input before
any work (issue 56; docs/RELIABILITY.md section 1).

`ROLES` names, for each command, the files it writes (its output roles: the run file, the log,
an export's names list, a report's figures, ...) and the files it reads (its input roles). A
command hands `check_roles` the paths it will write and read, by role, before it reads or writes
anything; `check_roles` then

1. checks each output alone and against every input with the output policy's own test
   (`outputs.check_output`: not empty, not a directory, its directory writable, not one of the
   inputs however spelled or linked);
2. checks every pair of outputs with the same test (`outputs.clash`): symbolic links and `..`
   resolved, hard links and case-folding file systems by device and inode, names that do not
   exist yet by their resolved directory and their case-folded name (case is folded on every
   file system: `outputs._name_key` says why);
3. only then clears the temporaries that killed runs left for these outputs (with a notice).

A clash ends as InputError (exit status 2), one paragraph naming both roles and the path: "out.h5:
the log file (--log) is also the run file (-o); ...". Character devices (/dev/null, a terminal)
clash with nothing: writing one twice loses nothing.

The table is the only list of roles: the test of every pair (tests/io/test_output_roles.py)
enumerates it, so a role added here is tested with every other, and `check_roles` refuses a role
missing from it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from itertools import combinations

from papara_py.errors import InputError
from papara_py.io.outputs import Notice, check_output, clash, clear_stale_of


@dataclass(frozen=True)
class Role:
    """One file (or, with `many`, one kind of file: a sample's run file, a figure) a command
    writes or reads. `what` describes it in messages, with `{}` standing for the label of one of
    `many` ("the run file of {}": "the run file of S2.fa"; inputs are named by their paths
    anyway); `option` says where the user named it."""

    what: str
    option: str
    many: bool = False
    #: (outputs) the command makes the file's directory if it is missing (export --outdir, report --png)
    directory_made: bool = False
    #: (outputs) `-`, standard output, is allowed
    stdout: bool = False

    def describe(self, label: str | None = None) -> str:
        return f"{self.what.format(label) if self.many else self.what} ({self.option})"


@dataclass(frozen=True)
class CommandRoles:
    """A command's output and input roles, in the order messages name them; `exclusive`: pairs of
    output roles that are never written by one invocation (-o or --outdir)."""

    outputs: dict[str, Role]
    inputs: dict[str, Role]
    exclusive: frozenset[frozenset[str]] = field(default_factory=frozenset)


def _exclusive(*groups: tuple[tuple[str, ...], tuple[str, ...]]) -> frozenset[frozenset[str]]:
    return frozenset(frozenset((a, b)) for left, right in groups for a in left for b in right)


#: Every command's roles. Keys of `outputs` and `inputs` are what callers pass to `check_roles`.
ROLES: dict[str, CommandRoles] = {
    "papara-py": CommandRoles(
        outputs={"run": Role("the run file", "-o"),
                 "samples": Role("the run file of {}", "--outdir", many=True),
                 "log": Role("the log file", "--log")},
        inputs={"tree": Role("the tree", "-t"), "alignment": Role("the alignment", "-s"),
                "profiles": Role("the profiles file", "--profiles"),
                "reads": Role("the reads file", "-r", many=True)},
        exclusive=_exclusive((("run",), ("samples",)))),
    "export": CommandRoles(
        outputs={"export": Role("the export", "-o", stdout=True),
                 "names": Role("the export's names list", "-o FILE: FILE.names.tsv"),
                 "reference": Role("the EPA reference", "--outdir DIR: DIR/reference.fasta", directory_made=True),
                 "query": Role("the EPA queries", "--outdir DIR: DIR/query.fasta", directory_made=True),
                 "reference names": Role("the EPA reference's names list",
                                         "--outdir DIR: DIR/reference.fasta.names.tsv", directory_made=True),
                 "query names": Role("the EPA queries' names list", "--outdir DIR: DIR/query.fasta.names.tsv",
                                     directory_made=True)},
        inputs={"run": Role("the run file", "RUN.h5")},
        exclusive=_exclusive((("export", "names"), ("reference", "query", "reference names", "query names")))),
    "prepare": CommandRoles(
        outputs={"profiles": Role("the profiles file", "-o")},
        inputs={"tree": Role("the tree", "-t"), "alignment": Role("the alignment", "-s")}),
    "merge": CommandRoles(
        outputs={"run": Role("the merged run file", "-o")},
        inputs={"shards": Role("a shard", "SHARD.h5", many=True)}),
    "report": CommandRoles(
        outputs={"html": Role("the HTML report", "-o"),
                 "figures": Role("the {} figure", "--png DIR", many=True, directory_made=True)},
        inputs={"run": Role("the run file", "RUN.h5")}),
}

#: A role's path (None: not written or read this time), or a `many` role's paths by label.
Paths = Mapping[str, "str | None | Mapping[str, str]"]


def planned(command: str, paths: Paths, table: Mapping[str, Role]) -> list[tuple[str, str, Role, str | None]]:
    """(role key, path, role, label) of every path given, in the table's order; InputError-free:
    a role the table lacks is a bug (ValueError)."""
    unknown = set(paths) - set(table)
    if unknown:
        raise ValueError(f"{command}: no role {sorted(unknown)} in output_roles.ROLES")
    found = []
    for key, role in table.items():
        value = paths.get(key)
        if value is None:
            continue
        if role.many:
            found += [(key, path, role, label) for label, path in value.items() if path is not None]
        else:
            found.append((key, value, role, None))
    return found


def check_roles(command: str, outputs: Paths, inputs: Paths, notice: Notice | None = None) -> None:
    """Refuse (InputError, exit status 2), before any work, an output of `command` that cannot be
    written, that is one of its inputs, or that is another of its outputs (module docstring).
    `outputs` and `inputs` map the roles of `ROLES[command]` to paths (None: absent; a `many`
    role: {label: path}). With a `notice`, temporaries of killed runs to the outputs are cleared
    once every check has passed."""
    roles = ROLES[command]
    written = planned(command, outputs, roles.outputs)
    read = [(role.describe(label), path) for _, path, role, label in planned(command, inputs, roles.inputs)]
    for _, path, role, label in written:
        check_output(path, read, option=role.option, allow_stdout=role.stdout, notice=None,
                     role=role.describe(label), directory_made=role.directory_made)
    for (_, first, first_role, first_label), (_, second, second_role, second_label) in combinations(written, 2):
        how = clash(second, first)
        if how is not None:
            raise InputError(second, f"{second_role.describe(second_label)} is also "
                                     f"{first_role.describe(first_label)}{how}; one would overwrite the "
                                     f"other: give each output a name of its own")
    if notice is not None:
        for _, path, _, _ in written:
            clear_stale_of(path, notice)
