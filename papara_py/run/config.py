"""The main job's configuration (`RunConfig`: what the CLI and the Python API fill in) and each
sample's outcome (`RunSummary`: what `run/runner.run` returns)."""
from __future__ import annotations

from dataclasses import dataclass, field, replace

from papara_py.cluster.shards import Shard
from papara_py.engine.engine_options import EngineOptions
from papara_py.engine.guided import GuidedOptions
from papara_py.engine.strand import check_mode
from papara_py.model.params import PenaltyChoice, ScoringParams
from papara_py.run.samples import Sample


@dataclass
class RunConfig:
    """Everything the main job needs; the CLI and the Python API fill it from their options
    (run/options.run_config). Its messages go to the logging logger "papara_py" (run/log.py)."""

    tree: str
    alignment: str
    reads: str
    output: str
    #: the penalties, or --preset and single penalties to resolve once the alphabet is known (the
    #: default preset is the alphabet's: model/params.py)
    params: ScoringParams | PenaltyChoice = field(default_factory=PenaltyChoice)
    alphabet: str = "auto"  # --alphabet: auto | dna | protein (phylo/encoding.py)
    threads: int = 1
    gpus: tuple[int, ...] | None = None  # --gpus: which OpenCL GPUs (numbers of `papara-py devices`); None: all
    threads_source: str = "RunConfig.threads"  # why that many: --threads, or the CPUs the process may use
    log: str | None = None  # --log FILE: time-stamped lines of what the run did (run/log.py)
    device: str = "cpu"
    gpu_chunk: int = 40
    gpu_profile: bool = False  # device time per GPU in the run record (OpenCL profiling events)
    candidates: int = 5
    search: str = "exhaustive"  # exhaustive | guided (papara_py/engine/guided.py)
    guided: GuidedOptions = field(default_factory=GuidedOptions)
    strand: str = "auto"  # auto | both | forward (engine/strand.py; protein: forward)
    traceback: str = "auto"  # auto: the posterior step on the run's GPUs where it has any (engine/tracer.py) | cpu
    lanes: int | None = None
    batch_reads: int = 12_500
    progress: bool = False  # progress bars on stderr (the command line's; the library prints nothing)
    command_line: str = ""
    engine_options: EngineOptions | None = None
    shard: Shard | None = None  # align only this slice of the reads (papara_py/cluster/shards.py)
    profiles: str | None = None  # edge profiles from `papara-py prepare` (papara_py/cluster/prepared.py)
    #: the reads files after `reads` (-r A B C --outdir DIR), each into a run file of its own (samples.py)
    more_samples: tuple[Sample, ...] = ()

    def __post_init__(self) -> None:
        check_mode(self.strand)  # a strand mode that is none: refused before any work

    @property
    def samples(self) -> list[Sample]:
        return [Sample(self.reads, self.output), *self.more_samples]

    def for_sample(self, sample: Sample) -> RunConfig:
        """This configuration for one sample of the run (its reads and output)."""
        return replace(self, reads=sample.reads, output=sample.output, more_samples=())


@dataclass
class RunSummary:
    """One sample's outcome (`run` returns one per sample)."""

    output: str
    n_reads: int
    n_aligned: int
    status_counts: dict[str, int]
    timings: dict[str, float]
    gcups: float
