"""The cold start (issue 55): numba's kernels compiled ahead (`papara-py warm-up`,
run/warmup.warm_up), a notice when a run must compile them, fewer specialisations compiled,
and commands that do not align importing neither numba nor the other heavy libraries."""

from __future__ import annotations

import json
import logging
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "example"
HEAVY = ("numba", "h5py", "pyopencl", "matplotlib", "dendropy", "Bio.Phylo", "papara_py.run.runner")


def _loaded_after(argv: list[str], cwd: Path = ROOT) -> tuple[int, set[str]]:
    """(exit status, the HEAVY modules imported) of papara-py's `main(argv)` in a fresh interpreter."""
    script = textwrap.dedent(f"""
        import contextlib, io, json, sys
        from papara_py.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                status = main({argv!r})
            except SystemExit as stop:
                status = stop.code
        print(json.dumps([status, sorted(m for m in {HEAVY!r} if m in sys.modules)]))
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=cwd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    status, loaded = json.loads(done.stdout.strip().splitlines()[-1])
    return status, set(loaded)


@pytest.mark.slow
@pytest.mark.parametrize("argv", [["--help"], ["export", "--help"], ["merge", "--help"], ["report", "--help"],
                                  ["devices", "--help"], ["prepare", "--help"], ["warm-up", "--help"],
                                  ["example", "--help"], ["--version"]])
def test_help_imports_nothing_heavy(argv):
    """--help of every command answers before numba, h5py, pyopencl, matplotlib or the pipeline
    are imported (each costs a quarter to half a second of a cold start)."""
    status, loaded = _loaded_after(argv)
    allowed = {"h5py"} if argv[0] in ("export", "merge", "report") else set()  # they read run files: 0.1 s
    assert status == 0 and loaded <= allowed, loaded


@pytest.mark.slow
def test_export_and_report_load_only_what_they_use(tmp_path):
    """Exporting FASTA reads the run file (h5py) and nothing of the aligner: no numba (the string
    checksums of a small file take zlib), no dendropy (only the EPA pair and jplace need the
    tree), no matplotlib."""
    from papara_py.api import align

    align(*(str(EXAMPLE / n) for n in ("tree.nwk", "ref.phy", "reads.fa")), output=tmp_path / "run.h5",
          device="cpu", threads=1)
    status, loaded = _loaded_after(["export", str(tmp_path / "run.h5"), "--format", "fasta", "-o",
                                    str(tmp_path / "run.fasta")])
    assert status == 0 and loaded == {"h5py"}, loaded
    assert (tmp_path / "run.fasta").read_text().count(">") == 230
    status, loaded = _loaded_after(["merge", str(tmp_path / "run.h5"), "-o", str(tmp_path / "merged.h5")])
    assert status == 2 and "numba" not in loaded and "matplotlib" not in loaded  # not a shard: refused


@pytest.mark.slow
def test_short_reads_compile_only_the_int16_kernel():
    """score_block calls the CPU kernel once per lane width its reads need: a batch of short reads
    loads (or compiles) only the int16 variant, not also the int32 one (a fresh interpreter, where
    numba's dispatcher lists what this process compiled or loaded)."""
    script = textwrap.dedent("""
        import json
        import numpy as np
        from papara_py.engine import cpu
        from papara_py.model.params import ScoringParams
        lanes = np.full((40, 16), 0b1111, np.uint8)
        codes = np.frombuffer(b"ACGTACGT", np.uint8).copy()
        from papara_py.phylo.encoding import DNA
        codes = DNA.read_code[codes]
        cpu.score_block(lanes, codes, np.array([0, 4, 8], np.int64), ScoringParams())
        print(json.dumps([str(sig[6].dtype) for sig in cpu._score_reads.signatures]))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == ["int16"]


def test_a_compile_is_announced_once(caplog):
    """`watch_compiles` logs one notice ("compiling kernels for this CPU, once, up to ~N s") at the first
    compilation of a papara-py function, however many follow, and at the end how long they took;
    functions of other packages, and functions numba already has, say nothing."""
    import numba

    from papara_py.engine.compile_watch import COMPILE_ESTIMATE_SECONDS, watch_compiles

    namespace: dict = {"__name__": "papara_py.engine.test_stub"}
    exec("def double(x):\n    return 2 * x\n\ndef triple(x):\n    return 3 * x\n", namespace)
    double, triple = numba.njit(namespace["double"]), numba.njit(namespace["triple"])
    foreign = numba.njit(lambda x: x + 1)
    caplog.set_level(logging.INFO, logger="papara_py")
    with watch_compiles() as watch:
        foreign(1)
        assert not caplog.records
        double(2), triple(3), double(2.5)
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0] == (f"compiling kernels for this CPU, once, up to ~{COMPILE_ESTIMATE_SECONDS} s "
                           "(later runs load them from numba's cache; `papara-py warm-up` compiles them ahead)")
    assert len(messages) == 2 and messages[1].startswith("compiled 3 kernel(s) in ")
    assert watch.functions == 3 and watch.seconds > 0
    caplog.clear()
    with watch_compiles() as watch:
        double(4), triple(5)
    assert not caplog.records and watch.functions == 0


@pytest.mark.slow
def test_warm_up_aligns_both_examples_and_the_wide_lanes(caplog):
    """warm_up runs what a DNA and a protein run call (the bundled examples, then the 32-bit CPU
    kernel); afterwards both variants of the kernel are in this process's dispatcher."""
    from papara_py.engine import cpu
    from papara_py.run.warmup import warm_up

    caplog.set_level(logging.INFO, logger="papara_py")
    done = warm_up()
    assert set(done.seconds) == {"dna", "protein"} and done.total > 0
    assert {(str(sig[0].dtype), str(sig[6].dtype)) for sig in cpu._score_reads.signatures} >= {
        ("uint8", "int16"), ("uint8", "int32"), ("uint32", "int16"), ("uint32", "int32")}
    messages = [r.getMessage() for r in caplog.records]
    assert messages[0].startswith("warm-up: compiling the kernels of a dna and a protein run")
    assert not any(m.startswith("compiling kernels for this CPU") for m in messages)  # not the runs' own
    with pytest.raises(ValueError, match="no alphabet 'rna'"):
        warm_up(("rna",))


@pytest.mark.slow
def test_after_the_warm_up_other_modes_compile_nothing(tmp_path):
    """A fresh cache warmed by `warm_up`, then, in a fresh interpreter, each example aligned with
    --preset paper and the DNA example with --strand both --search guided: nothing compiles (the
    Viterbi traceback, Eq. 1 without near states and the guided search are variants of their own)."""
    import os

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    warm = subprocess.run([sys.executable, "-c", "from papara_py.run.warmup import warm_up; warm_up(gpus=False)"],
                          capture_output=True, text=True, timeout=1200, env=env)
    assert warm.returncode == 0, warm.stderr
    runs = textwrap.dedent(f"""
        import papara_py
        from papara_py.engine.compile_watch import watch_compiles

        def files(folder):
            return [{str(ROOT / "data")!r} + f"/{{folder}}/{{name}}" for name in ("tree.nwk", "ref.phy", "reads.fa")]

        counts = []
        for folder, options in (("example", dict(preset="paper")), ("protein", dict(preset="paper")),
                                ("example", dict(strand="both", search="guided"))):
            with watch_compiles(notice=False) as watch:
                papara_py.align(*files(folder), device="cpu", threads=1, **options)
            counts.append(watch.functions)
        print(counts)
    """)
    done = subprocess.run([sys.executable, "-c", runs], capture_output=True, text=True, timeout=1200, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[-2] == "[0, 0, 0]", done.stdout


@pytest.mark.slow
def test_warm_up_command(tmp_path):
    done = subprocess.run([sys.executable, "-m", "papara_py", "warm-up"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("papara-py: warm-up: compiling the kernels of a dna and a protein run")
    assert lines[-1].startswith("papara-py: kernels ready for this CPU in ")
    # its runs say nothing of themselves, their modules' notices included (the protein example's
    # tree without lengths: "every edge uses the shared column emission")
    assert all(line.startswith(("papara-py: warm-up: ", "papara-py: kernels ready")) for line in lines), lines
    assert not list(tmp_path.iterdir())  # its runs went to a temporary folder, removed


def test_quiet_silences_the_notices(capsys):
    from papara_py.run.log import messages_on_stderr

    logger = logging.getLogger("papara_py")
    handlers, level = list(logger.handlers), logger.level
    with messages_on_stderr(quiet=True):
        logger.info("compiling kernels for this CPU")
    with messages_on_stderr():
        logger.info("a notice")
        logger.debug("a detail")
    assert capsys.readouterr().err == "papara-py: a notice\n"
    assert logger.handlers == handlers and logger.level == level  # the block leaves logging as it was


@pytest.mark.slow
def test_after_the_warm_up_a_gpu_run_compiles_nothing(opencl_device, tmp_path):
    """The warm-up (and so the wheel's build, setup.py) runs on the CPU, yet a first GPU run then
    compiles none of numba's functions: the GPU engine's host-side ones compile on import
    (engine/lane_tables.py, model/posterior.batch_weights). Both in fresh interpreters on an empty
    cache, the OpenCL device standing in for a GPU."""
    import os

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    warm = subprocess.run([sys.executable, "-c", "from papara_py.run.warmup import warm_up; warm_up(('dna',))"],
                          capture_output=True, text=True, timeout=1200, env=env)
    assert warm.returncode == 0, warm.stderr
    gpu_run = textwrap.dedent(f"""
        import sys
        import papara_py
        from papara_py.engine import opencl_devices
        from papara_py.engine.compile_watch import watch_compiles

        device = next(d for d in opencl_devices.discover_devices("any") if d.name == {opencl_device.name!r})
        opencl_devices.discover_devices = lambda kind="gpu", required=False: [device]
        with watch_compiles(notice=False) as watch:
            papara_py.align(*sys.argv[1:4], output=sys.argv[4], device="gpu")
        print(watch.functions)
    """)
    inputs = [str(EXAMPLE / name) for name in ("tree.nwk", "ref.phy", "reads.fa")]
    done = subprocess.run([sys.executable, "-c", gpu_run, *inputs, str(tmp_path / "gpu.h5")], capture_output=True,
                          text=True, timeout=1200, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "0", done.stdout


@pytest.mark.slow
def test_warm_up_builds_the_gpu_kernels_where_there_are_gpus(opencl_device, monkeypatch):
    """With a usable GPU (the OpenCL test device standing in) the warm-up aligns the example on it
    too, so the GPU engine builds its programs (its driver caches them); with `gpus=False` (the
    wheel's build, setup.py) or no GPU it builds none."""
    from papara_py.engine import gpu, opencl_devices
    from papara_py.run.warmup import warm_up

    asked = []
    built = gpu.built_program
    monkeypatch.setattr(gpu, "built_program", lambda *args: asked.append(args[3]) or built(*args))
    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu", required=False: [opencl_device])
    assert warm_up(("dna",), gpus=False).gpus == 0 and asked == []
    assert warm_up(("dna",)).gpus == 1 and asked
    monkeypatch.setattr(opencl_devices, "discover_devices", lambda kind="gpu", required=False: [])
    asked.clear()
    assert warm_up(("dna",)).gpus == 0 and asked == []


def test_warm_up_survives_an_opencl_that_cannot_list_its_devices(monkeypatch, caplog):
    """A broken OpenCL installation (an ICD whose library fails to load) is a missing GPU for the
    warm-up as for a run: the CPU kernels are compiled, the failure logged, nothing raised."""
    from papara_py.engine import opencl_devices
    from papara_py.run.warmup import warm_up

    def broken(kind="gpu", required=False):
        raise RuntimeError("clGetPlatformIDs failed: PLATFORM_NOT_FOUND_KHR")

    monkeypatch.setattr(opencl_devices, "opencl_installed", lambda: True)
    monkeypatch.setattr(opencl_devices, "discover_devices", broken)
    with caplog.at_level("WARNING", logger="papara_py"):
        done = warm_up(("dna",))
    assert done.gpus == 0 and done.seconds["dna"] > 0
    assert any("could not list the devices" in r.getMessage() and "PLATFORM_NOT_FOUND" in r.getMessage()
               for r in caplog.records)


@pytest.mark.slow
def test_after_the_warm_up_a_protein_run_on_a_tree_without_lengths_compiles_nothing(tmp_path):
    """Such a run has no edge tables (DESIGN.md 3), so its posterior step is a numba variant of
    its own; the warm-up compiles it too. In fresh interpreters on an empty cache."""
    import os

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba-cache")}
    warm = subprocess.run([sys.executable, "-c", "from papara_py.run.warmup import warm_up; "
                           "warm_up(('protein',), gpus=False)"], capture_output=True, text=True, timeout=1200, env=env)
    assert warm.returncode == 0, warm.stderr
    from papara_py.run.warmup import _without_lengths

    example = ROOT / "data" / "protein"
    shutil.copy(example / "tree.nwk", tmp_path / "tree.nwk")
    bare = _without_lengths(tmp_path / "tree.nwk")
    assert ":" not in bare.read_text()
    run = textwrap.dedent("""
        import sys
        import papara_py
        from papara_py.engine.compile_watch import watch_compiles

        with watch_compiles(notice=False) as watch:
            papara_py.align(*sys.argv[1:4], output=sys.argv[4], device="cpu")
        print(watch.functions)
    """)
    inputs = [str(bare), str(example / "ref.phy"), str(example / "reads.fa")]
    done = subprocess.run([sys.executable, "-c", run, *inputs, str(tmp_path / "run.h5")], capture_output=True,
                          text=True, timeout=1200, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[-1] == "0", done.stdout
