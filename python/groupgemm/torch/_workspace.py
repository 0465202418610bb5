"""One zero-filled workspace per device, and the launch that uses it.

The workspace carries the device-side error flags between launches: they are
written only when a kernel clamps bad group sizes, and stay set until
check() reads and clears them. So one buffer per device serves every op and
collects every flag, and check() has one place to look. It is allocated
zero-filled on first use, at least _MIN_BYTES so that later, larger problems
rarely need more, and grown (keeping its contents, the flags included) when
a launch reports it too small.

A launch also keeps per-launch metadata in the workspace (the group extents
that the GPU path's first kernel writes and its second reads), so two
launches must not overlap. Launches on one stream never do; when a launch
comes on another stream than the previous one on that device, its stream is
first made to wait for that stream. Inside graph capture there is nothing to
wait for (capture starts after a device synchronization), and replaying a
captured graph while groupgemm ops run on another stream is the caller's to
order.

Growing allocates, and an allocation inside CUDA graph capture would belong
to that graph's private pool, so it is refused there with a message saying
how to size the workspace before capturing (run the op once, or call
reserve()). A launch never queries its size first: it tries the current
buffer, and the library's WORKSPACE_TOO_SMALL answer, given before anything
runs, is the signal to grow.
"""

import contextlib
from typing import Dict, Union

import torch

from .. import core
from .._capi import DeviceFlag, GemmDesc
from ..errors import WorkspaceTooSmall

_MIN_BYTES = 1 << 20
_buffers: Dict[torch.device, torch.Tensor] = {}
_last_streams: Dict[torch.device, int] = {}  # the stream handle of each device's last launch


def _capturing(device: torch.device) -> bool:
    return device.type == "cuda" and torch.cuda.is_current_stream_capturing()


def _grow(device: torch.device, nbytes: int) -> torch.Tensor:
    old = _buffers.get(device)
    if _capturing(device):
        raise WorkspaceTooSmall(
            "the groupgemm workspace on %s (%d bytes) must grow to %d bytes, which cannot happen "
            "during CUDA graph capture: run the op once before capturing, or call "
            "groupgemm.torch.reserve_workspace(%d, %r) first"
            % (device, 0 if old is None else old.numel(), nbytes, nbytes, str(device))
        )
    new = torch.zeros(max(nbytes, _MIN_BYTES), dtype=torch.uint8, device=device)
    if old is not None:
        new[: old.numel()].copy_(old)
        if device.type == "cuda":
            # Launches are ordered up to the current stream: keep the old
            # block from reuse until that stream is past them.
            old.record_stream(torch.cuda.current_stream(device))
    _buffers[device] = new
    return new


def _on(device: torch.device):
    """Makes `device` current: the library launches on the current CUDA device."""
    if device.type != "cuda" or device.index == torch.cuda.current_device():
        return contextlib.nullcontext()
    return torch.cuda.device(device)


def _normalized(device: Union[torch.device, str, None]) -> torch.device:
    device = torch.device("cuda" if device is None else device)
    if device.type == "cuda" and device.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return device


def _stream_after_previous_launch(device: torch.device) -> int:
    """The current stream's handle, ordered after the device's previous launch.

    The handle comes from torch._C._cuda_getCurrentRawStream, as Triton's
    launcher gets it: torch.cuda.current_stream() builds a Stream object,
    which costs more host time than the launch it is for. Stream objects
    are made only when the stream changed, to wait on the previous one."""
    if device.type != "cuda":
        return 0
    handle = torch._C._cuda_getCurrentRawStream(device.index)
    previous = _last_streams.get(device)
    if previous is not None and previous != handle and not _capturing(device):
        waiting = torch.cuda.current_stream(device)
        waiting.wait_stream(torch.cuda.ExternalStream(previous, device=device))
    _last_streams[device] = handle
    return handle


def reserve(nbytes: int, device: Union[torch.device, str, None] = None) -> None:
    """Makes the workspace on `device` (default: the current CUDA device) at
    least `nbytes` large: call it before capturing a graph whose problems
    need more than a first eager run has sized it for."""
    device = _normalized(device)
    buffer = _buffers.get(device)
    if buffer is None or buffer.numel() < nbytes:
        with _on(device):
            _stream_after_previous_launch(device)
            _grow(device, nbytes)


def run(desc: GemmDesc, device: torch.device) -> None:
    """Launches `desc` on the current stream of `device` with its workspace."""
    with _on(device):
        stream = _stream_after_previous_launch(device)
        buffer = _buffers.get(device)
        if buffer is None:
            buffer = _grow(device, core.workspace_size(desc))
        try:
            core.launch(desc, buffer.data_ptr(), buffer.numel(), stream)
        except WorkspaceTooSmall:
            buffer = _grow(device, core.workspace_size(desc))
            core.launch(desc, buffer.data_ptr(), buffer.numel(), stream)


def check(device: Union[torch.device, str, None] = None) -> DeviceFlag:
    """Reads and clears the device-side error flags of the workspace on
    `device` (default: the current CUDA device): non-zero when group sizes
    were negative or overflowed since the last check. Waits for the device's
    current stream (ordered after its last launch), so call it outside graph
    capture."""
    device = _normalized(device)
    buffer = _buffers.get(device)
    if buffer is None:  # never used: nothing can have been flagged
        return DeviceFlag(0)
    with _on(device):
        stream = _stream_after_previous_launch(device)
        return core.check(buffer.data_ptr(), core.path_for(str(device)), stream)
