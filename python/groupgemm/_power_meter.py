"""The board's power and SM clock over a run of a workload, read through NVML
(nvidia-ml-py): groupgemm.bench_quantize --power-seconds, and the energy
benchmarks in tools/, read their figures with Meter.
"""

import threading
import time
from dataclasses import dataclass
from typing import Callable, List

import torch

from . import bench


@dataclass
class Reading:
    name: str
    calls: int
    seconds: float
    joules: float
    sm_mhz: float
    tflop: float = 0.0  # per call
    gbytes: float = 0.0  # per call, the bytes its rate is quoted in

    @property
    def ms(self) -> float:
        return 1e3 * self.seconds / max(self.calls, 1)

    @property
    def watts(self) -> float:
        return self.joules / self.seconds


class Meter:
    """NVML's energy counter and SM clock of the current CUDA device."""

    def __init__(self):
        import pynvml  # nvidia-ml-py

        self.nvml = pynvml
        pynvml.nvmlInit()
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        self.name = pynvml.nvmlDeviceGetName(self.handle)
        self.limit_watts = pynvml.nvmlDeviceGetEnforcedPowerLimit(self.handle) / 1e3

    def joules(self) -> float:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1e3

    def sm_mhz(self) -> int:
        return self.nvml.nvmlDeviceGetClockInfo(self.handle, self.nvml.NVML_CLOCK_SM)

    def read(self, name: str, fn: Callable[[], None], warm_s: float, seconds: float) -> Reading:
        """Runs fn for warm_s, then for at least `seconds` while reading the
        energy counter and sampling the clock every 20 ms."""
        bench.keep_running(fn, 1e3 * warm_s)
        clocks: List[int] = []
        done = threading.Event()

        def sample():
            while not done.wait(0.02):
                clocks.append(self.sm_mhz())

        sampler = threading.Thread(target=sample)
        torch.cuda.synchronize()
        start_j, start = self.joules(), time.perf_counter()
        sampler.start()
        calls = bench.keep_running(fn, 1e3 * seconds)
        elapsed = time.perf_counter() - start
        joules = self.joules() - start_j
        done.set()
        sampler.join()
        return Reading(name, calls, elapsed, joules, sum(clocks) / max(len(clocks), 1))
