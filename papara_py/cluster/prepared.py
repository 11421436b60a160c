"""Edge profiles computed once (`papara-py prepare`) and shared by every shard (`--profiles`).

Why: every array task would otherwise repeat the two tree passes and hold 2 x E x m bytes of
directional sets. `prepare` stores the final profiles, [E, m] profile elements, in an HDF5 file; a shard
opens it instead of building them.

File layout (format "papara-py-profiles", format_version 3; 3 added the DNA elements' near
states, DESIGN.md 2-3, so a version 2 file is refused: its profiles lack them):

    /                       attrs: format, format_version, version, command_line,
                            checksums_sha256 (JSON: tree, alignment), inputs (JSON: paths),
                            n_edges, n_columns, profiles_sha256 (of the profile bytes, row order)
    /tree/newick_numbered   string: the tree whose edges the rows are numbered by
    /profiles               uint8 (dna) or uint32 (protein) [E, m]: row e is edge e's profile
                            (ProfileBuilder.profiles); the root attr `alphabet` names the alphabet
                            (absent in files made before protein support: dna)

The profiles are stored contiguous and uncompressed so that a shard can memory-map them: the
memory cost is E x m bytes of page cache, shared by every shard on a node and paged in as the
engine builds blocks, instead of 2 x E x m private bytes per process for the directional sets.
(Where the dataset cannot be mapped, e.g. a file rewritten with compression by another tool,
it is read into memory: E x m private bytes.)

A shard trusts the file only if it was made from the very tree and alignment the shard was given
(sha256 of each, plus edge count, column count and numbered Newick) by the same papara-py
version, and its profile data are intact (their sha256, checked on load, `profiles_sha256`:
format version 1 had none and is refused); anything else is an InputError naming the file.
"""

from __future__ import annotations

import hashlib
import json

import h5py
import numpy as np

from papara_py import __version__
from papara_py.errors import InputError
from papara_py.io.checksums import Digest, describe_input, sha256_file
from papara_py.io.hdf5_guard import hdf5_output
from papara_py.io.run_writer import STRINGS
from papara_py.phylo.encoding import DNA, Alphabet
from papara_py.phylo.profiles import ProfileBuilder
from papara_py.phylo.tree import EdgeTree

FORMAT_NAME = "papara-py-profiles"
FORMAT_VERSION = 3
#: Edges written per step by `prepare` (bounds the temporary profile array to this many rows).
_WRITE_EDGES = 1024


class PreparedProfiles:
    """Edge profiles read from a prepared file; `profiles(edge_ids)` like ProfileBuilder's.

    Read-only after construction, so any number of engine threads may call `profiles` at once.
    """

    def __init__(self, table: np.ndarray, path: str) -> None:
        self._table = table
        self.path = path

    @property
    def n_edges(self) -> int:
        return int(self._table.shape[0])

    @property
    def n_columns(self) -> int:
        return int(self._table.shape[1])

    @property
    def memory_mapped(self) -> bool:
        return isinstance(self._table, np.memmap)

    def profiles(self, edge_ids: np.ndarray) -> np.ndarray:
        """[len(edge_ids), m] profile elements of these edges (a copy)."""
        ids = np.asarray(edge_ids, dtype=np.intp).reshape(-1)
        if ids.size and (ids.min() < 0 or ids.max() >= self.n_edges):
            raise IndexError(f"edge ids must lie in 0..{self.n_edges - 1}")
        return np.asarray(self._table[ids])


def prepare(tree: str, alignment: str, output: str, command_line: str = "", alphabet: str = "auto") -> int:
    """Compute every edge profile of (tree, alignment) and write them to `output` atomically;
    `alphabet` is --alphabet (auto, dna, protein), stored beside the profiles.

    Returns the number of edges. Input problems raise InputError exactly as the main job would.
    Each input is read once, hashed as it is parsed; the profile bytes are hashed as written.
    """
    from papara_py.io.alignment_input import match_tips, read_alignment
    from papara_py.io.tree_input import read_edge_tree

    digests = {"tree": Digest(), "alignment": Digest()}
    edge_tree = read_edge_tree(tree, digests["tree"])
    aligned = read_alignment(alignment, digests["alignment"], alphabet)
    builder = ProfileBuilder(edge_tree, match_tips(edge_tree.tip_names, aligned, tree).tip_rows, aligned.alphabet)
    m = builder.n_columns
    with hdf5_output(output) as handle:
        handle.attrs.update({
            "format": FORMAT_NAME, "format_version": FORMAT_VERSION, "version": __version__,
            "command_line": command_line, "n_edges": builder.n_edges, "n_columns": m,
            "alphabet": aligned.alphabet.name,
            "checksums_sha256": json.dumps({name: d.hexdigest() for name, d in digests.items()}, sort_keys=True),
            "inputs": json.dumps({"tree": describe_input(tree), "alignment": describe_input(alignment)},
                                 sort_keys=True),
        })
        handle.create_dataset("tree/newick_numbered", data=edge_tree.numbered_newick, dtype=STRINGS)
        # contiguous: mappable; little-endian elements, as the hash and a memory map read them
        table = handle.create_dataset("profiles", (builder.n_edges, m), dtype=aligned.alphabet.dtype.newbyteorder("<"))
        data_hash = hashlib.sha256()
        for first in range(0, builder.n_edges, _WRITE_EDGES):
            edges = np.arange(first, min(builder.n_edges, first + _WRITE_EDGES))
            block = np.ascontiguousarray(builder.profiles(edges))
            data_hash.update(block)
            table[first:first + len(edges)] = block
        handle.attrs["profiles_sha256"] = data_hash.hexdigest()
    return builder.n_edges


def input_checksums(tree: str, alignment: str) -> dict[str, str]:
    """sha256 of a tree file and an alignment file, the identity a prepared file is checked by
    (for callers holding files; the main job and `prepare` hash their inputs as they parse them)."""
    return {"tree": sha256_file(tree), "alignment": sha256_file(alignment)}


def profiles_digest(table) -> str:
    """sha256 of a profiles table's bytes in row order, read _WRITE_EDGES rows at a time."""
    data_hash = hashlib.sha256()
    for first in range(0, table.shape[0], _WRITE_EDGES):
        data_hash.update(np.ascontiguousarray(table[first:first + _WRITE_EDGES]))
    return data_hash.hexdigest()


def open_prepared(path: str, edge_tree: EdgeTree, n_columns: int, checksums: dict[str, str],
                  alphabet: Alphabet = DNA) -> PreparedProfiles:
    """Open `path` for a run on `edge_tree` / an m = `n_columns` alignment of `alphabet` whose files
    hash to `checksums` (keys tree, alignment); InputError naming `path` when it belongs to other
    inputs or was prepared for the other alphabet."""
    try:
        handle = h5py.File(path, "r")
    except OSError as exc:
        raise InputError(path, f"cannot open the prepared profiles (made by `papara-py prepare`): {exc}") from None
    with handle:
        try:
            return _checked_profiles(handle, path, edge_tree, n_columns, checksums, alphabet)
        except InputError:  # a ValueError too: its own message, not "damaged"
            raise
        except (OSError, KeyError, ValueError, TypeError, AttributeError, RuntimeError) as exc:
            raise InputError(path, f"the prepared profiles are damaged ({type(exc).__name__}: {exc}); run "
                                   f"`papara-py prepare` again") from None


def _json_attribute(attrs, key: str) -> dict:
    value = json.loads(attrs.get(key, "{}"))
    if not isinstance(value, dict):
        raise ValueError(f"attribute {key} is not a JSON object")
    return value


def _checked_profiles(handle: h5py.File, path: str, edge_tree: EdgeTree, n_columns: int,
                      checksums: dict[str, str], alphabet: Alphabet) -> PreparedProfiles:
    """`open_prepared`'s checks; exceptions other than InputError mean a damaged file."""
    attrs = handle.attrs
    if attrs.get("format") != FORMAT_NAME or "profiles" not in handle:
        raise InputError(path, "this is not a profiles file made by `papara-py prepare`")
    if attrs.get("format_version") != FORMAT_VERSION or attrs.get("version") != __version__:
        raise InputError(path, f"the profiles were prepared by papara-py {attrs.get('version')} (profiles format "
                               f"{attrs.get('format_version')}); this is papara-py {__version__}: run "
                               f"`papara-py prepare` again with this version")
    stored = _json_attribute(attrs, "checksums_sha256")
    for name in ("tree", "alignment"):
        if stored.get(name) != checksums[name]:
            made_from = _json_attribute(attrs, "inputs").get(name, "?")
            raise InputError(path, f"the profiles were prepared from a different {name} ({made_from}, sha256 "
                                   f"{str(stored.get(name))[:12]}...) than the one given (sha256 "
                                   f"{checksums[name][:12]}...); run `papara-py prepare` on these inputs")
    stored_alphabet = attrs.get("alphabet", DNA.name)  # files from before protein support are DNA
    if stored_alphabet != alphabet.name:
        raise InputError(path, f"the profiles were prepared with the alphabet {stored_alphabet}, and this run reads "
                               f"the alignment as {alphabet.name}; give the same --alphabet to `papara-py prepare` "
                               f"and the run")
    table = handle["profiles"]
    newick = handle["tree/newick_numbered"].asstr()[()] if "tree/newick_numbered" in handle else None
    if table.shape != (edge_tree.n_edges, n_columns) or table.dtype != alphabet.dtype \
            or newick != edge_tree.numbered_newick:
        raise InputError(path, f"the stored profiles ({table.shape[0]} edges x {table.shape[1]} columns) do not "
                               f"fit this tree and alignment ({edge_tree.n_edges} edges x {n_columns} columns); "
                               f"run `papara-py prepare` again")
    stored_data = attrs.get("profiles_sha256")
    offset = table.id.get_offset() if table.chunks is None and table.compression is None else None
    data = None
    if offset is not None and table.size:
        try:
            data = np.memmap(path, dtype=table.dtype, mode="r", offset=offset, shape=table.shape)
        except (OSError, ValueError):
            pass  # a filesystem that cannot map files: read them instead
    if data is None:
        try:
            data = table[()]  # E x m private bytes
        except OSError as exc:
            raise InputError(path, f"the stored profiles cannot be read ({exc}); run `papara-py prepare` "
                                   f"again") from None
    if profiles_digest(data) != stored_data:
        raise InputError(path, "the stored profile data are damaged (their sha256 differs from the one "
                               "`papara-py prepare` recorded); run `papara-py prepare` again")
    return PreparedProfiles(data, path)
