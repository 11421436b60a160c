"""The scoring engine: every read against every edge, on CPU workers and OpenCL GPUs at once.

- `layout`: blocks of W edges in the inter-reference structure-of-arrays layout.
- `queue`: the shared work queue and how a batch is divided between GPUs and CPU workers.
- `scheduler`: `Engine`, which runs the master thread, the CPU workers and the GPU feeders.
- `read_batch`: `ReadBatch`, the reads the engine scores as one batch (with `EdgeGroups`, a
  grouped batch's groups); `engine_options`: `EngineOptions`, the engine's scheduling knobs.
- `guided`: `GuidedSearch` (`--search guided`), rounds of the engine over edge subsets that find
  each read's best edges from a fraction of the edges.
- `consumers`: the CPU and GPU scorers as the scheduler sees them.
- `limits`: the bounds and defaults the options state (`MAX_LANES`, `INITIAL_CLUSTERS`), importing nothing.
- `candidates`: `Candidates`, each read's K best (score, edge) pairs, merged deterministically.
- `strand`: the read orientation of `--strand auto|both|forward` (which orientations a batch is
  scored in, and the better one kept).
- `cpu`: the numba lane-parallel kernel; `gpu`: the scoring kernels' OpenCL host side;
  `gpu_plan`: a GPU launch planned on the host (reads into kernel batches; no OpenCL);
  `band_inputs`: what band_score.cl is built with and reads, laid out on the host (no OpenCL);
  `gpu_posterior`: the posterior step (DESIGN 5) on an OpenCL device, equal to model.posterior's;
  `tracer`: a run's batches over its GPUs' posterior steps, failing over to the CPU;
  `opencl_devices`: discovery and probing of OpenCL devices.

Layer: imports `papara_py.errors`, `papara_py.phylo`, `papara_py.io` and `papara_py.model`.
"""
