"""Find the OpenCL devices papara-py can use, registering NVIDIA's driver when nobody did.

Containers and clusters often ship NVIDIA's OpenCL library (libnvidia-opencl.so.1) without the
ICD file that tells the OpenCL loader about it, so the GPU is invisible and only a CPU platform
(or none) shows up. The loader reads the environment variable OCL_ICD_VENDORS (a directory of
*.icd files, used *instead of* /etc/OpenCL/vendors) once, at the first platform enumeration of
the process. Discovery therefore writes an ICD directory in a per-user temporary folder (NVIDIA's
file plus copies of every already registered vendor, so those stay visible) and points
OCL_ICD_VENDORS at it *before* pyopencl enumerates anything. If something enumerated earlier,
it is too late for this process, and the notes say exactly what to export before starting again.
(OCL_ICD_FILENAMES naming NVIDIA's library was seen to have no effect on pyopencl's bundled
loader, so it does not count as a registration.)

A device that is listed may still be unable to compile papara-py's kernels: PyPI's PoCL
(`pocl-binary-distribution` 3.0, a release candidate built on LLVM 14, the `pocl` extra) does not
know CPUs newer than LLVM 14 (AMD Zen 4 and Zen 5, for two), names them 'generic' and then rejects
that name ("unknown target CPU 'generic'"). `check_device` compiles the kernels and runs a probe
kernel on a device; `describe_devices` (`papara-py devices`) and the tests use it, so either says
which device works, or exactly why none does and what to install.
"""

from __future__ import annotations

import ctypes.util
import logging
import os
import tempfile
import threading
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pyopencl is optional (the `gpu` extra): imported where a device is used
    import pyopencl

_log = logging.getLogger(__name__)  # the run's messages (run/log.py)

NVIDIA_OPENCL_LIBRARY = "libnvidia-opencl.so.1"

#: Where driver installs put the NVIDIA OpenCL library when the dynamic loader cannot find it.
_NVIDIA_LIBRARY_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/usr/lib64",
    "/usr/lib",
    "/usr/local/nvidia/lib64",
    "/usr/local/nvidia/lib",
    "/usr/lib/aarch64-linux-gnu",
    "/usr/lib/wsl/lib",
)
_SYSTEM_VENDOR_DIR = Path("/etc/OpenCL/vendors")

_KINDS = ("gpu", "cpu", "any")

#: True once this module has asked the loader for platforms: from then on OCL_ICD_VENDORS is fixed.
_loader_initialised = False

#: Held by `build_program` while its warning filter is in place (its docstring says why).
_BUILD_FILTER = threading.Lock()


class DeviceUnavailable(RuntimeError):
    """No usable OpenCL device of the requested kind; the message says why and what to do."""


@dataclass(frozen=True)
class DeviceInfo:
    """One OpenCL device as discovery saw it; `cl_device` is the pyopencl handle to build on."""

    platform: str
    name: str
    kind: str
    vendor: str
    compute_units: int
    global_mem_bytes: int
    max_alloc_bytes: int
    local_mem_bytes: int
    opencl_version: str
    driver_version: str
    nv_compute_capability: tuple[int, int] | None
    cl_device: object = field(compare=False, repr=False)

    @property
    def is_nvidia(self) -> bool:
        return "nvidia" in self.vendor.lower() or "nvidia" in self.platform.lower()

    def summary(self) -> str:
        """One line: kind, names, compute units and memory."""
        cc = f", sm_{self.nv_compute_capability[0]}{self.nv_compute_capability[1]}" if (
            self.nv_compute_capability) else ""
        return (f"{self.kind.upper():3s} {self.name.strip()} [{self.platform.strip()}] "
                f"{self.compute_units} compute units, {self.global_mem_bytes / 2**30:.1f} GiB global "
                f"(max buffer {self.max_alloc_bytes / 2**30:.1f} GiB), "
                f"{self.local_mem_bytes // 1024} KiB local, {self.opencl_version.strip()}{cc}")


def find_nvidia_library() -> str | None:
    """Name or path of libnvidia-opencl.so.1 if the system has it, else None."""
    if ctypes.util.find_library("nvidia-opencl"):
        return NVIDIA_OPENCL_LIBRARY
    for directory in _NVIDIA_LIBRARY_DIRS:
        candidate = Path(directory) / NVIDIA_OPENCL_LIBRARY
        if candidate.exists():
            return str(candidate)
    return None


def _vendor_files() -> list[Path]:
    """ICD files the loader will read with the current environment."""
    configured = os.environ.get("OCL_ICD_VENDORS")
    location = Path(configured) if configured else _SYSTEM_VENDOR_DIR
    if location.is_file():
        return [location]
    return sorted(location.glob("*.icd")) if location.is_dir() else []


def _mentions_nvidia(icd: Path) -> bool:
    try:
        return "nvidia" in icd.read_text(errors="replace").lower()
    except OSError:
        return False


def register_nvidia_icd() -> str | None:
    """Make NVIDIA's OpenCL visible to the loader when its library exists but no ICD names it.

    Returns a note describing what was done, or None when nothing was needed or possible. Must
    run before the first platform enumeration of the process to take effect.
    """
    library = find_nvidia_library()
    existing = _vendor_files()
    if library is None or any(_mentions_nvidia(icd) for icd in existing):
        return None
    directory = Path(tempfile.gettempdir()) / f"papara-py-icd-{os.getuid()}"
    directory.mkdir(mode=0o700, exist_ok=True)
    for icd in existing:  # keep the vendors already registered (PoCL, Intel, ...) visible
        _write_atomically(directory / icd.name, icd.read_text(errors="replace"))
    _write_atomically(directory / "papara-py-nvidia.icd", library + "\n")
    os.environ["OCL_ICD_VENDORS"] = str(directory)
    note = f"registered {library} with the OpenCL loader through OCL_ICD_VENDORS={directory}"
    if _loader_initialised:
        note += (f"; but this process had already enumerated OpenCL platforms, so it takes effect "
                 f"only in a new one: run `export OCL_ICD_VENDORS={directory}` and start again")
    return note


def _write_atomically(path: Path, text: str) -> None:
    """Several processes may register at once: each writes its own file and renames it in place."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(text)
    partial.replace(path)


def _kind_of(device_type: int) -> str:
    import pyopencl as cl

    if device_type & cl.device_type.GPU:
        return "gpu"
    if device_type & cl.device_type.CPU:
        return "cpu"
    if device_type & cl.device_type.ACCELERATOR:
        return "accelerator"
    return "other"


def _describe(platform, device) -> DeviceInfo:
    try:
        cc = (int(device.compute_capability_major_nv), int(device.compute_capability_minor_nv))
    except Exception:  # not an NVIDIA device: the cl_nv_device_attribute_query query fails
        cc = None
    return DeviceInfo(
        platform=platform.name, name=device.name, kind=_kind_of(device.type), vendor=device.vendor,
        compute_units=device.max_compute_units, global_mem_bytes=device.global_mem_size,
        max_alloc_bytes=device.max_mem_alloc_size, local_mem_bytes=device.local_mem_size,
        opencl_version=device.version, driver_version=device.driver_version,
        nv_compute_capability=cc, cl_device=device)


def _enumerate() -> tuple[list[DeviceInfo], list[str]]:
    """Every device of every platform, plus notes on registration and on platforms that failed."""
    global _loader_initialised
    notes = []
    if not opencl_installed():
        return [], [PYOPENCL_MISSING]
    registered = register_nvidia_icd()
    if registered:
        notes.append(registered)
    import pyopencl as cl

    try:
        platforms = cl.get_platforms()
    except (cl.Error, RuntimeError) as exc:
        platforms = []
        notes.append(f"no OpenCL platform found ({str(exc).strip()})")
    finally:
        _loader_initialised = True
    devices = []
    for platform in platforms:
        try:
            devices += [_describe(platform, device) for device in platform.get_devices()]
        except cl.Error as exc:
            notes.append(f"platform {platform.name.strip()!r} lists no usable device ({str(exc).strip()})")
    if find_nvidia_library() and not any(d.is_nvidia for d in devices):
        notes.append(f"{NVIDIA_OPENCL_LIBRARY} is installed but no NVIDIA device answered "
                     f"(OCL_ICD_VENDORS={os.environ.get('OCL_ICD_VENDORS', 'unset')}); "
                     f"check nvidia-smi, and that no other code enumerated OpenCL platforms first")
    return devices, notes


#: Why no OpenCL device is listed when pyopencl is missing (an optional dependency: the `gpu` extra).
PYOPENCL_MISSING = ("pyopencl is not installed, so papara-py sees no OpenCL device (the CPU engine needs none); "
                    "`pip install 'papara-py[gpu]'` adds it for a GPU's OpenCL driver")


def opencl_installed() -> bool:
    """Whether pyopencl can be imported (the `gpu` extra): the GPU engine's one Python dependency."""
    import importlib.util

    return importlib.util.find_spec("pyopencl") is not None


def _usable(devices: list[DeviceInfo], kind: str) -> list[DeviceInfo]:
    return [d for d in devices if kind == "any" or d.kind == kind]


def discover_devices(kind: str = "gpu", required: bool = False) -> list[DeviceInfo]:
    """OpenCL devices of `kind` ("gpu", "cpu" or "any"), in platform order.

    With `required`, an empty result raises DeviceUnavailable carrying what discovery saw and
    what to try, instead of returning [].
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    devices, notes = _enumerate()
    usable = _usable(devices, kind)
    if required and not usable:
        raise DeviceUnavailable(_nothing_usable(kind, devices, notes))
    return usable


def _nothing_usable(kind: str, devices: list[DeviceInfo], notes: list[str]) -> str:
    wanted = "OpenCL device" if kind == "any" else f"OpenCL {kind.upper()} device"
    seen = "; ".join(d.summary() for d in devices) or "no OpenCL device at all"
    hints = "".join(f" Note: {n}." for n in notes)
    return (f"No usable {wanted} (seen: {seen}).{hints} Install a GPU driver with OpenCL support, "
            f"or `pip install pocl-binary-distribution` for a CPU OpenCL device; papara-py's CPU "
            f"engine works without OpenCL.")


#: What the engine compiles (engine/gpu.py: band_score in its packed and its wide variant for each
#: alphabet, with and without near states, protein in packed lanes at its stripe height, and
#: protein with column profile costs; top_k), without
#: NVIDIA's inline PTX, which only sm_90 GPUs get. A test holds these equal to what GpuScorer builds.
_DNA, _PROTEIN = ("-DPROF_BITS=8", "-DSTATE_BITS=4"), ("-DPROF_BITS=32", "-DSTATE_BITS=20")
CHECK_BUILDS = (("band_score.cl", ("-DROWS=32", "-DPACKED=1", "-DUSE_PTX=0", *_DNA, "-DNEAR=0")),
                ("band_score.cl", ("-DROWS=32", "-DPACKED=0", "-DUSE_PTX=0", *_DNA, "-DNEAR=0")),
                ("band_score.cl", ("-DROWS=32", "-DPACKED=1", "-DUSE_PTX=0", *_DNA, "-DNEAR=1")),
                ("band_score.cl", ("-DROWS=32", "-DPACKED=0", "-DUSE_PTX=0", *_DNA, "-DNEAR=1")),
                *(("band_score.cl", ("-DROWS=32", "-DPACKED=1", "-DUSE_PTX=0", *_DNA, f"-DNEAR={near}", "-DLOOKUP=1"))
                  for near in (0, 1)),
                ("band_score.cl", ("-DROWS=13", "-DPACKED=1", "-DUSE_PTX=0", *_PROTEIN, "-DNEAR=0")),
                ("band_score.cl", ("-DROWS=32", "-DPACKED=0", "-DUSE_PTX=0", *_PROTEIN, "-DNEAR=0")),
                ("band_score.cl", ("-DROWS=13", "-DPACKED=1", "-DUSE_PTX=0", *_PROTEIN, "-DNEAR=1")),
                ("band_score.cl", ("-DROWS=32", "-DPACKED=0", "-DUSE_PTX=0", *_PROTEIN, "-DNEAR=1")),
                *(("band_score.cl", ("-DROWS=16", f"-DPACKED={packed}", "-DUSE_PTX=0", *_PROTEIN,
                                     f"-DNEAR={near}", "-DCOLUMN_COSTS=1")) for packed in (1, 0) for near in (0, 1)),
                *(("band_score.cl", ("-DROWS=13", "-DPACKED=1", "-DUSE_PTX=0", *_PROTEIN, f"-DNEAR={near}",
                                     "-DLOOKUP=1")) for near in (0, 1)),
                *(("band_score.cl", ("-DROWS=16", "-DPACKED=1", "-DUSE_PTX=0", *_PROTEIN, f"-DNEAR={near}",
                                     "-DCOLUMN_COSTS=1", "-DLOOKUP=1")) for near in (0, 1)),
                ("top_k.cl", ("-DKMAX=8",)))

#: A kernel any OpenCL C compiler builds; it is also run, since some drivers compile for the
#: device only when a kernel is first enqueued.
PROBE_KERNEL = "__kernel void probe(__global int *out) { out[get_global_id(0)] = get_global_id(0) + 1; }"

#: What to install when no device can run the kernels: a CPU OpenCL whose LLVM knows the CPU.
INSTALL_ADVICE = (
    "For a CPU OpenCL device that builds papara-py's kernels, install a PoCL built on a newer LLVM "
    "beside (or instead of) PyPI's: on Debian 12 or newer, or an Ubuntu of similar age, `sudo "
    "apt-get install pocl-opencl-icd` (Debian 12: PoCL 3.1 on LLVM 15, which targets the CPU by its "
    "features; pyopencl's loader then lists both, and the kernel tests run on the one that builds); "
    "with conda, `conda install -c conda-forge pocl`. For a GPU: its vendor's driver with OpenCL "
    "(NVIDIA: the driver's libnvidia-opencl). papara-py's CPU engine (numba) aligns without any "
    "OpenCL device.")


@dataclass(frozen=True)
class DeviceCheck:
    """Whether a device compiled papara-py's kernels and ran the probe; `problem` says why not."""

    device: DeviceInfo
    problem: str | None

    @property
    def works(self) -> bool:
        return self.problem is None


def platform_version(device: DeviceInfo) -> str:
    """The device's platform version string (PoCL's names its release and its LLVM)."""
    try:
        return " ".join(device.cl_device.platform.version.split())
    except Exception:  # a stand-in device in tests, or a driver that cannot answer
        return ""


def _compiler_answer(error: Exception) -> str:
    """The informative part of an OpenCL error: the build log (what follows pyopencl's "Build on
    <device>:" line, without its "(options: ...)" trailer) or else the error's last line."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    log_start = next((i + 1 for i, line in enumerate(lines) if line.startswith("Build on ")), None)
    log = [line for line in lines[log_start:] if not line.startswith("(options:")] if log_start else []
    picked = [line for line in log if "error" in line.lower()] or log or lines[-1:] or [type(error).__name__]
    text = " / ".join(picked[:3])
    return text if len(text) <= 400 else text[:397] + "..."


def _checked(kernels: bool) -> str:
    """What a check with `kernels` builds and runs, in the words every answer of it uses."""
    return "papara-py's kernels" if kernels else "a test kernel"


def build_program(context: pyopencl.Context, device: pyopencl.Device, source: str,
                  options: tuple[str, ...] = ()) -> pyopencl.Program:
    """`source` (OpenCL C) built for `device` with `options`: a `pyopencl.Program`.

    A driver may print messages on a build that succeeds (warnings, register use); pyopencl then
    issues a CompilerWarning ("Non-empty compiler output encountered"), which would reach the
    user's terminal on a run that is fine. Here the compiler's log goes to the log instead (DEBUG,
    with `--log`), and a failed build still raises with the log in its message. The warning filter
    holds only during the build, and one build at a time holds it: `warnings.catch_warnings`
    saves and restores the process's one filter list, so two threads' overlapping builds (a
    run's GPU feeders, its posterior decoder) restored each other's filters, and a build then
    warned on the terminal (seen on the H200) or left a filter behind. Builds on several threads
    therefore take turns; a CompilerWarning from outside build_program during one is not shown."""
    import pyopencl as cl

    with _BUILD_FILTER, warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        program = cl.Program(context, source).build(options=list(options), devices=[device])
    log = program.get_build_info(device, cl.program_build_info.LOG).strip()
    if log:
        _log.debug("OpenCL compiler messages for %s (%s): %s", device.name.strip(), " ".join(options) or "no options",
                   log)
    return program


def check_device(device: DeviceInfo, kernels: bool = True) -> DeviceCheck:
    """Run PROBE_KERNEL on `device`, after compiling papara-py's kernels (CHECK_BUILDS) with
    `kernels`. Their first build on a machine is the slow part (about 30 s on an H200 for the 20
    variants; the driver caches them afterwards), which `papara-py devices` leaves to `--check`."""
    if not opencl_installed():
        return DeviceCheck(device, PYOPENCL_MISSING)
    import numpy as np
    import pyopencl as cl

    from papara_py import kernels as sources

    try:
        context = cl.Context([device.cl_device])
        for source, options in CHECK_BUILDS if kernels else ():
            build_program(context, device.cl_device, sources.source(source), options)
        queue = cl.CommandQueue(context, device.cl_device)
        out = np.zeros(4, np.int32)
        buffer = cl.Buffer(context, cl.mem_flags.WRITE_ONLY, out.nbytes)
        build_program(context, device.cl_device, PROBE_KERNEL).probe(queue, (4,), None, buffer)
        cl.enqueue_copy(queue, out, buffer)
        queue.finish()
        if out.tolist() != [1, 2, 3, 4]:
            return DeviceCheck(device, f"the probe kernel ran but returned {out.tolist()}, not [1, 2, 3, 4]")
    except Exception as error:  # cl.Error, RuntimeError from the compiler, a lost device, ...
        return DeviceCheck(device, f"cannot build {_checked(kernels)}: {_compiler_answer(error)}")
    return DeviceCheck(device, None)


#: PyPI's PoCL (pocl-binary-distribution 3.0) identifies itself by this release and LLVM.
_PYPI_POCL = ("pocl 3.0", "llvm 14")


def why_not(check: DeviceCheck) -> str:
    """One sentence on why a device fails and, for PyPI's PoCL, the known cause."""
    d = check.device
    version = platform_version(d)
    text = f"{d.kind.upper()} {d.name.strip()} [{d.platform.strip()}, {version or 'version unknown'}]: {check.problem}"
    if all(mark in version.lower() for mark in _PYPI_POCL):
        if "unknown target cpu" in (check.problem or "").lower():
            text += (" (the known limit of PyPI's PoCL, pocl-binary-distribution 3.0, a release candidate "
                     "built on LLVM 14: it does not know CPUs newer than LLVM 14 does, such as AMD Zen 4 "
                     "and Zen 5, names them 'generic' and its compiler then rejects that target)")
        else:
            text += (" (this is PyPI's PoCL, pocl-binary-distribution 3.0 on LLVM 14; on CPUs newer than "
                     "LLVM 14 knows, such as AMD Zen 4 and Zen 5, it fails with \"unknown target CPU "
                     "'generic'\")")
    return text


def diagnose(devices: list[DeviceInfo] | None = None, kernels: bool = True) -> tuple[list[DeviceCheck], str | None]:
    """Check every device (all of them when `devices` is None; `check_device`'s `kernels`). Returns
    the checks and, when no device works, one paragraph saying what each answered and what to
    install."""
    notes: list[str] = []
    if devices is None and not opencl_installed():
        return [], f"{PYOPENCL_MISSING[0].upper()}{PYOPENCL_MISSING[1:]}."
    if devices is None:
        devices, notes = _enumerate()
    checks = [check_device(d, kernels) for d in devices]
    if any(c.works for c in checks):
        return checks, None
    if not checks:
        seen = ("No OpenCL device at all: pyopencl's loader found no platform"
                + "".join(f"; {n}" for n in notes)
                + ". `pip install pocl-binary-distribution` (the `pocl` extra) brings PoCL for the CPUs "
                  "its LLVM 14 knows (up to AMD Zen 3 and Intel's of 2021).")
    else:
        seen = f"No OpenCL device can run {_checked(kernels)}. " + "; ".join(why_not(c) for c in checks) + "."
    return checks, f"{seen} {INSTALL_ADVICE}"


def describe_devices(kernels: bool = False) -> str:
    """Human-readable report for `papara-py devices`: every platform/device, whether it runs an
    OpenCL kernel (with `kernels`, `devices --check`: whether it builds every variant of papara-py's
    kernels too), why not, and which the GPU engine would use."""
    if not opencl_installed():
        return f"OpenCL devices: none seen. {PYOPENCL_MISSING[0].upper()}{PYOPENCL_MISSING[1:]}.\n" \
               "Alignment will run on the CPU engine only."
    devices, notes = _enumerate()
    gpus = _usable(devices, "gpu")
    checks, problem = diagnose(devices, kernels)
    lines = ["OpenCL devices:"]
    if not devices:
        lines.append("  (none)")
    for check in checks:
        d = check.device
        version = platform_version(d)
        lines.append(f"  {d.summary()}; driver {d.driver_version.strip()}"
                     + (f"; platform {version}" if version else ""))
        # by identity: two GPUs of one model describe themselves alike (equal records), and
        # list.index would number both 0
        number = next((i for i, gpu in enumerate(gpus) if gpu is d), None)
        if check.works:
            lines.append(f"    builds and runs {_checked(kernels)}; "
                         + (f"GPU {number} of the GPU engine (--gpus {number})" if number is not None
                            else "not used (papara-py's CPU engine covers CPUs)"))
        else:
            lines.append(f"    {check.problem}; not used")
    lines += [f"Note: {n}" for n in notes]
    if not any(c.works and c.device in gpus for c in checks):
        lines.append("No OpenCL GPU is usable: alignment will run on the CPU engine only.")
    if devices and not kernels:
        lines.append("`papara-py devices --check` also builds every variant of papara-py's kernels on each device "
                     "(the first time on a machine: about 30 s on an H200).")
    if problem:
        lines.append(problem)
    return "\n".join(lines)
