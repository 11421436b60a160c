"""Command line: `papara-py -t tree -s alignment -r reads` and the commands around it
(`papara-py export|devices|prepare|merge|report|example|warm-up`, argparse subparsers; a misspelt command is an
error naming the commands).

The main job's options come from one table, papara_py/run/options.py, which the Python API's
keywords come from too. `--help` shows the common ones, `--help-all` every one. PaPaRa 2.x's own
options (`-q READS`, `-a`, `-n NAME`, ...) are answered with one line naming the option to use.

Messages: the library logs (logger "papara_py"); the command line attaches the stderr handler
(notices, `--quiet` and `--verbose`) and the progress bars. Every user mistake ends as one
paragraph on stderr and exit status 2 (DESIGN 9); an output that cannot be written (no space, an
I/O error, no permission) as one paragraph and status 3; Ctrl-C with status 130, SIGTERM and
SIGHUP (a batch system's time limit or preemption) like Ctrl-C with 128 + the signal's number.
None leaves an output or a temporary file behind (io/outputs.py).
"""

from __future__ import annotations

import argparse
import difflib
import os
import shlex
import signal
import sys
import textwrap
from collections.abc import Callable

from papara_py import __version__
from papara_py.errors import InputError, OptionError, OutputError, Terminated
from papara_py.run.stop_signals import stop_signals_raise

EXIT_INPUT_ERROR = 2
EXIT_OUTPUT_ERROR = 3
EXIT_INTERRUPTED = 130

_USAGE = """papara-py -t TREE.nwk -s REF.phy -r READS.fa [-o RUN.h5] [options]
       papara-py {export,devices,prepare,merge,report,example,warm-up} ..."""

_DESCRIPTION = """\
Align short reads (FASTA/FASTQ, plain, gzip, bzip2 or xz) to a reference alignment (PHYLIP, FASTA,
Stockholm or Clustal) the phylogeny-aware way (PaPaRa): every read is aligned against the ancestral
parsimony profile of every branch of the reference tree (Newick) and the best branch wins. The
result is an HDF5 run file with each read's alignment in reference columns, its best branch and
score, and its next-best candidate branches; `papara-py export` turns it into an extended
PHYLIP/FASTA alignment, an EPA-ng query file or a jplace placement file.
"""

_COMMANDS_TEXT = """\
commands (papara-py COMMAND --help explains each):
  export RUN.h5 --format phylip|fasta|stockholm|epa|jplace -o FILE   the run as an alignment or placements
  devices                                                  the OpenCL devices papara-py sees
  prepare -t TREE -s REF -o PROFILES.h5                    edge profiles once, for every shard (--profiles)
  merge SHARD.h5... -o RUN.h5                              shards of an array job -> one run file
  report RUN.h5 -o REPORT.html [--png DIR]                 the run at a glance: tree, coverage, fit
  example DIR                                              the bundled examples into DIR/example, DIR/protein
  warm-up                                                  numba's kernels compiled ahead of the first run
"""

_EXAMPLE = """\
example:
  papara-py -t data/example/tree.nwk -s data/example/ref.phy -r data/example/reads.fa -o run.h5
  papara-py export run.h5 --format fasta -o extended.fasta
"""

#: PaPaRa 2.x's options that papara-py does not share (its -t, -s, -j and -h mean the same here),
#: each answered with the option to use (PaPaRa's -r, "no reference gaps", is papara-py's reads).
PAPARA_OPTIONS = {
    "-q": "PaPaRa's query file; papara-py takes reads with -r (--quiet has no short form)",
    "-a": "PaPaRa's protein switch; papara-py detects it, or give --alphabet protein",
    "-n": "PaPaRa's run name; papara-py writes one run file: name it with -o RUN.h5",
    "-p": "PaPaRa's scores; papara-py takes --gap-open, --gap-extend, --mismatch, --cgap",
    "-c": "PaPaRa's CGAP model switch; papara-py always uses it (--cgap: its penalty)",
    "-f": "PaPaRa's overwrite switch; papara-py replaces the -o file without one",
    "-g": "PaPaRa's FASTA switch; papara-py export RUN.h5 --format fasta writes one",
    "-b": "PaPaRa's testbench switch; papara-py has none (--log FILE records a run)",
}


class _PaparaOption(argparse.Action):
    """A PaPaRa 2.x option: refused with the one line that names papara-py's (`PAPARA_OPTIONS`)."""

    def __call__(self, parser, namespace, values, option_string=None):
        raise OptionError(option_string, PAPARA_OPTIONS[option_string])


class _Help(argparse.Action):
    """-h/--help: the common options and the commands; --help-all: every option."""

    def __init__(self, option_strings, dest, full: bool = False, **kwargs):
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)
        self.full = full

    def __call__(self, parser, namespace, values, option_string=None):
        print(build_parser(full=self.full).format_help(), end="")
        parser.exit()


class _SuggestingParser(argparse.ArgumentParser):
    """A parser that names the option a misspelt one was probably meant as: argparse says only
    "unrecognized arguments: --mismtach", or, where the misspelt option is a required one
    (`export --formt`), that the real one is missing."""

    def parse_known_args(self, args=None, namespace=None):
        self._given = list(sys.argv[1:] if args is None else args)
        namespace, extras = super().parse_known_args(args, namespace)
        if self._misspelt(extras):  # here, not in the main parser, which knows no command's options
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return namespace, extras

    def error(self, message: str):
        if "unrecognized arguments" in message or "arguments are required" in message:
            message += "".join(f"; {word}: did you mean {near}?" for word, near in self._misspelt(self._given))
        super().error(message)

    def _misspelt(self, words: list[str]) -> list[tuple[str, str]]:
        """(option, the nearest of this parser's) for each --option of `words` that this parser
        neither has nor abbreviates."""
        known = [flag for flag in self._option_string_actions if flag.startswith("--")]
        options = [word.split("=", 1)[0] for word in words if word.startswith("--")]
        unknown = [word for word in options if not any(flag.startswith(word) for flag in known)]
        return [(word, near[0]) for word in unknown if (near := difflib.get_close_matches(word, known, 1))]


def build_parser(full: bool = True) -> argparse.ArgumentParser:
    """The main job's parser, from the options table (run/options.py); `full` False: the common
    options alone (what --help shows)."""
    from papara_py.run.options import add_options, main_options

    pointer = "" if full else "\nevery option, and what each does: papara-py --help-all\n"
    parser = _SuggestingParser(
        prog="papara-py", usage=_USAGE, description=_DESCRIPTION, epilog=_COMMANDS_TEXT + "\n" + _EXAMPLE + pointer,
        formatter_class=argparse.RawDescriptionHelpFormatter, add_help=False)
    parser.add_argument("-h", "--help", action=_Help, help="the common options and the commands")
    parser.add_argument("--help-all", action=_Help, full=True, help="every option")
    parser.add_argument("--version", action="version", version=f"papara-py {__version__}")
    add_options(parser, [option for option in main_options() if full or option.common], brief=not full)
    for flag in PAPARA_OPTIONS:
        parser.add_argument(flag, nargs="?", action=_PaparaOption, help=argparse.SUPPRESS)
    return parser


def _main_job(argv: list[str]) -> int:
    from papara_py.run.log import messages_on_stderr
    from papara_py.run.options import keyword_options, run_config

    args = build_parser().parse_args(argv)
    values = {name: getattr(args, name) for name in keyword_options()}
    from papara_py.run.runner import run

    with messages_on_stderr(quiet=args.quiet, verbose=args.verbose):
        run(run_config(values, tree=args.tree, alignment=args.alignment, reads=args.reads, output=args.output,
                       outdir=args.outdir, command_line=shlex.join(["papara-py", *argv]), progress=not args.quiet))
    return 0


def _check_roles(command: str, outputs: dict, inputs: dict) -> None:
    """The output policy (io/outputs.py, io/output_roles.py), before any work: every output
    writable, not a directory, not an input and not another output; temporaries of killed runs to
    the outputs removed (with a notice)."""
    from papara_py.io.output_roles import check_roles
    from papara_py.io.outputs import log_notice

    check_roles(command, outputs, inputs, notice=log_notice)


# ------------------------------------------------------------------------------------------------
# The commands: each a function that adds its arguments to its subparser, and one that runs it


def _export_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN.h5", help="the run file to export (written by papara-py, "
                                                      "papara-py merge or papara_py.align)")
    parser.add_argument("--format", choices=["phylip", "fasta", "stockholm", "epa", "jplace"], required=True,
                        help="phylip or fasta: the extended alignment, the reference rows then every aligned read, "
                             "with insertion columns added where reads insert residues (PaPaRa's output); "
                             "stockholm: the same with each read's posterior probabilities as hmmalign writes them "
                             "(#=GR PP lines); epa: the aligned reads alone in reference columns, insertions left "
                             "out (EPA-ng's query file: --outdir writes it with its reference); jplace: each aligned "
                             "read's candidate branches as placements (jplace version 3, weights from the posterior)")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", metavar="FILE",
                       help="the exported alignment or placements, written atomically; `-` writes it to "
                            "standard output")
    where.add_argument("--outdir", metavar="DIR", help="with --format epa: write DIR/reference.fasta (the "
                                                       "reference rows of the tree's taxa) and DIR/query.fasta, "
                                                       "the pair epa-ng --split writes")
    parser.add_argument("--keep-outliers", action="store_true",
                        help="also export the reads the outlier rule flags (papara-py report explains the rule); "
                             "by default they are left out")


def _export(args: argparse.Namespace, parser: argparse.ArgumentParser, argv: list[str]) -> int:
    from papara_py.io.export import export, export_epa_pair, export_outputs

    if args.outdir is not None and args.format != "epa":
        parser.error("--outdir writes the reference + query pair of --format epa")
    _check_roles("export", export_outputs(args.output, args.outdir), {"run": args.run})
    keep = None
    if not args.keep_outliers:  # only fitting reads go downstream (the notice counts the others)
        from papara_py.io.run_file import RunFile
        from papara_py.model.outliers import run_outliers

        with RunFile(args.run) as run:
            keep = ~run_outliers(run).flagged
    if args.outdir is not None:
        for path in export_epa_pair(args.run, args.outdir, keep):
            print(f"papara-py: wrote {path}", file=sys.stderr)
        return 0
    export(args.run, args.format, args.output, keep)
    return 0


def _devices_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true",
                        help="also build every variant of papara-py's OpenCL kernels on each device (the first time "
                             "on a machine: about 30 s on an H200; the driver caches them)")


def _devices(args: argparse.Namespace, parser: argparse.ArgumentParser, argv: list[str]) -> int:
    from papara_py.engine.opencl_devices import describe_devices

    print(describe_devices(kernels=args.check))
    return 0


def _prepare_arguments(parser: argparse.ArgumentParser) -> None:
    from papara_py.run.options import add_options, reference_options

    add_options(parser, reference_options())
    parser.add_argument("-o", "--output", required=True, metavar="PROFILES.h5",
                        help="the edge profiles (HDF5), for --profiles; written atomically")


def _prepare(args: argparse.Namespace, parser: argparse.ArgumentParser, argv: list[str]) -> int:
    from papara_py.cluster.prepared import prepare

    _check_roles("prepare", {"profiles": args.output}, {"tree": args.tree, "alignment": args.alignment})
    edges = prepare(args.tree, args.alignment, args.output, shlex.join(["papara-py", *argv]), args.alphabet)
    print(f"papara-py: {edges} edge profiles written to {args.output}", file=sys.stderr)
    return 0


def _merge_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shards", nargs="+", metavar="SHARD.h5",
                        help="the shard files of one array job (--shard K/N, one per slice), in any order")
    parser.add_argument("-o", "--output", required=True, metavar="RUN.h5",
                        help="the merged run file; written atomically")


def _merge(args: argparse.Namespace, parser: argparse.ArgumentParser, argv: list[str]) -> int:
    from papara_py.cluster.merge import merge

    _check_roles("merge", {"run": args.output}, {"shards": dict(zip(args.shards, args.shards))})
    reads = merge(args.shards, args.output, shlex.join(["papara-py", *argv]))
    print(f"papara-py: merged {len(args.shards)} shards, {reads} reads, into {args.output}", file=sys.stderr)
    return 0


def _report_arguments(parser: argparse.ArgumentParser) -> None:
    from papara_py.report.page import DEFAULT_MAX_TIPS
    from papara_py.run.options import MAX_COUNT, Option

    parser.add_argument("run", metavar="RUN.h5", help="the run file to draw")
    parser.add_argument("-o", "--output", metavar="REPORT.html",
                        help="the HTML report (images embedded); written atomically")
    parser.add_argument("--png", metavar="DIR", help="write the figures as DIR/tree.png, coverage.png, ...")
    max_tips = Option("max_tips", "", "", kind="int", low=1, high=MAX_COUNT)
    parser.add_argument("--max-tips", type=max_tips.parse, default=DEFAULT_MAX_TIPS, metavar="N",
                        help="rows of the tree drawing; larger trees are collapsed (default: %(default)s)")


def _report(args: argparse.Namespace, parser: argparse.ArgumentParser, argv: list[str]) -> int:
    from papara_py.report.page import FIGURES, write_report

    if args.output is None and args.png is None:
        parser.error("give -o REPORT.html, --png DIR, or both")
    _check_roles("report", {"html": args.output, "figures": None if args.png is None else {
        name: os.path.join(args.png, f"{name}.png") for name in FIGURES}}, {"run": args.run})
    write_report(args.run, args.output, args.png, args.max_tips)
    return 0


def _example_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("directory", metavar="DIR", help="where DIR/example (DNA) and DIR/protein go")


def _example(args: argparse.Namespace, parser: argparse.ArgumentParser, argv: list[str]) -> int:
    from papara_py import examples

    for path in examples.write(args.directory):  # InputError: DIR a file, or other files in the way
        print(path)
    return 0


def _warm_up_arguments(parser: argparse.ArgumentParser) -> None:
    """None: `papara-py warm-up` takes no arguments."""


def _warm_up(args: argparse.Namespace, parser: argparse.ArgumentParser, argv: list[str]) -> int:
    from papara_py.run.warmup import warm_up

    done = warm_up()
    print(f"papara-py: kernels ready for this CPU{f' and {done.gpus} GPU(s)' if done.gpus else ''} in {done.total:.1f} s "
          + (f"({done.compiled} functions compiled)" if done.compiled else "(all from numba's cache)"), file=sys.stderr)
    return 0


_Command = tuple[str, str, Callable[[argparse.ArgumentParser], None],
                 Callable[[argparse.Namespace, argparse.ArgumentParser, list[str]], int]]
#: name -> (its line in the commands list, its description, its arguments, what it runs)
COMMANDS: dict[str, _Command] = {
    "export": ("the run as an alignment (PHYLIP, FASTA, Stockholm), EPA-ng queries or jplace placements",
               "Write a run's alignment as PHYLIP/FASTA/Stockholm (reference + reads, insertion columns added; "
               "Stockholm with each read's posterior probabilities) or as EPA-ng query FASTA, or its candidate "
               "branches as jplace (version 3) placements.",
               _export_arguments, _export),
    "devices": ("the OpenCL devices papara-py sees", "List the OpenCL platforms and devices papara-py sees, "
                "numbered as --gpus takes them.", _devices_arguments, _devices),
    "prepare": ("edge profiles once, for every shard of an array job (--profiles)",
                "Compute the edge profiles of a tree and alignment once, for every shard of an array job to load "
                "with --profiles (each shard checks they come from its tree and alignment).",
                _prepare_arguments, _prepare),
    "merge": ("shards of an array job -> one run file",
              "Merge the shard files of an array job (--shard K/N) into one run file equal to a single-machine "
              "run; refuses shards of different inputs, settings or versions, and missing or duplicated slices.",
              _merge_arguments, _merge),
    "report": ("the run at a glance: tree, coverage, fit (HTML, PNG)",
               "Draw a run at a glance: where on the tree the reads landed, which reference columns they cover, how "
               "well they fit (outliers listed), how sure the best branch is, and the run record; as one "
               "self-contained HTML file (-o) and/or PNG figures (--png DIR).", _report_arguments, _report),
    "example": ("the bundled examples (DNA and protein) into a folder",
                "Write the bundled examples (simulated DNA and protein sets: tree, alignment, reads, the truth) into "
                "DIR/example and DIR/protein, as the repository's data/ folder holds them.",
                _example_arguments, _example),
    "warm-up": ("numba's kernels compiled for this CPU ahead of the first run",
                "Compile numba's kernels for this CPU now (a DNA and a protein run's, by aligning the bundled "
                "examples), so that the first real run does not wait for them; with usable OpenCL GPUs, align the "
                "examples on them too, so that their driver builds and caches the GPU kernels. An install from "
                "source (pip install .) has compiled the CPU's already; a container build runs this.",
                _warm_up_arguments, _warm_up),
}


class _CommandsParser(_SuggestingParser):
    """`papara-py COMMAND ...`: a word that is no command is refused naming the commands, and
    saying that the main job takes none."""

    def error(self, message: str):
        if message.startswith("argument COMMAND: invalid choice"):  # not a command's own option's value
            message += ("; the main job takes no command word: papara-py -t TREE.nwk -s REF.phy -r READS.fa "
                        "(papara-py --help)")
        super().error(message)


def commands_parser(command: str | None = None) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """The commands' parser and each command's subparser; only `command`'s arguments are added
    (the others' would import what that command never needs)."""
    parser = _CommandsParser(prog="papara-py", description="The commands beside the main job (papara-py --help).")
    parser.add_argument("--version", action="version", version=f"papara-py {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", title="commands", required=True)
    made = {}
    for name, (line, description, arguments, _) in COMMANDS.items():
        made[name] = subparsers.add_parser(name, help=line, description=description)
        if name == command:
            arguments(made[name])
    return parser, made


def _command(argv: list[str]) -> int:
    parser, subparsers = commands_parser(argv[0])
    args = parser.parse_args(argv)
    from papara_py.run.log import messages_on_stderr

    with messages_on_stderr():
        return COMMANDS[args.command][3](args, subparsers[args.command], argv)


def _paragraph(text: str) -> None:
    print(textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False), file=sys.stderr)


def _kept(error: BaseException) -> list[str]:
    """The run files of the samples complete before `error` ended the run (run/runner.run)."""
    return getattr(error, "papara_kept", [])


def main(argv: list[str] | None = None) -> int:
    """Run the command line `argv`; returns the exit status (docs/reference/cli.md: Exit statuses). A first word
    that is not an option is a command (`papara-py export ...`); otherwise the main job."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        with stop_signals_raise():
            return _command(argv) if argv and not argv[0].startswith("-") else _main_job(argv)
    except KeyboardInterrupt as error:  # Ctrl-C, or Terminated: SIGTERM, SIGHUP
        return _stopped(error)
    except Exception as error:
        stop = _stop_behind(error)  # first: whatever a stop signal was turned into is still that stop
        return _stopped(stop) if stop is not None else _reported(error)


def _reported(error: Exception) -> int:
    """The exit status of an error the run reports in one paragraph (docs/reference/cli.md: Exit
    statuses); re-raises any other, a defect whose traceback is the report."""
    if isinstance(error, InputError):
        _paragraph(f"papara-py: error: {error}")
        return EXIT_INPUT_ERROR
    if isinstance(error, OutputError):
        _paragraph(f"papara-py: error: {error}")
        return EXIT_OUTPUT_ERROR
    if isinstance(error, BrokenPipeError):  # the reader of `-o -` went away (`| head`): end quietly, as cat does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 128 + signal.SIGPIPE
    if isinstance(error, OSError):  # a write outside an output file (a --png directory, say)
        from papara_py.io.outputs import as_output_error

        converted = as_output_error(error.filename or "output", error)
        if converted is not None:
            _paragraph(f"papara-py: error: {converted}")
            return EXIT_OUTPUT_ERROR
    raise error


def _stopped(error: KeyboardInterrupt) -> int:
    """The one-line message and exit status of a run a stop signal ended (run/stop_signals.py)."""
    further = "further " if _kept(error) else ""
    if isinstance(error, Terminated):
        print(f"papara-py: stopped by {error.signal_name}; no {further}output written", file=sys.stderr)
        return 128 + error.signal_number
    print(f"papara-py: interrupted; no {further}output written", file=sys.stderr)
    return EXIT_INTERRUPTED


def _stop_behind(error: BaseException) -> KeyboardInterrupt | None:
    """The stop signal's exception that `error` was raised from or while handling, if any. Why: the
    signal can land inside library code that wraps what it catches; seen in CI, Ctrl-C during
    numba's import under Python 3.11 came out as "RuntimeError: Error calling __set_name__" and a
    traceback, not as the interrupt it was."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return cause
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return None
