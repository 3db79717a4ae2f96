"""TileLang's `tilelang.carver.arch` as far as its examples read it: `CUDA(target)`, the facts
of the CUDA device a roofline needs (what `tilelang.tools.Analyzer` reads), and `driver`.

`CUDA("cuda")` describes the device found here: `compute_capability` ("90"), `sm_count`,
`bandwidth` (a (read, write) pair in MB/s, from the memory clock and bus width the driver
reports: twice the clock for double data rate) and `peak_tflops` (dense fp16/bf16 tensor-core
TFLOP/s of the generation, a datasheet lead; None where not known). Without a device it raises
`RuntimeError` saying so. The tile-config recommender is `tilelang.carver.template` (`carver_template`).
`CDNA` names AMD's class: this backend cannot describe an AMD device and says so.
"""
from __future__ import annotations

from .. import carver_driver as driver

__all__ = ["CUDA", "CDNA", "driver"]

# dense fp16/bf16 tensor-core TFLOP/s per SM at the boost clock, by compute capability major.minor
# (NVIDIA datasheets: A100 312 / 108 SMs, H100 SXM 989 / 132 SMs): leads for a roofline, not measurements
_TFLOPS_PER_SM = {"80": 2.89, "90": 7.49}
_MEMORY_CLOCK_RATE = 36  # CUdevice_attribute: kHz
_GLOBAL_MEMORY_BUS_WIDTH = 37  # bits


class CUDA:
    """The CUDA device a target names (TileLang's `CUDA(target)`; the first device)."""

    def __init__(self, target: object = "cuda", device_id: int = 0) -> None:
        props = driver.get_cuda_device_properties(device_id)
        if props is None:
            raise RuntimeError("CUDA(...): no CUDA device found here (the carver describes a present device)")
        self.target = target
        self.name = props.name
        self.compute_capability = f"{props.major}{props.minor}"
        self.sm_count = props.multi_processor_count
        self.smem_cap = props.shared_memory_per_block_optin
        clock_khz = driver.get_device_attribute(_MEMORY_CLOCK_RATE, device_id)
        bus_bits = driver.get_device_attribute(_GLOBAL_MEMORY_BUS_WIDTH, device_id)
        mb_per_s = 2.0 * clock_khz * 1e3 * bus_bits / 8 / 1e6
        self.bandwidth = (mb_per_s, mb_per_s)
        per_sm = _TFLOPS_PER_SM.get(self.compute_capability)
        self.peak_tflops = None if per_sm is None else round(per_sm * self.sm_count, 1)

    def __repr__(self) -> str:
        return f"CUDA({self.name}, sm_{self.compute_capability}, {self.sm_count} SMs)"


class CDNA:
    """TileLang's AMD device class: not provided by the CUDA backend."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("CDNA(...): describing an AMD device is the HIP backend's, not provided yet")
