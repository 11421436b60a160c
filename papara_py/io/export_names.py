"""The names the exports write, and the main job's refusal of names they cannot write apart
(issue 56; DESIGN 9; docs/RELIABILITY.md section 1).

How each export of a run (io/export.py, io/jplace.py) writes a name:

- PHYLIP (relaxed: the name, one space, the row), FASTA (`>name`), the EPA queries (`--format epa`
  and the EPA pair's query.fasta) and the EPA pair's reference.fasta write `exported_name(name)`:
  each run of whitespace becomes '_' (their readers end a name at whitespace), the renaming listed
  in FILE.names.tsv beside the export. Nothing else changes: no length limit, case kept.
- jplace writes each read's name exactly (a JSON string): it alters and merges no name.

Two names therefore collide in an export where their exported names are equal and one file of it
holds both rows (`FILES`: the kinds of names each file holds). The main job refuses, with one
paragraph naming both names and the exports (exit status 2):

1. two alignment taxa whose exported names are equal ('a b' and 'a_b'; 'a  b' and 'a b'):
   checked once the alignment and tree are read, before any read is parsed
   (`check_reference_names`);
2. a read whose name an export would alter: it holds whitespace (a read's name is its header's
   first word, so only whitespace outside ASCII, such as U+00A0, can be in it);
3. a read named like an alignment taxon, or like the taxon's exported name (read 'a_b', taxon
   'a b').

Read names are checked chunk by chunk as they are parsed (`ReadNames.check`, on the parser's
thread, before the chunk's reads are cut into batches): a bad name ends the run before its batch
is scored. Batches of earlier reads may have been scored by then, but nothing of the sample is
written: its run file is abandoned (in a run of several samples, the samples complete before it
are kept, as for any bad read). Read names are unique (io/read_input.py) and never altered (rule 2),
so two reads never collide.

Why refuse rather than write such names apart (with a suffix, say): the EPA pair's reference
names must match the tree's labels, a downstream tool matching names against its own tables would
get names the user never chose, and only the user knows which name is right; and the refusal
costs nothing, as it comes before the expensive part. Alignment names holding whitespace that
collide with nothing (strict PHYLIP's 10-character names) are kept and renamed by the exports, as
before. `export` still checks every export's names (io/export.exported_names), for run files of
papara-py versions before this rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from papara_py.errors import InputError

_WHITESPACE = re.compile(r"\s+")

#: The kinds of names each export file holds together: "tip", a taxon of the tree; "extra", an
#: alignment taxon the tree lacks (aligned as a read); "read". EPA: `--format epa` and the EPA
#: pair's query.fasta. jplace alters no name: not listed.
FILES = {
    "PHYLIP": frozenset({"tip", "extra", "read"}),
    "FASTA": frozenset({"tip", "extra", "read"}),
    "EPA": frozenset({"extra", "read"}),
    "EPA pair (reference.fasta)": frozenset({"tip"}),
}


def exported_name(name: str) -> str:
    """`name` as the PHYLIP, FASTA and EPA exports write it: each run of whitespace as '_'."""
    return _WHITESPACE.sub("_", name)


def exports_holding(*kinds: str) -> str:
    """The exports one file of which holds names of all `kinds`, in words."""
    found = [name for name, held in FILES.items() if held.issuperset(kinds)]
    return ", ".join(found[:-1]) + (" and " if len(found) > 1 else "") + found[-1]


def check_reference_names(alignment, extra_rows: Iterable[int]) -> None:
    """Rule 1: InputError if two taxa of `alignment` (an io.alignment_input.Alignment; `extra_rows`: its rows
    the tree lacks) would carry one name in an export."""
    extra = set(extra_rows)
    seen: dict[str, int] = {}
    for row, name in enumerate(alignment.names):
        exported = exported_name(name)
        first = seen.setdefault(exported, row)
        if first != row:
            kinds = ["extra" if r in extra else "tip" for r in (first, row)]
            raise InputError(alignment.path, f"the taxa {alignment.names[first]!r} and {name!r} would both be "
                                             f"named {exported!r} in the {exports_holding(*kinds)} exports, which "
                                             f"write each run of whitespace in a name as '_'; rename one of them "
                                             f"(in the alignment and the tree)")


class ReadNames:
    """Rules 2 and 3 for the reads of `path`, aligned to `alignment` (its `extra_rows` lacking from
    the tree), applied to each chunk as it is parsed (`check`)."""

    def __init__(self, alignment, extra_rows: Iterable[int], path: str) -> None:
        self.alignment, self.path = alignment, path
        self.extra = set(extra_rows)
        self.taxa = {exported_name(name): row for row, name in enumerate(alignment.names)}

    def check(self, names: list[str], lines) -> None:
        """InputError, naming the read and its line, if a name of this chunk breaks rule 2 or 3.
        Costs a set intersection per chunk, and a scan of the names of chunks with non-ASCII names."""
        if not self.taxa.keys().isdisjoint(names):
            q = next(q for q, name in enumerate(names) if name in self.taxa)
            self._named_like_a_taxon(names[q], self.taxa[names[q]], int(lines[q]))
        if "".join(names).isascii():
            return
        for q, name in enumerate(names):
            space = _WHITESPACE.search(name)
            if space:
                raise InputError(self.path, f"the read name {name!r} holds the whitespace character "
                                            f"U+{ord(space.group()[0]):04X}, which the {exports_holding('read')} "
                                            f"exports cannot carry (their readers end a name there; they would "
                                            f"write '_'); rename the read", where=f"line {int(lines[q])}")

    def _named_like_a_taxon(self, read: str, row: int, line: int) -> None:
        alignment = self.alignment
        taxon = alignment.names[row]
        kind = "extra" if row in self.extra else "tip"
        if taxon != read:
            raise InputError(self.path, f"the read {read!r} would be named like the reference taxon {taxon!r} of "
                                        f"{alignment.path} in the {exports_holding(kind, 'read')} exports, which "
                                        f"write each run of whitespace in a name as '_'; rename the read",
                             where=f"line {line}")
        if kind == "extra":
            raise InputError(alignment.path, f"taxon {read!r} is not in the tree and its name is also a read name "
                                             f"in {self.path}; rename one of them", where=f"sequence {read!r}")
        raise InputError(self.path, f"the read {read!r} has the name of a reference taxon of {alignment.path}; "
                                    f"read names must differ from the reference's (the "
                                    f"{exports_holding(kind, 'read')} exports would hold both): rename it",
                         where=f"line {line}")
