"""The main job's options, defined once: an `Option` per option (its name, type, default, range
or choices, help and --help section), from which both the command line's parser (cli.py) and the
Python API's keywords (`papara_py.align(**options)`) are made, so the two cannot drift apart.
Every range is checked here (`Option.value`), with a message naming the option, before any work;
`run_config` then turns the checked values and the inputs into the runner's RunConfig.

Importing this module is light (no numba, h5py or OpenCL): the presets and the kernels' limits
the table states are read when the options are first asked for (`main_options`).
"""
from __future__ import annotations

import argparse
import logging
import math
import operator
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from papara_py.errors import OptionError

if TYPE_CHECKING:
    from papara_py.run.config import RunConfig

#: Most CPU threads -j takes (far more than any node has; a typo such as -j 80000 is refused).
MAX_THREADS = 4096
#: Most reads per batch and edge blocks per GPU launch; beyond these a batch's arrays alone need
#: hundreds of GiB.
MAX_BATCH_READS = 10_000_000
MAX_GPU_CHUNK = 100_000
#: A count with no natural bound (--candidates is capped at the tree's edge count later).
MAX_COUNT = 2**31 - 1

_log = logging.getLogger(__name__)


class OptionValueError(ValueError):
    """A value an option does not take; the message says why (the caller names the option)."""


@dataclass(frozen=True)
class Option:
    """One option of the main job.

    `kind` says what it takes: "int" or "number" (in `low`..`high`, `why` saying what the range
    protects), "choice" (one of `choices`), "flag" (a switch: True or False), "text", "path",
    "gpus" (GPU numbers: "0,1", a list of them, or all). `keyword` False: not a keyword of
    `papara_py.align` (an input or output, which it takes as arguments, or a command-line switch);
    `common`: shown by the short `--help`."""

    name: str
    help: str
    group: str
    kind: str = "text"
    default: Any = None
    low: float | None = None
    high: float | None = None
    why: str = ""
    choices: tuple[str, ...] = ()
    metavar: str | None = None
    short: str | None = None
    required: bool = False
    many: bool = False
    keyword: bool = True
    common: bool = False
    brief: str = ""  # the short --help's text, where `help` is long
    exclusive: str = ""  # options of the same non-empty name exclude each other (argparse's group)

    @property
    def flag(self) -> str:
        """The long option: --gap-open for gap_open."""
        return "--" + self.name.replace("_", "-")

    @property
    def flags(self) -> tuple[str, ...]:
        return (self.short, self.flag) if self.short else (self.flag,)

    def value(self, given: Any) -> Any:
        """`given` (a Python value, or its text as on the command line) as this option takes it;
        OptionValueError where it does not."""
        if given is None:
            return self.default
        if self.kind == "flag":
            if not isinstance(given, bool):
                raise OptionValueError(f"must be True or False (a switch), got {given!r}")
            return given
        if self.kind == "int":
            return self._in_range(self._integer(given))
        if self.kind == "number":
            return self._in_range(self._number(given), shown=repr(given) if isinstance(given, str) else None)
        if self.kind == "choice":
            if not isinstance(given, str) or given not in self.choices:
                raise OptionValueError(f"must be one of {', '.join(self.choices)}, got {given!r}")
            return given
        if self.kind == "gpus":
            return _gpu_numbers(given)
        if self.kind == "path":
            if not isinstance(given, (str, os.PathLike)):
                raise OptionValueError(f"must be a path, got {type(given).__name__}")
            return os.fspath(given)
        if not isinstance(given, str):
            raise OptionValueError(f"must be text, got {type(given).__name__}")
        return given

    def parse(self, text: str) -> Any:
        """An argparse `type`: the command line's text as `value` takes it (argparse names the option)."""
        try:
            return self.value(text)
        except OptionValueError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    def _integer(self, given: Any) -> int:
        if isinstance(given, str):
            try:
                return int(given)
            except ValueError:
                raise OptionValueError(f"must be an integer, got {given!r}") from None
        if isinstance(given, bool):
            raise OptionValueError(f"must be an integer, got {given!r}")
        try:
            return operator.index(given)
        except TypeError:
            raise OptionValueError(f"must be an integer, got {given!r}") from None

    def _number(self, given: Any) -> float:
        if isinstance(given, bool) or not isinstance(given, (str, int, float)) and not hasattr(given, "__float__"):
            raise OptionValueError(f"must be a number, got {given!r}")
        try:
            return float(given)
        except ValueError:
            raise OptionValueError(f"must be a number, got {given!r}") from None

    def _in_range(self, number: float, shown: str | None = None) -> Any:
        low, high = self.low, self.high
        if low is None or high is None:
            return number
        if math.isnan(number) or not low <= number <= high:
            kind, bound = ("an integer", "{:d}") if self.kind == "int" else ("a number", "{:g}")
            raise OptionValueError(f"must be {kind} from {bound.format(low)} to {bound.format(high)}{self.why}, "
                                   f"got {shown if shown is not None else number}")
        return number


def _gpu_numbers(given: Any) -> tuple[int, ...] | None:
    """--gpus: distinct GPU numbers (text "0,1", or a sequence of them); "all": every one (None)."""
    if isinstance(given, str):
        if given.strip().lower() == "all":
            return None
        try:
            numbers = tuple(int(part) for part in given.split(","))
        except ValueError:
            raise OptionValueError(f"must be GPU numbers such as 0 or 0,1 (papara-py devices), got {given!r}") from None
    elif isinstance(given, Sequence) and all(isinstance(n, int) and not isinstance(n, bool) for n in given):
        numbers = tuple(given)
    elif isinstance(given, int) and not isinstance(given, bool):
        numbers = (given,)
    else:
        raise OptionValueError(f"must be GPU numbers such as 0 or 0,1 (papara-py devices), got {given!r}")
    if not numbers or any(n < 0 for n in numbers) or len(set(numbers)) != len(numbers):
        raise OptionValueError(f"must be distinct GPU numbers from 0, got {given!r}")
    return numbers


INPUTS = "inputs and output"
SCORING = "scoring (penalties, minimised; a preset, then any single penalty given overrides it)"
ENGINE = "engine"
CLUSTER = "cluster array jobs (docs/guide.md: Clusters)"
MESSAGES = "messages"


def reference_options() -> tuple[Option, ...]:
    """-t, -s and --alphabet: the reference of the main job and of `papara-py prepare`."""
    from papara_py.phylo.encoding import ALPHABET_CHOICES, NUCLEOTIDE_SHARE

    return (
        Option("tree", "reference tree (Newick); its tips must all be in the alignment", INPUTS,
               short="-t", metavar="TREE.nwk", required=True, keyword=False, common=True),
        Option("alignment", "reference alignment (PHYLIP, FASTA, Stockholm or Clustal, detected from the content)",
               INPUTS, short="-s", metavar="REF.phy", required=True, keyword=False, common=True),
        Option("alphabet", f"dna (nucleotides, IUPAC codes) or protein (amino acids); auto: protein when fewer than "
                           f"{NUCLEOTIDE_SHARE * 100:.0f}%% of the alignment's residues are A, C, G, T, U or N "
                           "(default: %(default)s). Reads must be of the alignment's alphabet", INPUTS,
               kind="choice", choices=tuple(ALPHABET_CHOICES), default="auto", common=True),
    )


@lru_cache(maxsize=1)
def main_options() -> tuple[Option, ...]:
    """Every option of the main job, in --help's order."""
    from papara_py.engine.limits import INITIAL_CLUSTERS, MAX_LANES
    from papara_py.model.column_costs import MAX_COLUMN_WEIGHT
    from papara_py.model.params import DEFAULT_PRESET, MAX_PENALTY, MAX_TEMPERATURE, PRESETS

    def preset_values(name: str) -> str:
        return f"{getattr(PRESETS[DEFAULT_PRESET], name):g} in {DEFAULT_PRESET}, " \
               f"{getattr(PRESETS['protein'], name):g} in protein"

    def penalty(name: str, meaning: str, metavar: str | None = None) -> Option:
        return Option(name, f"{meaning} (default: the preset's; {preset_values(name)})", SCORING, kind="int",
                      low=0, high=MAX_PENALTY, why=" (the kernels' 16- and 32-bit scores must hold them)",
                      metavar=metavar)

    weight_why = " (the kernels read each column cost as one byte)"
    return (
        *reference_options(),
        Option("reads", "reads to align (FASTA or FASTQ, plain, gzip, bzip2 or xz); several files (samples) are "
                        "aligned in one run, each into its own run file in --outdir", INPUTS,
               short="-r", metavar="READS.fa", required=True, many=True, keyword=False, common=True),
        Option("output", "HDF5 output file; written atomically (default: papara.h5)", INPUTS, short="-o",
               metavar="RUN.h5", keyword=False, common=True),
        Option("outdir", "write each reads file's run file into the existing directory DIR, named after it "
                         "(S1.fastq.gz -> DIR/S1.h5); needed with several reads files", INPUTS, metavar="DIR",
               keyword=False, common=True),
        Option("preset", "; ".join(f"{preset.name}: {'/'.join(f'{v:g}' for v in preset.values().values())}, "
                                   f"{preset.chosen}" for preset in PRESETS.values())
               + " (mismatch/cgap/gap-open/gap-extend/insertion/near-mismatch/column-weight/temperature/"
                 "placement-temperature; default: "
                 f"{DEFAULT_PRESET} for DNA, protein for protein; docs/accuracy.md says how they were chosen)",
               SCORING, kind="choice", choices=tuple(PRESETS), common=True,
               brief=f"the penalties by name (default: {DEFAULT_PRESET} for DNA, protein for protein; paper: the "
                     "2012 paper's Eq. 1; their values: --help-all); single parameters given override it"),
        penalty("mismatch", "read residue not in the branch's state set"),
        penalty("cgap", "read residue in a column the tree says is a gap"),
        penalty("gap_open", "opening a gap in the read"),
        penalty("gap_extend", "extending a gap in the read"),
        penalty("insertion", "read residue between reference columns"),
        penalty("near_mismatch", "read residue among the branch's near states: one parsimony step from its state "
                                 "set (DNA), or scoring 0 or more against one of its states in BLOSUM62 (protein); at "
                                 "most --mismatch; equal to it is the paper's Eq. 1)"),
        Option("column_weight", "protein: the column profile cost, W per half bit by which a read residue's profile "
                                "score in the column (the log of its mean BLOSUM62 odds against the column's reference "
                                "residues; in the posterior step the rows near the edge weigh more) falls short of BLOSUM62's "
                                "largest score, 11 (DESIGN.md 3); 0: "
                                f"off, the paper's model (default: the preset's; {PRESETS['protein'].column_weight:g} in "
                                "protein)", SCORING, kind="number", low=0, high=MAX_COLUMN_WEIGHT, why=weight_why,
               metavar="W"),
        Option("temperature", "the posterior decoding's temperature in cost units (DESIGN.md 5): each read's columns "
                              "are the optimal-accuracy alignment of its residues' posteriors over its candidate "
                              "edges, a path of cost c weighing exp(-c/T); 0: the Viterbi traceback of Eq. 1 on the "
                              f"best edge (default: the preset's; {preset_values('temperature')}, 0 in paper)",
               SCORING, kind="number", low=0, high=MAX_TEMPERATURE, why=" (cost units)", metavar="T"),
        Option("placement_temperature", "the edge weights' temperature in cost units (DESIGN.md 5): candidate "
                                        "edge e weighs exp(-(Z_e - Z_min)/T_p), Z_e the free energy of the read's "
                                        "alignments to it; these weights pool the edges' posteriors and are the "
                                        "jplace like_weight_ratio; not used at --temperature 0 (default: the "
                                        f"preset's; {preset_values('placement_temperature')}; a --temperature given "
                                        "alone sets it too where the preset has the two equal)",
               SCORING, kind="number", low=0, high=MAX_TEMPERATURE, why=" (cost units)", metavar="T_P"),
        Option("threads", "threads (default: the CPUs this process may use: its CPU affinity, e.g. taskset or a SLURM "
                          "allocation, capped by a cgroup CPU quota)", ENGINE, kind="int", low=1, high=MAX_THREADS,
               short="-j", metavar="THREADS", common=True),
        Option("device", "auto: the GPUs when an OpenCL GPU is present and the run is large enough to repay its "
                         "start-up, else the CPU (default); hybrid: CPU workers beside the GPUs", ENGINE,
               kind="choice", choices=("auto", "cpu", "gpu", "hybrid"), default="auto", common=True),
        Option("gpus", "which OpenCL GPUs to use, by the numbers `papara-py devices` shows, e.g. 0 or 0,1 (default: "
                       "all usable GPUs)", ENGINE, kind="gpus", metavar="LIST"),
        Option("gpu_chunk", "edge blocks the GPU takes per kernel launch (default: %(default)s)", ENGINE, kind="int",
               low=1, high=MAX_GPU_CHUNK, default=40, metavar="BLOCKS"),
        Option("gpu_profile", "time each GPU launch on the device (OpenCL profiling events) and store the sum per GPU "
                              "in the run record (gpu_device_seconds); against the scoring time it shows how long the "
                              "device waited for the host", ENGINE, kind="flag", default=False),
        Option("traceback", "where each read's posterior step (DESIGN.md 5) runs: auto: on the run's GPUs when it "
                            "scores on any, else on the CPU; cpu: always on the CPU threads (the results are the "
                            "same)", ENGINE, kind="choice", choices=("auto", "cpu"), default="auto"),
        Option("lanes", f"edges per block, 1 to {MAX_LANES} (default: the CPU's int16 vector width, or PAPARA_LANES)",
               ENGINE, kind="int", low=1, high=MAX_LANES,
               why=" (each CPU worker keeps a lane-wide DP strip on its stack)", metavar="LANES"),
        Option("candidates", "best K branches per read, whose alignments the posterior step pools by weight "
                             "(DESIGN.md 5); at most the tree's edge count (default: %(default)s)", ENGINE, kind="int",
               low=1, high=MAX_COUNT, default=5, metavar="K", common=True),
        Option("search", "exhaustive scores every read against every edge (the reference); guided scores each read "
                         "against the central edges of clusters of the tree, then inside the best clusters, widening "
                         "until its best edges are surrounded by scored edges: exact DP on a few percent of the edges "
                         "of a large tree (default: %(default)s)", ENGINE, kind="choice",
               choices=("exhaustive", "guided"), default="exhaustive"),
        Option("guided_clusters", "--search guided: the clusters, by their centres' scores, whose edges every read is "
                                  "scored against before the widening (more: closer to exhaustive, more cells; "
                                  f"default: {INITIAL_CLUSTERS})", ENGINE, kind="int", low=1, high=MAX_COUNT,
               metavar="N"),
        Option("strand", "read orientation: auto decides from shared k-mers with the reference and scores both "
                         "orientations where that evidence is weak; both always scores both and keeps the better "
                         "(ties: forward); forward takes reads as given (default: %(default)s). Protein reads have no "
                         "reverse strand: auto means forward, both is refused", ENGINE, kind="choice",
               choices=("auto", "both", "forward"), default="auto"),
        Option("batch_reads", "reads scored per batch; bounds memory (default: %(default)s)", ENGINE, kind="int",
               low=1, high=MAX_BATCH_READS, default=12_500, metavar="N"),
        Option("shard", "align slice K of N (0 <= K < N; read q is in slice q mod N) into a self-contained shard file "
                        "for `papara-py merge`; when absent, taken from SLURM_ARRAY_TASK_* or SGE_TASK_* in an array "
                        "job; `none` ignores those variables", CLUSTER, metavar="K/N"),
        Option("profiles", "edge profiles made by `papara-py prepare` from the same tree and alignment (checked by "
                           "sha256), instead of computing them", CLUSTER, kind="path", metavar="PROFILES.h5"),
        Option("quiet", "no notices, no progress bars", MESSAGES, kind="flag", default=False, keyword=False,
               common=True, exclusive="chatter"),
        Option("verbose", "more detail on stderr", MESSAGES, kind="flag", default=False, short="-v", keyword=False,
               common=True, exclusive="chatter"),
        Option("log", "append time-stamped lines of what the run did (inputs and their sha256, threads, devices, "
                      "batches, phases, warnings, the result or the error) to FILE", MESSAGES, kind="path",
               metavar="FILE", common=True),
    )


def keyword_options() -> dict[str, Option]:
    """The options `papara_py.align` takes as keywords, by name."""
    return {option.name: option for option in main_options() if option.keyword}


def add_options(parser: argparse.ArgumentParser, options: Sequence[Option], brief: bool = False) -> None:
    """The options as argparse arguments, in their --help sections (the command line's parser);
    `brief`: with their short help texts, where they have one (the short --help)."""
    groups: dict[str, Any] = {}
    exclusive: dict[str, Any] = {}
    for option in options:
        group = groups.get(option.group) or groups.setdefault(option.group, parser.add_argument_group(option.group))
        if option.exclusive:
            group = exclusive.get(option.exclusive) or exclusive.setdefault(
                option.exclusive, group.add_mutually_exclusive_group())
        if option.kind == "flag":
            group.add_argument(*option.flags, dest=option.name, action="store_true", help=option.help)
            continue
        text = option.brief if brief and option.brief else option.help
        extra: dict[str, Any] = {"nargs": "+"} if option.many else {}
        if option.kind == "choice":
            extra["choices"] = option.choices
        elif option.kind not in ("text", "path"):
            extra["type"] = option.parse
        group.add_argument(*option.flags, dest=option.name, default=option.default, metavar=option.metavar,
                           required=option.required, help=text, **extra)


def option_values(options: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The keywords of `papara_py.align` (`where` names the call) checked by their options: every
    keyword option's value, the default where not given. An unknown keyword, or a value an option
    does not take, is an OptionError naming it."""
    table = keyword_options()
    values = {name: option.default for name, option in table.items()}
    for key, given in options.items():
        option = table.get(key)
        if option is None:
            raise OptionError(where, _unknown(key, table))
        try:
            values[key] = option.value(given)
        except OptionValueError as error:
            raise OptionError(key, str(error)) from None
    return values


def _unknown(key: str, table: Mapping[str, Option]) -> str:
    import difflib

    others = {option.name: option for option in main_options() if not option.keyword}
    if key in others and others[key].group == MESSAGES:
        return (f"{key!r} is a command-line switch; the Python API prints nothing: its notices go to the "
                "logging logger 'papara_py' (logging.basicConfig(level=logging.INFO) shows them)")
    if key in others or key in ("help", "version"):
        return f"{key!r} is not an option here"
    close = difflib.get_close_matches(key, list(table), n=1)
    return (f"{key!r} is not an option" + (f"; did you mean {close[0]!r}?" if close else "")
            + " (the options are papara-py --help-all's, '-' written '_')")


def run_config(values: Mapping[str, Any], *, tree: str, alignment: str, reads: Sequence[str], output: str | None,
               outdir: str | None, command_line: str, progress: bool = False) -> RunConfig:
    """The runner's RunConfig from the checked option `values` (`option_values`, or the command
    line's) and the inputs, after the checks that come before any work: PAPARA_LANES, and every output (the run files,
    --log) against the inputs and the other outputs (io/output_roles.check_roles; temporaries of
    killed runs removed, with a notice). `progress`: progress bars on stderr (the command line's)."""
    from papara_py.cluster.shards import resolve_shard
    from papara_py.engine.cpus import available_cpus
    from papara_py.engine.guided import INITIAL_CLUSTERS, GuidedOptions
    from papara_py.io.output_roles import check_roles
    from papara_py.io.outputs import log_notice
    from papara_py.run.config import RunConfig
    from papara_py.run.samples import samples_in

    if values["lanes"] is None:  # PAPARA_LANES is checked now, not after the inputs are read
        from papara_py.engine.cpu import default_lane_width

        default_lane_width()
    samples = samples_in(list(reads), output, outdir)
    runs = {sample.reads: sample.output for sample in samples}
    check_roles("papara-py", {"run": None if outdir else samples[0].output, "samples": runs if outdir else None,
                              "log": values["log"]},
                {"tree": tree, "alignment": alignment, "profiles": values["profiles"],
                 "reads": {reads: reads for reads in runs}}, notice=log_notice)
    threads, threads_source = (values["threads"], "--threads") if values["threads"] else available_cpus()
    return RunConfig(
        tree=tree, alignment=alignment, reads=samples[0].reads, output=samples[0].output,
        more_samples=tuple(samples[1:]), params=penalty_choice(values), alphabet=values["alphabet"],
        threads=threads, threads_source=threads_source, log=values["log"], device=values["device"],
        gpus=values["gpus"], gpu_chunk=values["gpu_chunk"], gpu_profile=values["gpu_profile"],
        traceback=values["traceback"], candidates=values["candidates"], search=values["search"],
        guided=GuidedOptions(initial=values["guided_clusters"] or INITIAL_CLUSTERS),
        strand=values["strand"], lanes=values["lanes"], batch_reads=values["batch_reads"], progress=progress,
        command_line=command_line, shard=resolve_shard(values["shard"]), profiles=values["profiles"],
    )


def penalty_choice(values: Mapping[str, Any]):
    """--preset and the single penalties given (model/params.py PenaltyChoice); the run resolves
    it once the alphabet, whose default preset applies without --preset, is known."""
    from papara_py.model.params import PARAMETER_NAMES, PenaltyChoice

    return PenaltyChoice(values["preset"], tuple((name, values[name]) for name in PARAMETER_NAMES
                                                 if values[name] is not None))
