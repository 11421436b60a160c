"""`warm_up` (`papara-py warm-up`): numba's kernels compiled ahead, before the first run (and the
OpenCL kernels built, where there are GPUs).

numba compiles the kernels for the CPU it runs on the first time a run calls them (about
engine/compile_watch.COMPILE_ESTIMATE_SECONDS of one core for a DNA or a protein run on the
2-core development machine) and caches them; `warm_up` pays that once, ahead: the container
definitions (Dockerfile, recipe/papara-py.def) run it at build time, and a user may after an
install. A run that still has to compile says so (engine/compile_watch.py).
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from papara_py.engine.compile_watch import (
    COMPILE_ESTIMATE_SECONDS,
    _warming,
    logger,
    watch_compiles,
)

#: The alphabets `warm_up` compiles for, by default both.
ALPHABETS = ("dna", "protein")


@dataclass(frozen=True)
class WarmUp:
    """What `warm_up` did: seconds per alphabet, the compilations of papara-py functions it saw
    (`CompileWatch.functions`; 0: everything came from numba's cache), and the GPUs it built the
    OpenCL kernels on (0: none, or not asked)."""

    seconds: dict[str, float]
    compiled: int
    gpus: int = 0

    @property
    def total(self) -> float:
        return sum(self.seconds.values())


def warm_up(alphabets: tuple[str, ...] = ALPHABETS, gpus: bool = True) -> WarmUp:
    """Compile (or load from numba's cache) the kernels a run calls, for each of `alphabets`
    ("dna", "protein"): the bundled example of that alphabet (papara_py/examples.py) aligned with
    the default preset on the CPU into a temporary folder, then the CPU kernel's 32-bit variant,
    which only reads too long for 16-bit lanes call, and the GPU engine's host-side functions (they
    declare their signatures, so importing engine/lane_tables.py and model/posterior.py compiles
    them: no GPU needed). The protein example is aligned a second time on its tree without branch
    lengths, whose run has no edge tables (DESIGN.md 3) and so a posterior step of its own, and
    each example once more with `--preset paper`, DNA's also with `--strand both --search guided`
    (`_other_modes`). Other lane counts (--lanes) still compile on first use, with the notice.
    With `gpus`, where pyopencl sees usable GPUs, the example is aligned on them too, so that
    their driver builds (and caches) the OpenCL kernels such a run uses, which halves a fresh GPU
    host's first run (docs/performance.md, "Start-up"). A GPU that fails is logged and skipped:
    the run that needs it builds its kernels. Progress goes to the "papara_py" logger."""
    from papara_py import examples

    unknown = [a for a in alphabets if a not in ALPHABETS]
    if unknown:
        raise ValueError(f"warm_up: no alphabet {unknown[0]!r}; there are {', '.join(ALPHABETS)}")
    seconds: dict[str, float] = {}
    logger.info(f"warm-up: compiling the kernels of a {' and a '.join(alphabets)} run for this CPU, or loading them "
                f"from numba's cache (up to ~{COMPILE_ESTIMATE_SECONDS} s each)")
    _warming.active += 1
    try:
        with tempfile.TemporaryDirectory(prefix="papara-py-warm-up-") as folder, watch_compiles(notice=False) as watch:
            from papara_py.engine import lane_tables  # noqa: F401  (compiles on import)
            gpu_count = _usable_gpus() if gpus else 0
            for alphabet in alphabets:
                name = "example" if alphabet == "dna" else "protein"
                examples.write(folder, (name,))
                started = time.perf_counter()
                _align_example(Path(folder) / name, Path(folder) / f"{name}.h5")
                if alphabet == "protein":
                    _align_example(Path(folder) / name, Path(folder) / f"{name}-no-lengths.h5",
                                   tree=_without_lengths(Path(folder) / name / "tree.nwk"))
                _other_modes(Path(folder) / name, Path(folder), alphabet)
                _wide_lanes(Path(folder) / name / "ref.phy")
                if gpu_count and not _on_gpus(Path(folder) / name, Path(folder) / f"{name}-gpu.h5"):
                    gpu_count = 0
                seconds[alphabet] = time.perf_counter() - started
                logger.info(f"warm-up: the {alphabet} kernels are ready ({seconds[alphabet]:.1f} s"
                            + (f", with the OpenCL kernels of {gpu_count} GPU(s))" if gpu_count else ")"))
    finally:
        _warming.active -= 1
    return WarmUp(seconds, watch.functions, gpu_count)


def _usable_gpus() -> int:
    """How many GPUs the GPU engine would use: 0 without pyopencl, and 0, logged, where OpenCL
    cannot list its devices (a broken installation is a missing GPU, as for a run: run/devices.py)."""
    from papara_py.engine.opencl_devices import discover_devices, opencl_installed

    try:
        return len(discover_devices("gpu")) if opencl_installed() else 0
    except Exception as error:  # noqa: BLE001 - whatever the loader or a driver raises
        logger.warning(f"warm-up: OpenCL could not list the devices ({type(error).__name__}: {error}); "
                       "no GPU kernels built")
        return 0


def _on_gpus(example: Path, output: Path) -> bool:
    """The example aligned with `--device gpu` (every usable GPU builds its kernels); False, logged,
    if that failed (a GPU held by another process, short of memory)."""
    from papara_py.errors import PaparaError

    try:
        _align_example(example, output, device="gpu")
    except PaparaError as error:
        logger.warning(f"warm-up: the GPUs' OpenCL kernels were not built ({error}); a GPU run builds them")
        return False
    return True


def _align_example(example: Path, output: Path, device: str = "cpu", tree: Path | None = None,
                   **options) -> None:
    """The example in `example` aligned as `papara-py -t tree.nwk -s ref.phy -r reads.fa --device
    DEVICE` would (on the CPU with one thread: the kernels are the same for any count), quietly,
    into `output`; with `tree` in place of the example's own, and `options` as further RunConfig
    fields (another preset, the guided search)."""
    from papara_py.run.config import RunConfig
    from papara_py.run.log import silenced
    from papara_py.run.runner import run

    with silenced():  # the run's own notices ("200 of 200 reads aligned"): not the warm-up's
        run(RunConfig(tree=str(tree or example / "tree.nwk"), alignment=str(example / "ref.phy"),
                      reads=str(example / "reads.fa"), output=str(output), device=device,
                      command_line="papara-py warm-up", **options))


def _other_modes(example: Path, folder: Path, alphabet: str) -> None:
    """The example aligned in the modes whose numba variants the default run does not call:
    `--preset paper` (Eq. 1 without near states, the Viterbi traceback) and, for DNA, `--strand
    both --search guided` (the reverse strand's and the guided search's functions)."""
    from papara_py.model.params import PenaltyChoice

    _align_example(example, folder / f"{alphabet}-paper.h5", params=PenaltyChoice("paper", ()))
    if alphabet == "dna":
        _align_example(example, folder / f"{alphabet}-guided.h5", strand="both", search="guided")


def _without_lengths(tree: Path) -> Path:
    """A copy of the Newick file `tree` without its branch lengths, beside it (dendropy writes
    it): a protein run on such a tree has no edge tables (DESIGN.md 3), so its posterior step is a
    numba variant of its own."""
    from papara_py.io.tree_input import read_tree

    bare = tree.with_name(f"{tree.stem}-no-lengths.nwk")
    bare.write_text(read_tree(tree).as_string(schema="newick", suppress_edge_lengths=True, suppress_rooting=True,
                                              unquoted_underscores=True))
    return bare


def _wide_lanes(alignment_path: Path) -> None:
    """The CPU kernel in 32-bit lanes for the alignment's alphabet and default preset, with the
    column profile costs a run of it uses (the example's reads all fit 16-bit lanes)."""
    import numpy as np

    from papara_py.engine.cpu import default_lane_width, score_block
    from papara_py.io.alignment_input import read_alignment
    from papara_py.model.column_costs import column_costs
    from papara_py.model.params import PenaltyChoice

    alignment = read_alignment(alignment_path)
    alphabet = alignment.alphabet
    params = PenaltyChoice(None, ()).resolve(alphabet.default_preset)
    costs = column_costs(alignment.rows, alphabet, params.column_weight)
    lanes = np.zeros((alignment.rows.shape[1], default_lane_width()), alphabet.dtype)
    read = alphabet.read_code[np.frombuffer(b"ACA", np.uint8)]
    score_block(lanes, read, np.array([0, read.size], np.int64), params, costs=costs,
                force_int32=True)
