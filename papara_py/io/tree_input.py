"""The reference tree: one Newick tree, tips labelled, unique, at least three, of any depth.

`read_edge_tree` gives the run's EdgeTree (phylo/tree.py), reading plain Newick without dendropy;
`read_tree` gives dendropy's tree (the exports and the report draw it). Whatever is wrong leaves
as an `InputError` naming the file and, where dendropy says, the line (DESIGN.md section 9).
"""
from __future__ import annotations

import re
import sys
import threading

import dendropy
from dendropy.dataio.newickreader import NewickReader
from dendropy.utility.error import DataParseError

from papara_py.errors import InputError
from papara_py.io.checksums import Digest
from papara_py.io.input_bytes import PathLike, read_whole
from papara_py.phylo.tree import EdgeTree


def read_edge_tree(path: PathLike, digest: Digest | None = None) -> EdgeTree:
    """`read_tree`'s tree as an EdgeTree (phylo/tree.py). A plain Newick text (labels and lengths,
    no quotes, comments or whitespace inside, one tree, unique tips: `_plain_newick`) is read
    without dendropy, whose reader took 13 s for 10^5 taxa on the dev machine; anything else, and
    every error, goes through `read_tree`. The file is read once; its bytes go into `digest`."""
    source = str(path)
    data = read_whole(source, digest)
    try:
        plain = _plain_newick(data.decode("utf-8-sig"))
    except UnicodeDecodeError:
        plain = None
    if plain is not None:
        return EdgeTree.from_nodes(*plain, source=source)
    return EdgeTree.from_dendropy(_tree_of(data, source), source)


#: A Newick text `_plain_newick` takes has none of these (quotes, comments, the other characters
#: dendropy's tokenizer cuts words at, whitespace) ...
_NOT_PLAIN = re.compile(r"['\"\[\]{}=\\]|\s")
#: ... and is made of these tokens: punctuation, and labels or lengths between it.
_NEWICK_TOKEN = re.compile(r"[(),:;]|[^(),:;]+")


def _plain_newick(text: str) -> tuple[list[list[int]], list[str | None], list[float | None]] | None:
    """The nodes of a plain Newick tree as phylo/tree.py's `_read_nodes` copies them from dendropy
    (preorder lists of children, tip names, edge lengths), or None where the text is not plain
    or is not a tree of three or more uniquely named tips: dendropy reads those (and words the
    errors). Inner node labels are skipped, as EdgeTree does."""
    text = text.strip()
    if not text.endswith(";") or _NOT_PLAIN.search(text):
        return None
    tokens = _NEWICK_TOKEN.findall(text)
    kids: list[list[int]] = []
    names: list[str | None] = []
    lengths: list[float | None] = []
    stack: list[int] = []
    last = -1  # the node a label or length after it belongs to
    open_slot = True  # a node may start here (the start, after '(' or ',')
    n = len(tokens)
    i = 0
    while i < n:
        token = tokens[i]
        if token == "(" or token not in "),:;":  # a node: an inner one, or a tip's label
            if not open_slot or (not stack and kids):
                return None
            v = len(kids)
            if stack:
                kids[stack[-1]].append(v)
            kids.append([])
            lengths.append(None)
            if token == "(":
                names.append(None)
                stack.append(v)
            else:
                if not stack:
                    return None  # a lone tip
                names.append(token)
                last, open_slot = v, False
        elif token == ",":
            if open_slot or not stack:
                return None
            open_slot = True
        elif token == ")":
            if open_slot or not stack:
                return None
            last, open_slot = stack.pop(), False
            if i + 1 < n and tokens[i + 1] not in "(),:;":
                i += 1  # an inner node's label
        elif token == ":":
            if open_slot or last < 0 or lengths[last] is not None or i + 1 >= n or tokens[i + 1] in "(),:;":
                return None
            try:  # dendropy's edge lengths are float() of the word too
                lengths[last] = float(tokens[i + 1])
            except ValueError:
                return None
            i += 1
        else:  # ';': the end of the one tree
            if stack or open_slot or i != n - 1:
                return None
        i += 1
    tips = [name for name in names if name is not None]
    if len(tips) < 3 or len(set(tips)) != len(tips):
        return None
    return kids, names, lengths


def read_tree(path: PathLike, digest: Digest | None = None) -> dendropy.Tree:
    """Read exactly one Newick tree whose tips are labelled, unique and at least three.

    Underscores are preserved (they are part of taxon names in alignments) and labels are case
    sensitive, so tip names compare with alignment names exactly. The file is read once; its
    bytes go into `digest` (io/checksums.py).
    """
    source = str(path)
    return _tree_of(read_whole(source, digest), source)


def _tree_of(data: bytes, source: str) -> dendropy.Tree:
    """`read_tree` of the file's bytes."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(source, "the tree file is not UTF-8 text", f"line {line}") from None
    if not text.strip():
        raise InputError(source, "the file is empty; expected a Newick tree")
    trees = _parse_newick(text, source)
    if len(trees) != 1:
        raise InputError(source, f"expected exactly one tree, found {len(trees)}")
    tree = trees[0]
    _check_tips(tree, source)
    return tree


def _parse_newick(text: str, source: str) -> dendropy.TreeList:
    """All tree statements in `text`; dendropy's complaints become InputErrors with positions."""
    try:
        return dendropy.TreeList.get(
            data=text,
            schema="newick",
            preserve_underscores=True,
            case_sensitive_taxon_labels=True,
            taxon_namespace=dendropy.TaxonNamespace(is_case_sensitive=True),
        )
    except NewickReader.NewickReaderDuplicateTaxonError as exc:
        label = str(exc.message).rpartition("Duplicate taxon labels: ")[2]
        raise InputError(
            source, f"duplicate tip label: '{label}' occurs more than once", _position(exc)
        ) from None
    except DataParseError as exc:
        hint = " (is the closing ';' missing?)" if "end of stream" in str(exc.message) else ""
        raise InputError(
            source, f"malformed Newick: {exc.message}{hint}", _position(exc)
        ) from None
    except RecursionError:
        return _parse_deep_newick(text, source)


#: Stack of the thread that reads deeply nested trees: dendropy's reader recurses once per level
#: of parentheses; 512 MiB of (virtual, touched only as used) stack hold millions of levels.
_DEEP_STACK_BYTES = 512 << 20


def _parse_deep_newick(text: str, source: str) -> dendropy.TreeList:
    """`_parse_newick` for trees nested deeper than Python's recursion limit (a ladder-like tree
    of 10^4-10^5 taxa): dendropy's recursive reader runs in a thread with a large stack and a
    recursion limit above the nesting depth, both restored afterwards. The tree it builds is an
    ordinary dendropy tree; everything after the parse walks it iteratively."""
    result: list = []

    def parse() -> None:
        try:
            result.append(_parse_newick(text, source))
        except BaseException as error:  # noqa: B902 - handed to the caller's thread
            result.append(error)

    limit = sys.getrecursionlimit()
    old_stack = threading.stack_size()
    try:
        sys.setrecursionlimit(max(limit, 20 * text.count("(") + 10_000))
        threading.stack_size(_DEEP_STACK_BYTES)
        worker = threading.Thread(target=parse, name="papara-newick")
        worker.start()
    finally:
        threading.stack_size(old_stack)
    worker.join()
    sys.setrecursionlimit(limit)
    if isinstance(result[0], RecursionError):
        raise InputError(source, "the tree is nested too deeply to read") from None
    if isinstance(result[0], BaseException):
        raise result[0]
    return result[0]


def _position(exc: DataParseError) -> str | None:
    """dendropy's line/column of a parse error, when it knows them."""
    if exc.line_num is None:
        return None
    column = f", column {exc.col_num}" if exc.col_num is not None else ""
    return f"line {exc.line_num}{column}"


def _check_tips(tree: dendropy.Tree, source: str) -> None:
    """Every tip needs a label (it names an alignment row) and a tree needs three tips."""
    labels = [leaf.taxon.label if leaf.taxon else None for leaf in tree.leaf_node_iter()]
    for index, label in enumerate(labels):
        if not label:
            after = f" (after '{labels[index - 1]}')" if index > 0 and labels[index - 1] else ""
            raise InputError(source, f"tip number {index + 1}{after} has no label")
    if len(labels) < 3:
        raise InputError(source, f"the tree has {len(labels)} tip(s); at least 3 are needed")
