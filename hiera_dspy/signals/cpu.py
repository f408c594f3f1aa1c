"""What this CPU can do for the encoders, read from the machine, never assumed: its instruction-set flags, torch's
kernel level, and whether bf16 autocast pays (only with AVX512_BF16 or AMX-BF16; on an AVX2-only CPU bf16 is emulated
and slower than fp32).

Example:
    >>> isinstance(cpu_flags(), frozenset)
    True
"""

from __future__ import annotations

import contextlib
import functools
import platform
from pathlib import Path

# the flags that decide a transformer's speed on a CPU, in the order a table prints them
SPEED_FLAGS = ("avx2", "fma", "avx512f", "avx512_vnni", "avx_vnni", "avx512_bf16", "amx_bf16", "amx_int8")
BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16"})


@functools.lru_cache(maxsize=1)
def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (Linux: /proc/cpuinfo's first `flags` line; elsewhere: empty, nothing assumed)."""
    info = Path("/proc/cpuinfo")
    if not info.is_file():
        return frozenset()
    for line in info.read_text(errors="replace").splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_model() -> str:
    """The CPU's model name (Linux: /proc/cpuinfo), else platform.processor()."""
    info = Path("/proc/cpuinfo")
    if info.is_file():
        for line in info.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown CPU"


def speed_flags() -> str:
    """The speed-relevant flags this CPU has, e.g. "avx2 fma" (or "none of avx2, fma, ...")."""
    have = [f for f in SPEED_FLAGS if f in cpu_flags()]
    return " ".join(have) if have else "none of " + ", ".join(SPEED_FLAGS)


def has_bf16() -> bool:
    """Whether the CPU computes bf16 natively (AVX512_BF16 or AMX-BF16): only then does bf16 autocast save time."""
    return bool(cpu_flags() & BF16_FLAGS)


def training_autocast(precision: str = "auto"):
    """A context for a training step's forward pass: torch's CPU bf16 autocast for "bf16", nothing (fp32) for
    "fp32", and for "auto" bf16 where `has_bf16()`, else fp32. The caller keeps the loss and the optimizer in fp32,
    as autocast intends."""
    if precision == "fp32" or (precision == "auto" and not has_bf16()):
        return contextlib.nullcontext()
    import torch

    return torch.autocast("cpu", dtype=torch.bfloat16)
