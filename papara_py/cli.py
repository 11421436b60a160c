"""Command line: `papara-py -t tree -s alignment -r reads` and the subcommands around it.

Every user mistake ends as one paragraph on stderr and exit status 2 (DESIGN 9); Ctrl-C ends with
status 130. Neither leaves an output file behind (outputs are written under a temporary name).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import textwrap
from typing import Callable

from papara_py import __version__
from papara_py.errors import InputError

EXIT_INPUT_ERROR = 2
EXIT_INTERRUPTED = 130

_DESCRIPTION = """\
Align short reads (FASTA/FASTQ, optionally gzipped) to a reference alignment (PHYLIP or FASTA)
the phylogeny-aware way (PaPaRa): every read is aligned against the ancestral parsimony profile of
every branch of the reference tree (Newick) and the best branch wins. The result is an HDF5 file
with each read's alignment in reference columns, its best branch and score, and its next-best
candidate branches; `papara-py export` turns it into an extended PHYLIP/FASTA alignment or an
EPA-ng query file.

Other commands:
  papara-py export RUN.h5 --format phylip|fasta|epa -o FILE
  papara-py devices          list the OpenCL devices papara-py sees
  papara-py prepare -t TREE -s REF -o PROFILES.h5      edge profiles once, for every shard (--profiles)
  papara-py merge SHARD.h5... -o RUN.h5                 shards of an array job -> one run file
  papara-py report RUN.h5 -o REPORT.html [--png DIR]    the run at a glance: tree, coverage, fit
"""

_EPILOG = """\
example:
  papara-py -t data/example/tree.nwk -s data/example/ref.phy -r data/example/reads.fa -o run.h5
  papara-py export run.h5 --format fasta -o extended.fasta
"""


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _penalty(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="papara-py", description=_DESCRIPTION, epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"papara-py {__version__}")
    inputs = parser.add_argument_group("inputs and output")
    inputs.add_argument("-t", "--tree", required=True, metavar="TREE.nwk",
                        help="reference tree (Newick); its tips must all be in the alignment")
    inputs.add_argument("-s", "--alignment", required=True, metavar="REF.phy",
                        help="reference alignment (PHYLIP or FASTA, detected from the content)")
    inputs.add_argument("-r", "--reads", required=True, metavar="READS.fa",
                        help="reads to align (FASTA or FASTQ, plain or gzipped)")
    inputs.add_argument("-o", "--output", default="papara.h5", metavar="RUN.h5",
                        help="HDF5 output file (default: %(default)s); written atomically")
    from papara_py.params import DEFAULT_PRESET, PRESETS
    scoring = parser.add_argument_group(
        "scoring (penalties, minimised; a preset, then any single penalty given overrides it)")
    scoring.add_argument("--preset", choices=list(PRESETS), default=DEFAULT_PRESET,
                         help="; ".join(f"{name}: {'/'.join(map(str, values))}" for name, values in PRESETS.items())
                         + f" (mismatch/cgap/gap-open/gap-extend/insertion; default: %(default)s, chosen by the "
                         "accuracy study in docs/ACCURACY.md; paper: the 2012 paper's)")
    for k, (flag, meaning) in enumerate([
            ("--mismatch", "read residue not in the branch's state set"),
            ("--cgap", "read residue in a column the tree says is a gap"),
            ("--gap-open", "opening a gap in the read"),
            ("--gap-extend", "extending a gap in the read"),
            ("--insertion", "read residue between reference columns")]):
        scoring.add_argument(flag, type=_penalty, default=None,
                             help=f"{meaning} (default: the preset's; {PRESETS[DEFAULT_PRESET][k]} in {DEFAULT_PRESET})")
    engine = parser.add_argument_group("engine")
    engine.add_argument("-j", "--threads", type=_positive_int, default=os.cpu_count() or 1,
                        help="CPU worker threads (default: all cores, %(default)s here)")
    engine.add_argument("--device", choices=["auto", "cpu", "gpu", "hybrid"], default="auto",
                        help="auto: CPU and GPU together when an OpenCL GPU is present, else CPU (default)")
    engine.add_argument("--gpu-chunk", type=_positive_int, default=40, metavar="BLOCKS",
                        help="edge blocks the GPU takes per kernel launch (default: %(default)s)")
    engine.add_argument("--gpu-profile", action="store_true",
                        help="time each GPU launch on the device (OpenCL profiling events) and store the "
                             "sum per GPU in the run record (gpu_device_seconds); against the scoring time it "
                             "shows how long the device waited for the host")
    engine.add_argument("--lanes", type=_positive_int, default=None,
                        help="edges per block (default: the CPU's int16 vector width)")
    engine.add_argument("--candidates", type=_positive_int, default=5, metavar="K",
                        help="best K branches kept per read, for placement tools (default: %(default)s)")
    engine.add_argument("--strand", choices=["auto", "both", "forward"], default="auto",
                        help="read orientation: auto decides from shared k-mers with the reference and scores "
                             "both orientations where that evidence is weak; both always scores both and keeps "
                             "the better (ties: forward); forward takes reads as given (default: %(default)s)")
    engine.add_argument("--batch-reads", type=_positive_int, default=12_500, metavar="N",
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
    return parser


def _main_job(argv: list[str]) -> int:
    from papara_py.params import ScoringParams
    from papara_py.pipeline import RunConfig, run
    from papara_py.shards import resolve_shard

    args = build_parser().parse_args(argv)
    _check_output_path(args.output)
    config = RunConfig(
        tree=args.tree, alignment=args.alignment, reads=args.reads, output=args.output,
        params=_penalties(args, ScoringParams),
        threads=args.threads, device=args.device, gpu_chunk=args.gpu_chunk, gpu_profile=args.gpu_profile,
        candidates=args.candidates,
        strand=args.strand, lanes=args.lanes, batch_reads=args.batch_reads, quiet=args.quiet, verbose=args.verbose,
        command_line=shlex.join(["papara-py", *argv]), shard=resolve_shard(args.shard), profiles=args.profiles,
    )
    run(config)
    return 0


def _penalties(args: argparse.Namespace, scoring_params: type):
    """The preset's penalties, each one given on the command line replacing its value."""
    preset = scoring_params.preset(args.preset)
    given = {name: getattr(args, name) for name in ("mismatch", "cgap", "gap_open", "gap_extend", "insertion")}
    return scoring_params(**{name: getattr(preset, name) if value is None else value for name, value in given.items()})


def _check_output_path(path: str) -> None:
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InputError(path, f"the output directory {directory} does not exist")
    if not os.access(directory, os.W_OK):
        raise InputError(path, f"the output directory {directory} is not writable")
    if os.path.isdir(path):
        raise InputError(path, "the output path is a directory; give a file name such as run.h5")


def _export(argv: list[str]) -> int:
    from papara_py.export import export

    parser = argparse.ArgumentParser(prog="papara-py export",
                                     description="Write a run's alignment as PHYLIP/FASTA (reference + reads, "
                                                 "insertion columns added) or as EPA-ng query FASTA.")
    parser.add_argument("run", metavar="RUN.h5")
    parser.add_argument("--format", choices=["phylip", "fasta", "epa"], required=True)
    parser.add_argument("-o", "--output", required=True, metavar="FILE")
    args = parser.parse_args(argv)
    _check_output_path(args.output)
    export(args.run, args.format, args.output)
    return 0


def _devices(argv: list[str]) -> int:
    from papara_py.engine.opencl_devices import describe_devices

    argparse.ArgumentParser(prog="papara-py devices",
                            description="List the OpenCL platforms and devices papara-py sees.").parse_args(argv)
    print(describe_devices())
    return 0


def _prepare(argv: list[str]) -> int:
    from papara_py.prepared import prepare

    parser = argparse.ArgumentParser(
        prog="papara-py prepare",
        description="Compute the edge profiles of a tree and alignment once, for every shard of an array job "
                    "to load with --profiles (each shard checks they come from its tree and alignment).")
    parser.add_argument("-t", "--tree", required=True, metavar="TREE.nwk")
    parser.add_argument("-s", "--alignment", required=True, metavar="REF.phy")
    parser.add_argument("-o", "--output", required=True, metavar="PROFILES.h5")
    args = parser.parse_args(argv)
    _check_output_path(args.output)
    edges = prepare(args.tree, args.alignment, args.output, shlex.join(["papara-py", "prepare", *argv]))
    print(f"papara-py: {edges} edge profiles written to {args.output}", file=sys.stderr)
    return 0


def _merge(argv: list[str]) -> int:
    from papara_py.merge import merge

    parser = argparse.ArgumentParser(
        prog="papara-py merge",
        description="Merge the shard files of an array job (--shard K/N) into one run file equal to a "
                    "single-machine run; refuses shards of different inputs, settings or versions, and "
                    "missing or duplicated slices.")
    parser.add_argument("shards", nargs="+", metavar="SHARD.h5")
    parser.add_argument("-o", "--output", required=True, metavar="RUN.h5")
    args = parser.parse_args(argv)
    _check_output_path(args.output)
    reads = merge(args.shards, args.output, shlex.join(["papara-py", "merge", *argv]))
    print(f"papara-py: merged {len(args.shards)} shards, {reads} reads, into {args.output}", file=sys.stderr)
    return 0


def _report(argv: list[str]) -> int:
    from papara_py.report import DEFAULT_MAX_TIPS, write_report

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
    if args.output is not None:
        _check_output_path(args.output)
    write_report(args.run, args.output, args.png, args.max_tips)
    return 0


SUBCOMMANDS: dict[str, Callable[[list[str]], int]] = {"export": _export, "devices": _devices,
                                                      "prepare": _prepare, "merge": _merge,
                                                      "report": _report}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    command = SUBCOMMANDS.get(argv[0]) if argv else None
    try:
        return command(argv[1:]) if command else _main_job(argv)
    except InputError as error:
        print(textwrap.fill(f"papara-py: error: {error}", width=100, break_long_words=False,
                            break_on_hyphens=False), file=sys.stderr)
        return EXIT_INPUT_ERROR
    except KeyboardInterrupt:
        print("papara-py: interrupted; no output written", file=sys.stderr)
        return EXIT_INTERRUPTED
