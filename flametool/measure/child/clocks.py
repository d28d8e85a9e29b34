"""Device clocks in the child: CUDA events from whichever library the case imported (cupy's or torch's), which
time a loop on the device, and the device a process's cases ran on, as that library names it."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any, Callable

from ...workload.cases import cuda_index
from ...run.record import DeviceInfo


@dataclass
class Events:
    """CUDA events from whichever library the case imported: both record on the current stream."""

    make: Callable[[], Any]
    elapsed_ms: Callable[[Any, Any], float]
    device_info: Callable[[], DeviceInfo]

    def pair(self) -> tuple[Any, Any]:
        return self.make(), self.make()



def device_events(device: str) -> Events | None:
    index = cuda_index(device)
    if index is None:
        return None
    cupy = sys.modules.get("cupy")
    if cupy is not None:
        def cupy_info() -> DeviceInfo:
            rt = cupy.cuda.runtime
            props = rt.getDeviceProperties(index)
            return DeviceInfo(
                device_name=props["name"].decode() if isinstance(props["name"], bytes) else props["name"],
                device_index=index,
                pci_bus_id=rt.deviceGetPCIBusId(index) if hasattr(rt, "deviceGetPCIBusId") else None,
                cuda_runtime=_cuda_version(rt.runtimeGetVersion()),
                cuda_driver_api=_cuda_version(rt.driverGetVersion()),
            )

        return Events(
            make=cupy.cuda.Event,
            elapsed_ms=lambda s, e: float(cupy.cuda.get_elapsed_time(s, e)),
            device_info=cupy_info,
        )
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        def torch_info() -> DeviceInfo:
            return DeviceInfo(device_name=torch.cuda.get_device_name(index), device_index=index,
                              pci_bus_id=_torch_pci(torch, index), cuda_runtime=torch.version.cuda)

        return Events(
            make=lambda: torch.cuda.Event(enable_timing=True),
            elapsed_ms=lambda s, e: float(s.elapsed_time(e)),
            device_info=torch_info,
        )
    return None



def device_info(device: str, events: Events | None) -> DeviceInfo:
    """The device a process's cases ran on, named by the CUDA library it loaded: cupy's or torch's (their
    events), else jax's (a process of jax cases alone)."""
    if events is not None:
        return events.device_info()
    jax, index = sys.modules.get("jax"), cuda_index(device)
    if jax is not None and index is not None:
        try:
            gpus = [d for d in jax.devices() if d.platform in ("gpu", "cuda")]
            return DeviceInfo(device_name=gpus[index].device_kind, device_index=index)
        except Exception:  # noqa: BLE001 -- a name is all this is for
            pass
    return DeviceInfo()



def _torch_pci(torch: Any, index: int) -> str | None:
    props = torch.cuda.get_device_properties(index)
    if not hasattr(props, "pci_bus_id"):
        return None
    return f"{getattr(props, 'pci_domain_id', 0):04x}:{props.pci_bus_id:02x}:{getattr(props, 'pci_device_id', 0):02x}.0"



def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"
