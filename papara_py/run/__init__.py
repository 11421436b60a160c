"""The runner: the main job's configuration, its stages and their threads, the run record and
the run file's rows. It calls the model (papara_py.model.decode, once per scored batch) and the
engine; it composes neither.

- `config`: `RunConfig` (what the CLI and the API fill in) and `RunSummary` (each sample's outcome).
- `runner`: `run`, the main job as its stages, start to finish.
- `inputs`: stages 1, 2 and 4: the tree and alignment read, the reads-file policy (`ReadsFile`),
  the penalties resolved, the edge profiles, K and the strand decision's k-mers.
- `devices`: stage 3: who scores and who traces back (`choose_devices`).
- `stages`: stage 5: `ScoreTraceWrite` (the engine's batches traced back and written while later
  ones are scored) and `BatchStages` (the traceback and writer threads).
- `record`: stage 6: `Tally` and `run_record`, the /run attributes.
- `writers`: a stretch's and a batch's rows, a sample's run file committed.
- `samples`: several reads files in one run: their run file names (`--outdir`), and each
  sample's state on its way through the stages.
- `options`: the main job's options, one table for the command line and the Python API, and
  `run_config` (the checks before any work, then the RunConfig).
- `log`: the run's messages through `logging` (logger "papara_py"): `Reporter`, `RunLog`
  (`--log FILE`) and the command line's stderr handler (`messages_on_stderr`).
- `stop_signals`: Ctrl-C, SIGTERM and SIGHUP as exceptions in the main thread, raised only where
  raising one is safe (`stop_signals_raise`, the command line's; `interrupt_waits_for_libraries`,
  the API's: Python's own Ctrl-C handler made to wait out numba, no other handler touched).

Layer: imports every lower layer (`errors`, `phylo`, `io`, `model`, `engine`, `cluster`, `report`: its
`gcups_text` for the summary line).
"""
