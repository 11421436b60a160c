"""The engine's bounds and defaults that the options state (papara_py/run/options.py), in a module
that imports nothing, so that `papara-py --help` and the Python API's option checks do not load
numba or the engine itself."""

#: Most lanes (edges per block) a run may ask for (--lanes, PAPARA_LANES). Each CPU worker keeps
#: (MAX_STRIP + 5) x W x 6 bytes of DP buffers on its thread's stack (int16 and int32 frames): at
#: W = 680 that passed the usual 8 MiB and crashed, at 1000 numba refused to compile. 256 lanes
#: take 3.2 MB; the native widths are 8 to 32 (engine/cpu.py).
MAX_LANES = 256

#: Clusters each read is scored in after the centres (`--guided-clusters`, engine/guided.py):
#: notebook/BENCHMARKS.md, "Guided search", measures agreement and cells against it.
INITIAL_CLUSTERS = 16
