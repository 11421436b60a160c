"""Time the posterior step's kernels (kernels/posterior.cl) on one OpenCL device.

    python3 scripts/bench_posterior.py DATA_DIR [--reads 12500] [--length 100] [--candidates 5]
        [--edges 64] [--memory-share 3] [--device gpu] [--repeat 2]

DATA_DIR holds tree.nwk and ref.phy or ref.fasta. Reads of --length residues are simulated from
random reference rows (measure_posterior.simulate: 10% substitutions, 2% indels; seed 1), each
with --candidates edges drawn from --edges random edges (the weights then fall mostly on one
edge, as on real reads). One batch of --reads reads (the runner's default batch is 12,500) is
decoded by engine/gpu_posterior.GpuPosterior with launches of at most 1/--memory-share of the
device's memory; per repeat it prints the wall time, each kernel's device time (OpenCL profiling
events), the launches and the (read, candidate) cells. docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyopencl as cl

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure_posterior import simulate  # noqa: E402

import papara_py.engine.gpu_posterior as gpu_posterior  # noqa: E402
from papara_py.engine.opencl_devices import discover_devices  # noqa: E402
from papara_py.io.alignment_input import match_tips, read_alignment  # noqa: E402
from papara_py.io.tree_input import read_tree  # noqa: E402
from papara_py.model.column_costs import column_costs  # noqa: E402
from papara_py.model.decode import posterior_tables  # noqa: E402
from papara_py.model.params import ScoringParams  # noqa: E402
from papara_py.model.reference_scorer import profile_near  # noqa: E402
from papara_py.phylo.profiles import ProfileBuilder  # noqa: E402
from papara_py.phylo.tree import EdgeTree  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("data", type=Path)
    parser.add_argument("--reads", type=int, default=12_500)
    parser.add_argument("--length", type=int, default=100)
    parser.add_argument("--candidates", type=int, default=5)
    parser.add_argument("--edges", type=int, default=64)
    parser.add_argument("--memory-share", type=int, default=gpu_posterior.MEMORY_SHARE)
    parser.add_argument("--device", default="gpu", choices=("gpu", "cpu", "any"))
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    reference = args.data / "ref.phy" if (args.data / "ref.phy").exists() else args.data / "ref.fasta"
    alignment = read_alignment(reference)
    tree = EdgeTree.from_dendropy(read_tree(args.data / "tree.nwk"))
    tip_rows = np.ascontiguousarray(match_tips(tree.tip_names, alignment, str(reference)).tip_rows)
    params = ScoringParams.preset(alignment.alphabet.default_preset)
    costs = column_costs(tip_rows, alignment.alphabet, params.column_weight)
    rng = np.random.default_rng(1)
    distinct = simulate(tip_rows, alignment.alphabet, args.length, min(args.reads, 2000), rng)
    reads = [distinct[i % len(distinct)] for i in range(args.reads)]
    codes = np.concatenate(reads)
    offsets = np.concatenate(([0], np.cumsum([r.size for r in reads]))).astype(np.int64)
    edges = rng.choice(tree.n_edges, size=min(args.edges, tree.n_edges), replace=False)
    profiles = ProfileBuilder(tree, tip_rows, alignment.alphabet).profiles(edges)
    near = profile_near(profiles)
    slots = np.stack([rng.permutation(edges.size)[:args.candidates] for _ in range(args.reads)])
    tables = posterior_tables(params)
    m = profiles.shape[1]
    cells = sum(r.size * m for r in reads) * slots.shape[1]  # every column of each row (DESIGN 5)

    device = discover_devices(args.device, required=True)[0]
    decoder = gpu_posterior.GpuPosterior(device, device.global_mem_bytes // args.memory_share)
    decoder.queue = cl.CommandQueue(decoder.context, device.cl_device,
                                    properties=cl.command_queue_properties.PROFILING_ENABLE)
    events: list[tuple[str, cl.Event]] = []
    enqueue = cl.enqueue_nd_range_kernel

    def recorded(queue, kernel, *rest, **options):
        event = enqueue(queue, kernel, *rest, **options)
        events.append((kernel.function_name, event))
        return event

    gpu_posterior.cl.enqueue_nd_range_kernel = recorded
    print(f"{device.summary()}\n{args.reads} reads of {args.length} against {m} columns, {slots.shape[1]} candidates "
          f"each, preset {params.preset_name()}, launches within 1/{args.memory_share} of the device's memory")
    arguments = (codes, offsets, slots, None, profiles, near, params.as_array(), costs, tables)
    decoder.decode_batch(*arguments)  # builds the program
    for _ in range(args.repeat):
        events.clear()
        started = time.perf_counter()
        decoder.decode_batch(*arguments)
        wall = time.perf_counter() - started
        kernels: dict[str, float] = {}
        for name, event in events:
            kernels[name] = kernels.get(name, 0.0) + (event.profile.end - event.profile.start) * 1e-9
        print(f"wall {wall:.3f} s; " + ", ".join(f"{name} {seconds:.3f} s" for name, seconds in kernels.items())
              + f"; {sum(1 for name, _ in events if name == 'posterior_mea')} launch(es); {cells:.3g} cells")


if __name__ == "__main__":
    main()
