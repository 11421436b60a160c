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
"""

from __future__ import annotations

import ctypes.util
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

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


def describe_devices() -> str:
    """Human-readable report for `papara-py devices`: every platform/device and which are used."""
    devices, notes = _enumerate()
    gpus = _usable(devices, "gpu")
    lines = ["OpenCL devices:"]
    if not devices:
        lines.append("  (none)")
    for d in devices:
        used = "used by the GPU engine" if d in gpus else "not used (papara-py's CPU engine covers CPUs)"
        lines.append(f"  {d.summary()}; driver {d.driver_version.strip()}; {used}")
    lines += [f"Note: {n}" for n in notes]
    if not gpus:
        lines.append("No OpenCL GPU is usable: alignment will run on the CPU engine only.")
    return "\n".join(lines)
