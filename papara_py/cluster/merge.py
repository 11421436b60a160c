"""`papara-py merge`: shards of an array job -> one run file equal to a single-machine run (DESIGN 8).

Merge refuses (InputError naming the culprit file) unless the shards provably belong together:
- every file is a complete papara-py shard (written with --shard or array variables; partial
  files never exist, outputs are atomic) of the same format and papara-py version;
- the same inputs (sha256 of tree, alignment and reads) and the same result-shaping settings
  (`IDENTITY_KEYS`: scoring parameters, alphabet, K candidates, strand and search modes, edge
  and column counts);
- the same slicing (N, the total read count, the rule) and every slice 0..N-1 exactly once
  (missing and duplicated slices are listed);
- each shard holds exactly its slice's rows, and all hold the same per-read datasets.
Where shards disagree, the value most of them share is taken as right and the others are named.

The merged file is laid out by io.run_writer.RunWriter like any run; every dataset under /reads that
the shards have is copied (generically: datasets added later are merged without changes here),
rows interleaved back into input order (row i of shard K is read K + i*N, papara_py.cluster.shards), a
block of reads at a time, so memory stays bounded whatever the read count.

What equals a single-machine run of the same inputs and settings: every dataset; the root attrs
format, format_version and version (command_line is the merge's); and the /run attrs in
`RUN_RECORD_EQUAL` (identity keys copied, `ADDITIVE_KEYS` summed over the shards) and the
outlier null (`outlier_null`: the union of the shards' lengths, model/outliers.py). Everything
else a shard recorded about its own execution (timings, devices, lanes, consumers, command line,
slice) is kept per shard in /run attr `merged_shards`; `timings_seconds` holds the sums over the
shards plus the merge's own time, and `gcups` is computed from those sums.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import h5py
import numpy as np

from papara_py.cluster.shards import Shard
from papara_py.errors import InputError
from papara_py.io.run_file import RunFile, datasets_below
from papara_py.io.run_writer import FORMAT_VERSION, run_writer
from papara_py.model.outliers import OutlierNull

#: /run attrs that decide the results; every shard must agree and the merged file copies them.
IDENTITY_KEYS = ("checksums_sha256", "parameters", "alphabet", "near_states", "candidates_k", "strand", "search",
                 "n_edges", "n_columns")
#: /run attrs that count over reads; the merged file holds their sums (numbers, or dicts key-wise).
ADDITIVE_KEYS = ("cells", "status_counts", "strand_counts")
#: /run attrs of a merged file equal to those of a single-machine run of the same inputs (the
#: outlier null: the union of the shards', `_merged_record`).
RUN_RECORD_EQUAL = IDENTITY_KEYS + ADDITIVE_KEYS + ("outlier_null",)
#: Bytes of one dataset held per copy step (rows of all shards interleaved in memory).
_BLOCK_BYTES = 128 << 20
_BLOCK_ROWS = 1 << 16


@dataclass
class _ShardFile:
    path: str
    file: RunFile
    run: dict  # the run record (/run attrs)
    shard: Shard
    n_reads_total: int
    rule: str


def _open_shard(path: str) -> _ShardFile:
    run_file = RunFile(path)
    try:
        if "shard" not in run_file.record:
            raise InputError(path, "this run file is not a shard (it was written without --shard or array-job "
                                   "variables); a whole run needs no merge")
        record = run_file.record["shard"]
        shard = Shard(int(record["index"]), int(record["count"]), path)
        return _ShardFile(path, run_file, dict(run_file.record), shard, int(record["n_reads_total"]),
                          str(record["rule"]))
    except BaseException:
        run_file.close()
        raise


def _require_same(shards: list[_ShardFile], what: str, value_of) -> None:
    """All shards agree on value_of(shard), or InputError naming those that differ from the majority."""
    groups: dict[str, list[_ShardFile]] = {}
    for s in shards:
        groups.setdefault(repr(value_of(s)), []).append(s)
    if len(groups) == 1:
        return
    # the majority is taken as right (ties: the group of the first file given)
    right = max(groups.values(), key=lambda g: (len(g), -shards.index(g[0])))
    wrong = [s for g in groups.values() if g is not right for s in g]
    shown = ", ".join(f"{s.path} has {value_of(s)!r}" for s in wrong[:5])
    more = f" (and {len(wrong) - 5} more)" if len(wrong) > 5 else ""
    others = f" and {len(right) - 1} other(s) have" if len(right) > 1 else " has"
    raise InputError(wrong[0].path, f"the shards differ in {what}: {shown}{more}, while {right[0].path}{others} "
                                    f"{value_of(right[0])!r}; shards of one run must come from the same inputs, "
                                    f"settings and papara-py version")


def _per_read_datasets(shard: _ShardFile) -> dict[str, h5py.Dataset]:
    return shard.file.read_datasets()


def check_shards(shards: list[_ShardFile]) -> None:
    """Everything merge refuses on (module docstring), each as an InputError naming the culprit."""
    _require_same(shards, "format version", lambda s: int(s.file.attrs.get("format_version", -1)))
    _require_same(shards, "papara-py version", lambda s: str(s.file.attrs.get("version")))
    if int(shards[0].file.attrs.get("format_version", -1)) != FORMAT_VERSION:
        raise InputError(shards[0].path, f"the shards are run files of format version "
                                         f"{shards[0].file.attrs.get('format_version')}; this papara-py reads and "
                                         f"writes version {FORMAT_VERSION}: merge with the papara-py that wrote them")
    for key in IDENTITY_KEYS:
        what = "inputs (sha256 of tree, alignment, reads)" if key == "checksums_sha256" else f"setting {key!r}"
        _require_same(shards, what, lambda s: s.run.get(key))
    _require_same(shards, "the number of slices N", lambda s: s.shard.count)
    _require_same(shards, "the total read count", lambda s: s.n_reads_total)
    _require_same(shards, "the slicing rule", lambda s: s.rule)
    by_index: dict[int, list[str]] = {}
    for s in shards:
        by_index.setdefault(s.shard.index, []).append(s.path)
    duplicated = {k: paths for k, paths in by_index.items() if len(paths) > 1}
    if duplicated:
        k, paths = min(duplicated.items())
        raise InputError(paths[1], f"slice {k}/{shards[0].shard.count} is given more than once ({', '.join(paths)}); "
                                   f"give each slice exactly once")
    count = shards[0].shard.count
    missing = [k for k in range(count) if k not in by_index]
    if missing:
        listed = ", ".join(f"{k}/{count}" for k in missing[:10]) + (f" and {len(missing) - 10} more"
                                                                    if len(missing) > 10 else "")
        raise InputError("merge", f"{len(missing)} of {count} slices are missing: {listed} (did those array tasks "
                                  f"fail, or is a file not in the list?); rerun them with --shard K/{count}")
    _require_same(shards, "per-read datasets (name, type, shape)",
                  lambda s: sorted((n, d.dtype.str if h5py.check_string_dtype(d.dtype) is None else "string",
                                    d.shape[1:]) for n, d in _per_read_datasets(s).items()))
    for s in shards:
        rows = s.shard.size(s.n_reads_total)
        wrong = sorted(name for name, ds in _per_read_datasets(s).items() if ds.shape[0] != rows)
        if wrong:
            raise InputError(s.path, f"slice {s.shard} of {s.n_reads_total} reads must hold {rows} rows, but "
                                     f"/reads/{wrong[0]} has {_per_read_datasets(s)[wrong[0]].shape[0]}; "
                                     f"the file is damaged or was edited")


def _block_rows(dataset: h5py.Dataset) -> int:
    """Global rows copied per step: within _BLOCK_BYTES, whole 256-row output chunks where possible.

    (Any block works: `_interleave` takes each shard's rows falling in [lo, hi), whatever N.)
    """
    row_bytes = max(1, int(np.prod(dataset.shape[1:], dtype=np.int64)) * max(1, dataset.dtype.itemsize))
    rows = max(1, min(_BLOCK_ROWS, _BLOCK_BYTES // row_bytes))
    return rows // 256 * 256 if rows >= 256 else rows


def _interleave(name: str, shards: list[_ShardFile], lo: int, hi: int) -> np.ndarray:
    """Global rows [lo, hi) of /reads/name, gathered from the shards (read q is in shard q mod N)."""
    count = shards[0].shard.count
    first = shards[0].file.dataset(f"reads/{name}")
    is_string = h5py.check_string_dtype(first.dtype) is not None
    out = np.empty((hi - lo,) + first.shape[1:], dtype=object if is_string else first.dtype)
    for s in shards:
        k = s.shard.index
        i0 = max(0, -(-(lo - k) // count))
        i1 = min(s.file.dataset(f"reads/{name}").shape[0], -(-(hi - k) // count))
        if i1 <= i0:
            continue
        rows = s.file.column(name, slice(i0, i1))  # checked: a damaged shard is refused
        start = k + count * i0 - lo
        out[start:start + count * (i1 - i0):count] = rows
    return out


def _allow_open_files(n: int) -> None:
    """Every shard stays open while rows are interleaved; lift the soft open-file limit (often
    1024) toward the hard one so that thousands of shards do not fail as unreadable files."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = n + 256
        if soft != resource.RLIM_INFINITY and soft < want:
            limit = want if hard == resource.RLIM_INFINITY else min(want, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (limit, hard))
    except (ImportError, ValueError, OSError):
        pass  # not POSIX, or not allowed: opening will say so per file


def merge(paths: list[str], output: str, command_line: str = "") -> int:
    """Check the shards and write the merged run file to `output` atomically; returns the read count."""
    started = time.perf_counter()
    if not paths:
        raise InputError("merge", "no shard files given")
    same = [p for p in paths if os.path.exists(output) and os.path.exists(p) and os.path.samefile(p, output)]
    if same:
        raise InputError(output, f"the output is also one of the shards ({same[0]}); choose another -o")
    _allow_open_files(len(paths))
    shards: list[_ShardFile] = []
    try:
        for path in paths:
            shards.append(_open_shard(path))
        check_shards(shards)
        shards.sort(key=lambda s: s.shard.index)
        _write_merged(shards, output, command_line, started)
    finally:
        for s in shards:
            s.file.close()
    return shards[0].n_reads_total


def _write_merged(shards: list[_ShardFile], output: str, command_line: str, started: float) -> None:
    first = shards[0]
    total = first.n_reads_total
    datasets = _per_read_datasets(first)
    k = int(first.run["candidates_k"])
    with run_writer(output, first.file.n_columns, k, command_line) as writer:
        writer.file.attrs["version"] = first.file.attrs["version"]  # the results' producer, not the merger
        writer.write_reference(first.file.reference_names, first.file.reference_alignment(),
                               first.file.newick_numbered)
        layout = datasets_below(writer.file["reads"])
        unfilled = sorted(set(layout) - set(datasets))
        if unfilled:
            raise InputError(first.path, f"the shards have no /reads/{unfilled[0]}, which this papara-py writes; "
                                         f"merge with the papara-py that wrote the shards")
        for name, source in datasets.items():
            if name not in layout:  # a per-read dataset this writer does not know: same type and shape
                chunks = ((max(1, min(total, source.chunks[0])),) + source.chunks[1:]
                          if source.chunks and total else None)
                writer.file["reads"].create_dataset(
                    name, (total,) + source.shape[1:], dtype=source.dtype, chunks=chunks,
                    compression=source.compression if chunks else None,
                    compression_opts=source.compression_opts if chunks else None,
                    fletcher32=source.fletcher32 and bool(chunks),
                    fillvalue=source.fillvalue)
            step = _block_rows(source)
            for lo in range(0, total, step):
                writer.write_reads(lo, {name: _interleave(name, shards, lo, min(total, lo + step))})
        writer.set_read_count(total)
        writer.write_run_record(_merged_record(shards, started))


def _summed(values: list):
    """Sum of numbers, or key-wise sum of dicts (keys missing in some shards count as 0)."""
    if all(isinstance(v, dict) for v in values):
        keys = sorted(set().union(*values))
        return {key: _summed([v.get(key, 0) for v in values]) for key in keys}
    return sum(values)


def _merged_record(shards: list[_ShardFile], started: float) -> dict:
    record: dict = {key: shards[0].run[key] for key in IDENTITY_KEYS if key in shards[0].run}
    if "inputs" in shards[0].run:
        record["inputs"] = shards[0].run["inputs"]
    for key in ADDITIVE_KEYS:
        if all(key in s.run for s in shards):
            record[key] = _summed([s.run[key] for s in shards])
    nulls = [null for null in (OutlierNull.in_run_record(s.run) for s in shards) if null is not None]
    if nulls:  # each shard scored the null lengths its reads need; one length's null is the same in all
        record["outlier_null"] = OutlierNull.union(nulls).record()
    own = set(IDENTITY_KEYS) | set(ADDITIVE_KEYS) | {"inputs", "shard", "outlier_null"}
    record["merged_shards"] = [
        {"file": os.path.abspath(s.path), "shard": s.run["shard"],
         "command_line": s.file.attrs.get("command_line", ""),
         **{key: value for key, value in sorted(s.run.items()) if key not in own}}
        for s in shards]
    timings = [s.run.get("timings_seconds", {}) for s in shards]
    summed = _summed([t for t in timings if isinstance(t, dict)]) if timings else {}
    summed["merge"] = time.perf_counter() - started
    record["timings_seconds"] = summed
    scoring, cells = summed.get("scoring", 0.0), record.get("cells", 0)
    record["gcups"] = cells / scoring / 1e9 if scoring else 0.0
    record["n_shards"] = len(shards)
    return record

