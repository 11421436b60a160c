"""Command line: `papara-py -t tree -s alignment -r reads` and the subcommands around it.

Every user mistake ends as one paragraph on stderr and exit status 2 (DESIGN 9); an output that
cannot be written (no space, an I/O error, no permission) as one paragraph and status 3; Ctrl-C
with status 130, SIGTERM and SIGHUP (a batch system's time limit or preemption) like Ctrl-C with
128 + the signal's number. None leaves an output or a temporary file behind (io/outputs.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import sys
import textwrap
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from papara_py import __version__
from papara_py.errors import InputError, OutputError, Terminated

EXIT_INPUT_ERROR = 2
EXIT_OUTPUT_ERROR = 3
EXIT_INTERRUPTED = 130
#: Signals handled like Ctrl-C: the run stops promptly, cleans up and exits with 128 + the number.
TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)

_DESCRIPTION = """\
Align short reads (FASTA/FASTQ, plain, gzip, bzip2 or xz) to a reference alignment (PHYLIP, FASTA,
Stockholm or Clustal) the phylogeny-aware way (PaPaRa): every read is aligned against the ancestral
parsimony profile of every branch of the reference tree (Newick) and the best branch wins. The
result is an HDF5 file with each read's alignment in reference columns, its best branch and score,
and its next-best candidate branches; `papara-py export` turns it into an extended PHYLIP/FASTA
alignment, an EPA-ng query file or a jplace placement file.

Other commands:
  papara-py export RUN.h5 --format phylip|fasta|epa|jplace -o FILE   (epa: or --outdir DIR, EPA-ng's pair)
  papara-py devices          list the OpenCL devices papara-py sees
  papara-py prepare -t TREE -s REF -o PROFILES.h5      edge profiles once, for every shard (--profiles)
  papara-py merge SHARD.h5... -o RUN.h5                 shards of an array job -> one run file
  papara-py report RUN.h5 -o REPORT.html [--png DIR]    the run at a glance: tree, coverage, fit
  papara-py example DIR      write the bundled examples to DIR/example (DNA) and DIR/protein
  papara-py warm-up          compile numba's kernels for this CPU ahead of the first run
"""

_EPILOG = """\
example:
  papara-py -t data/example/tree.nwk -s data/example/ref.phy -r data/example/reads.fa -o run.h5
  papara-py export run.h5 --format fasta -o extended.fasta
"""


def _gpu_list(text: str) -> tuple[int, ...] | None:
    """--gpus: distinct GPU numbers, comma-separated ("all" for every one: the default)."""
    if text.strip().lower() == "all":
        return None
    try:
        numbers = tuple(int(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be GPU numbers such as 0 or 0,1 (papara-py devices), got {text!r}") from None
    if any(n < 0 for n in numbers) or len(set(numbers)) != len(numbers):
        raise argparse.ArgumentTypeError(f"must be distinct GPU numbers from 0, got {text!r}")
    return numbers


def _bounded_int(low: int, high: int, why: str = "") -> Callable[[str], int]:
    """An argparse type: an integer in low..high (argparse names the option in its message)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be an integer, got {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer from {low} to {high}{why}, got {value}")
        return value

    return parse


#: Most CPU threads -j takes (far more than any node has; a typo such as -j 80000 is refused).
MAX_THREADS = 4096
#: Most reads per batch and edge blocks per GPU launch; beyond these a batch's arrays alone need
#: hundreds of GiB.
MAX_BATCH_READS = 10_000_000
MAX_GPU_CHUNK = 100_000
#: A count with no natural bound (--candidates is capped at the tree's edge count later).
_positive_int = _bounded_int(1, 2**31 - 1)


def _penalty(text: str) -> int:
    from papara_py.model.params import MAX_PENALTY

    return _bounded_int(0, MAX_PENALTY, " (the kernels' 16- and 32-bit scores must hold them)")(text)


def _temperature(text: str) -> float:
    """An argparse type: the posterior decoding's temperature, a number from 0 to MAX_TEMPERATURE."""
    from papara_py.model.params import MAX_TEMPERATURE

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not 0 <= value <= MAX_TEMPERATURE:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number from 0 to {MAX_TEMPERATURE:g} (cost units), got {text!r}")
    return value


def _column_weight(text: str) -> float:
    """An argparse type: the column profile cost's weight, a number from 0 to MAX_COLUMN_WEIGHT."""
    from papara_py.model.column_costs import MAX_COLUMN_WEIGHT

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, got {text!r}") from None
    if not 0 <= value <= MAX_COLUMN_WEIGHT:  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be a number from 0 to {MAX_COLUMN_WEIGHT:g} (the kernels read "
                                         f"each column cost as one byte), got {text!r}")
    return value


def _lanes(text: str) -> int:
    from papara_py.engine.cpu import MAX_LANES

    return _bounded_int(1, MAX_LANES, " (each CPU worker keeps a lane-wide DP strip on its stack)")(text)


class OptionError(InputError):
    """A command-line option (or a keyword of the Python API, which parses its options here) is wrong."""


class _RaisingParser(argparse.ArgumentParser):
    """A parser that raises OptionError instead of printing usage and exiting (for the Python API)."""

    def error(self, message: str):
        raise OptionError("options", message)


def _add_reference(group) -> None:
    """-t, -s and --alphabet: the main job's and `prepare`'s reference (one definition for both)."""
    from papara_py.phylo.encoding import ALPHABET_CHOICES, NUCLEOTIDE_SHARE

    group.add_argument("-t", "--tree", required=True, metavar="TREE.nwk",
                       help="reference tree (Newick); its tips must all be in the alignment")
    group.add_argument("-s", "--alignment", required=True, metavar="REF.phy",
                       help="reference alignment (PHYLIP, FASTA, Stockholm or Clustal, detected from the content)")
    group.add_argument("--alphabet", choices=ALPHABET_CHOICES, default="auto",
                       help=f"dna (nucleotides, IUPAC codes) or protein (amino acids); auto: protein when fewer "
                            f"than {NUCLEOTIDE_SHARE * 100:.0f}%% of the alignment's residues are A, C, G, T, U or N "
                            f"(default: %(default)s). Reads must be of the alignment's alphabet")


def _add_output(group, metavar: str, what: str) -> None:
    """-o: the output file (atomic) of a command that needs one (the main job's is optional: its
    default, papara.h5, or --outdir)."""
    group.add_argument("-o", "--output", required=True, metavar=metavar, help=f"{what}; written atomically")


def build_parser(raising: bool = False) -> argparse.ArgumentParser:
    """The main job's options. `raising`: errors raise OptionError instead of exiting (the API)."""
    parser = (_RaisingParser if raising else argparse.ArgumentParser)(
        prog="papara-py", description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"papara-py {__version__}")
    inputs = parser.add_argument_group("inputs and output")
    _add_reference(inputs)
    inputs.add_argument("-r", "--reads", required=True, nargs="+", metavar="READS.fa",
                        help="reads to align (FASTA or FASTQ, plain, gzip, bzip2 or xz); several files (samples) are "
                             "aligned in one run, each into its own run file in --outdir")
    inputs.add_argument("-o", "--output", default=None, metavar="RUN.h5",
                        help="HDF5 output file; written atomically (default: papara.h5)")
    inputs.add_argument("--outdir", default=None, metavar="DIR",
                        help="write each reads file's run file into the existing directory DIR, named after it "
                             "(S1.fastq.gz -> DIR/S1.h5); needed with several reads files")
    from papara_py.model.params import DEFAULT_PRESET, PRESETS
    scoring = parser.add_argument_group(
        "scoring (penalties, minimised; a preset, then any single penalty given overrides it)")
    scoring.add_argument("--preset", choices=list(PRESETS), default=None,
                         help="; ".join(f"{preset.name}: {preset.chosen}" for preset in PRESETS.values())
                         + f" (default: {DEFAULT_PRESET} for DNA, protein for protein)")
    default, protein = PRESETS[DEFAULT_PRESET], PRESETS["protein"]
    for name, meaning in [
            ("mismatch", "read residue not in the branch's state set"),
            ("cgap", "read residue in a column the tree says is a gap"),
            ("gap_open", "opening a gap in the read"),
            ("gap_extend", "extending a gap in the read"),
            ("insertion", "read residue between reference columns"),
            ("near_mismatch", ("read residue among the branch's near states: one parsimony step from its "
                               "state set (DNA), or scoring 0 or more against one of its states in BLOSUM62 (protein); "
                               "at most --mismatch; equal to it is the paper's Eq. 1)"))]:
        scoring.add_argument("--" + name.replace("_", "-"), type=_penalty, default=None,
                             help=f"{meaning} (default: the preset's; {getattr(default, name)} in {DEFAULT_PRESET}, "
                                  f"{getattr(protein, name)} in protein)")
    scoring.add_argument("--column-weight", type=_column_weight, default=None, metavar="W",
                         help="protein: the column profile cost, W per BLOSUM62 unit by which a read residue's mean "
                              "score against the column's reference residues falls short of 5 (DESIGN.md 4); 0: off, "
                              f"the paper's model (default: the preset's; {protein.column_weight:g} in protein)")
    scoring.add_argument("--temperature", type=_temperature, default=None, metavar="T",
                         help="the posterior decoding's temperature in cost units (DESIGN.md 5): each read's "
                              "columns are the optimal-accuracy alignment of its residues' posteriors over its "
                              "candidate edges, a path of cost c weighing exp(-c/T); 0: the Viterbi traceback of "
                              f"Eq. 1 on the best edge (default: the preset's; {default.temperature:g} in "
                              f"{DEFAULT_PRESET}, {protein.temperature:g} in protein, 0 in paper)")
    engine = parser.add_argument_group("engine")
    engine.add_argument("-j", "--threads", type=_bounded_int(1, MAX_THREADS), default=None,
                        help="threads (default: the CPUs this process may use: its CPU affinity, e.g. "
                             "taskset or a SLURM allocation, capped by a cgroup CPU quota)")
    engine.add_argument("--device", choices=["auto", "cpu", "gpu", "hybrid"], default="auto",
                        help="auto: the GPUs when an OpenCL GPU is present and the run is large enough to repay its "
                             "start-up, else the CPU (default); hybrid: CPU workers beside the GPUs")
    engine.add_argument("--gpus", type=_gpu_list, default=None, metavar="LIST",
                        help="which OpenCL GPUs to use, by the numbers `papara-py devices` shows, e.g. 0 or 0,1 "
                             "(default: all usable GPUs)")
    engine.add_argument("--gpu-chunk", type=_bounded_int(1, MAX_GPU_CHUNK), default=40, metavar="BLOCKS",
                        help="edge blocks the GPU takes per kernel launch (default: %(default)s)")
    engine.add_argument("--gpu-profile", action="store_true",
                        help="time each GPU launch on the device (OpenCL profiling events) and store the "
                             "sum per GPU in the run record (gpu_device_seconds); against the scoring time it "
                             "shows how long the device waited for the host")
    engine.add_argument("--traceback", choices=["auto", "cpu"], default="auto",
                        help="where each read's posterior step (DESIGN.md 5) runs: auto: on the run's GPUs "
                             "when it scores on any, else on the CPU; cpu: always on the CPU threads (the "
                             "results are the same)")
    engine.add_argument("--lanes", type=_lanes, default=None,
                        help="edges per block, 1 to 256 (default: the CPU's int16 vector width, or "
                             "PAPARA_LANES)")
    engine.add_argument("--candidates", type=_positive_int, default=5, metavar="K",
                        help="best K branches kept per read, for placement tools; at most the tree's "
                             "edge count (default: %(default)s)")
    engine.add_argument("--search", choices=["exhaustive", "guided"], default="exhaustive",
                        help="exhaustive scores every read against every edge (the reference); guided scores "
                             "each read against the central edges of clusters of the tree, then inside the best "
                             "clusters, widening until its best edges are surrounded by scored edges: exact DP on "
                             "a few percent of the edges of a large tree (default: %(default)s)")
    engine.add_argument("--guided-clusters", type=_positive_int, default=None, metavar="N",
                        help="--search guided: the clusters, by their centres' scores, whose edges every read is "
                             "scored against before the widening (more: closer to exhaustive, more cells; "
                             "default: 16)")
    engine.add_argument("--strand", choices=["auto", "both", "forward"], default="auto",
                        help="read orientation: auto decides from shared k-mers with the reference and scores "
                             "both orientations where that evidence is weak; both always scores both and keeps "
                             "the better (ties: forward); forward takes reads as given (default: %(default)s). "
                             "Protein reads have no reverse strand: auto means forward, both is refused")
    engine.add_argument("--batch-reads", type=_bounded_int(1, MAX_BATCH_READS), default=12_500, metavar="N",
                        help="reads scored per batch; bounds memory (default: %(default)s)")
    cluster = parser.add_argument_group("cluster array jobs (README: Running at cluster scale)")
    cluster.add_argument("--shard", metavar="K/N", default=None,
                         help="align slice K of N (0 <= K < N; read q is in slice q mod N) into a self-contained "
                              "shard file for `papara-py merge`; when absent, taken from SLURM_ARRAY_TASK_* or "
                              "SGE_TASK_* in an array job; `none` ignores those variables")
    cluster.add_argument("--profiles", metavar="PROFILES.h5", default=None,
                         help="edge profiles made by `papara-py prepare` from the same tree and alignment "
                              "(checked by sha256), instead of computing them")
    chatter = parser.add_mutually_exclusive_group()
    chatter.add_argument("-q", "--quiet", action="store_true", help="no notices, no progress bars")
    chatter.add_argument("-v", "--verbose", action="store_true", help="more detail on stderr")
    parser.add_argument("--log", metavar="FILE", default=None,
                        help="append time-stamped lines of what the run did (inputs and their sha256, threads, "
                             "devices, batches, phases, warnings, the result or the error) to FILE")
    return parser


def _main_job(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)  # --help answers before the pipeline (numba, h5py) is imported
    from papara_py.run.runner import run

    run(main_job_config(args, shlex.join(["papara-py", *argv])))
    return 0


def main_job_config(args: argparse.Namespace, command_line: str):
    """The run's RunConfig (run/config.py) from parsed main-job options (the CLI's and the Python API's), after
    the checks that come before any work (output policy, PAPARA_LANES)."""
    from papara_py.cluster.shards import resolve_shard
    from papara_py.engine.cpus import available_cpus
    from papara_py.engine.guided import INITIAL_CLUSTERS, GuidedOptions
    from papara_py.run.config import RunConfig
    from papara_py.run.samples import samples_in

    if args.lanes is None:  # PAPARA_LANES is checked now, not after the inputs are read
        from papara_py.engine.cpu import default_lane_width

        default_lane_width()
    samples = samples_in(args.reads, args.output, args.outdir)
    runs = {sample.reads: sample.output for sample in samples}
    _check_roles("papara-py", {"run": None if args.outdir else samples[0].output,
                               "samples": runs if args.outdir else None, "log": args.log},
                 {"tree": args.tree, "alignment": args.alignment, "profiles": args.profiles,
                  "reads": {reads: reads for reads in runs}}, quiet=args.quiet)
    threads, threads_source = (args.threads, "--threads") if args.threads else available_cpus()
    return RunConfig(
        tree=args.tree, alignment=args.alignment, reads=samples[0].reads, output=samples[0].output,
        more_samples=tuple(samples[1:]),
        params=_penalty_choice(args), alphabet=args.alphabet,
        threads=threads, threads_source=threads_source, log=args.log, device=args.device, gpus=args.gpus,
        gpu_chunk=args.gpu_chunk, gpu_profile=args.gpu_profile, traceback=args.traceback,
        candidates=args.candidates, search=args.search,
        guided=GuidedOptions(initial=args.guided_clusters or INITIAL_CLUSTERS),
        strand=args.strand, lanes=args.lanes, batch_reads=args.batch_reads, quiet=args.quiet, verbose=args.verbose,
        command_line=command_line, shard=resolve_shard(args.shard), profiles=args.profiles,
    )


def _penalty_choice(args: argparse.Namespace):
    """--preset and the single penalties given (model/params.py PenaltyChoice); the run resolves
    it once the alphabet, whose default preset applies without --preset, is known."""
    from papara_py.model.params import PENALTY_NAMES, PenaltyChoice

    names = (*PENALTY_NAMES, "column_weight", "temperature")
    given = tuple((name, getattr(args, name)) for name in names if getattr(args, name) is not None)
    return PenaltyChoice(args.preset, given)


def _check_roles(command: str, outputs: dict, inputs: dict, quiet: bool = False) -> None:
    """The output policy (io/outputs.py, io/output_roles.py), before any work: every output
    writable, not a directory, not an input and not another output; temporaries of killed runs to
    the outputs removed (named unless `quiet`)."""
    from papara_py.io.output_roles import check_roles

    check_roles(command, outputs, inputs, notice=(lambda message: None) if quiet else _notice)


def _notice(message: str) -> None:
    print(textwrap.fill(f"papara-py: {message}", width=100, break_long_words=False, break_on_hyphens=False),
          file=sys.stderr)


def _export(argv: list[str]) -> int:
    from papara_py.io.export import export, export_epa_pair, export_outputs

    parser = argparse.ArgumentParser(prog="papara-py export",
                                     description="Write a run's alignment as PHYLIP/FASTA (reference + reads, "
                                                 "insertion columns added) or as EPA-ng query FASTA, or "
                                                 "its candidate branches as jplace (version 3) placements.")
    parser.add_argument("run", metavar="RUN.h5")
    parser.add_argument("--format", choices=["phylip", "fasta", "stockholm", "epa", "jplace"], required=True)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", metavar="FILE",
                       help="the exported alignment or placements; `-` writes it to standard output")
    where.add_argument("--outdir", metavar="DIR", help="with --format epa: write DIR/reference.fasta (the "
                                                       "reference rows of the tree's taxa) and DIR/query.fasta, "
                                                       "the pair epa-ng --split writes")
    args = parser.parse_args(argv)
    if args.outdir is not None and args.format != "epa":
        parser.error("--outdir writes the reference + query pair of --format epa")
    _check_roles("export", export_outputs(args.output, args.outdir), {"run": args.run})
    if args.outdir is not None:
        for path in export_epa_pair(args.run, args.outdir):
            print(f"papara-py: wrote {path}", file=sys.stderr)
        return 0
    export(args.run, args.format, args.output)
    return 0


def _devices(argv: list[str]) -> int:
    from papara_py.engine.opencl_devices import describe_devices

    argparse.ArgumentParser(prog="papara-py devices",
                            description="List the OpenCL platforms and devices papara-py sees.").parse_args(argv)
    print(describe_devices())
    return 0


def _prepare(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="papara-py prepare",
        description="Compute the edge profiles of a tree and alignment once, for every shard of an array job "
                    "to load with --profiles (each shard checks they come from its tree and alignment).")
    _add_reference(parser)
    _add_output(parser, "PROFILES.h5", "the edge profiles (HDF5)")
    args = parser.parse_args(argv)
    from papara_py.cluster.prepared import prepare  # after --help: dendropy, h5py

    _check_roles("prepare", {"profiles": args.output}, {"tree": args.tree, "alignment": args.alignment})
    edges = prepare(args.tree, args.alignment, args.output, shlex.join(["papara-py", "prepare", *argv]),
                    args.alphabet)
    print(f"papara-py: {edges} edge profiles written to {args.output}", file=sys.stderr)
    return 0


def _merge(argv: list[str]) -> int:
    from papara_py.cluster.merge import merge

    parser = argparse.ArgumentParser(
        prog="papara-py merge",
        description="Merge the shard files of an array job (--shard K/N) into one run file equal to a "
                    "single-machine run; refuses shards of different inputs, settings or versions, and "
                    "missing or duplicated slices.")
    parser.add_argument("shards", nargs="+", metavar="SHARD.h5")
    _add_output(parser, "RUN.h5", "the merged run file")
    args = parser.parse_args(argv)
    _check_roles("merge", {"run": args.output}, {"shards": dict(zip(args.shards, args.shards))})
    reads = merge(args.shards, args.output, shlex.join(["papara-py", "merge", *argv]))
    print(f"papara-py: merged {len(args.shards)} shards, {reads} reads, into {args.output}", file=sys.stderr)
    return 0


def _report(argv: list[str]) -> int:
    from papara_py.report.page import DEFAULT_MAX_TIPS, FIGURES, write_report

    parser = argparse.ArgumentParser(
        prog="papara-py report",
        description="Draw a run at a glance: where on the tree the reads landed, which reference columns "
                    "they cover, how well they fit (outliers listed), how sure the best branch is, and the "
                    "run record; as one self-contained HTML file (-o) and/or PNG figures (--png DIR).")
    parser.add_argument("run", metavar="RUN.h5")
    parser.add_argument("-o", "--output", metavar="REPORT.html", help="the HTML report (images embedded)")
    parser.add_argument("--png", metavar="DIR", help="write the figures as DIR/tree.png, coverage.png, ...")
    parser.add_argument("--max-tips", type=_positive_int, default=DEFAULT_MAX_TIPS, metavar="N",
                        help="rows of the tree drawing; larger trees are collapsed (default: %(default)s)")
    args = parser.parse_args(argv)
    if args.output is None and args.png is None:
        parser.error("give -o REPORT.html, --png DIR, or both")
    _check_roles("report", {"html": args.output, "figures": None if args.png is None else {
        name: os.path.join(args.png, f"{name}.png") for name in FIGURES}}, {"run": args.run})
    write_report(args.run, args.output, args.png, args.max_tips)
    return 0


def _example(argv: list[str]) -> int:
    from papara_py import examples

    parser = argparse.ArgumentParser(prog="papara-py example", description=(
        "Write the bundled examples (simulated DNA and protein sets: tree, alignment, reads, the truth) into "
        "DIR/example and DIR/protein, as the repository's data/ folder holds them."))
    parser.add_argument("directory", metavar="DIR", help="where DIR/example (DNA) and DIR/protein go")
    for path in examples.write(parser.parse_args(argv).directory):
        print(path)
    return 0


def _warm_up(argv: list[str]) -> int:
    from papara_py.run.warmup import warm_up

    argparse.ArgumentParser(prog="papara-py warm-up", description=(
        "Compile numba's kernels for this CPU now (a DNA and a protein run's, by aligning the bundled examples), "
        "so that the first real run does not wait for them; a container build runs this.")).parse_args(argv)
    done = warm_up()
    print(f"papara-py: kernels ready for this CPU in {done.total:.1f} s "
          + (f"({done.compiled} functions compiled)" if done.compiled else "(all from numba's cache)"), file=sys.stderr)
    return 0


SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {"export": _export, "devices": _devices,
                                                      "prepare": _prepare, "merge": _merge,
                                                      "report": _report, "example": _example,
                                                      "warm-up": _warm_up}


@contextmanager
def _terminating_signals_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP raise Terminated (a KeyboardInterrupt) in the main thread, once: every
    clean-up Ctrl-C runs runs for them too, and a second signal cannot interrupt the clean-up.
    Ctrl-C raises KeyboardInterrupt as Python's own handler does (a second one interrupts).

    Such an exception can land inside a library's constructor (llvmlite's, while numba loads a
    cached function), whose destructor then fails on the half-made object and Python prints
    "Exception ignored ... Traceback" under papara-py's one-line message. From the first stop
    signal on, such destructor errors are dropped (`sys.unraisablehook`, left so after the block:
    the object dies only when the exception is handled, and the process is ending). A signal the
    process was started ignoring (`nohup`: SIGHUP; a shell's background job: SIGINT) stays
    ignored. Outside the main thread (an embedding program) nothing is changed."""
    raised = False

    def handler(number: int, _frame) -> None:
        nonlocal raised
        sys.unraisablehook = _ignore_unraisable
        if number == signal.SIGINT:
            raise KeyboardInterrupt
        if not raised:
            raised = True
            raise Terminated(number, signal.Signals(number).name)

    try:
        previous = {number: signal.signal(number, handler) for number in (signal.SIGINT, *TERMINATING_SIGNALS)
                    if signal.getsignal(number) not in (signal.SIG_IGN, None)}
    except ValueError:  # not the main thread
        previous = {}
    try:
        yield
    finally:
        for number, old in previous.items():
            signal.signal(number, old)


def _ignore_unraisable(_unraisable) -> None:
    """sys.unraisablehook after a stop signal (`_terminating_signals_raise`)."""


def _paragraph(text: str) -> None:
    print(textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False), file=sys.stderr)


def _kept(error: BaseException) -> list[str]:
    """The run files of the samples complete before `error` ended the run (run/runner.run)."""
    return getattr(error, "papara_kept", [])


class _StderrHandler(logging.StreamHandler):
    """A handler writing to whatever sys.stderr is when a record comes (a caller may redirect it)."""

    papara_cli = True

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, _value) -> None:
        pass


def _log_to_stderr(argv: list[str]) -> None:
    """The library's notices (logger "papara_py": engine/compile_watch.py's compile notice) on stderr as
    "papara-py: ..." lines, unless -q/--quiet; once per process."""
    logger = logging.getLogger("papara_py")
    if not any(isinstance(handler, _StderrHandler) for handler in logger.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("papara-py: %(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING if {"-q", "--quiet"} & set(argv) else logging.INFO)


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv`; returns the exit status (README: Exit statuses)."""
    argv = sys.argv[1:] if argv is None else argv
    _log_to_stderr(argv)
    command = SUBCOMMANDS.get(argv[0]) if argv else None
    try:
        with _terminating_signals_raise():
            return command(argv[1:]) if command else _main_job(argv)
    except InputError as error:
        _paragraph(f"papara-py: error: {error}")
        return EXIT_INPUT_ERROR
    except OutputError as error:
        _paragraph(f"papara-py: error: {error}")
        return EXIT_OUTPUT_ERROR
    except Terminated as error:
        print(f"papara-py: stopped by {error.signal_name}; no {'further ' if _kept(error) else ''}output written",
              file=sys.stderr)
        return 128 + error.signal_number
    except KeyboardInterrupt as error:
        print(f"papara-py: interrupted; no {'further ' if _kept(error) else ''}output written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader of `-o -` went away (`| head`): end quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    except OSError as error:  # a write outside an output file (a --png directory, say)
        from papara_py.io.outputs import as_output_error

        converted = as_output_error(error.filename or "output", error)
        if converted is None:
            raise
        _paragraph(f"papara-py: error: {converted}")
        return EXIT_OUTPUT_ERROR
