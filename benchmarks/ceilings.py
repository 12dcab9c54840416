"""The machine's own ceilings, tracked like a kernel: a device-to-device copy (bytes read + written per second) and
a large bf16 GEMM (FLOP/s). tools.export divides every speed row's work (its suite's `work`) by its time and by
these, measured on the same machine, for the roofline column."""
import torch

from . import harness
from .harness import DEVICE, DTYPES


class DeviceCeilingsTracked(harness.KernelSuite):
    kernel_name = "device_ceilings"
    x_name = "size"
    providers = ["torch-eager"]
    modes = ["forward"]
    gpu_shapes = [dict(op="copy", size=2**30, dtype="bfloat16"), dict(op="gemm", size=8192, dtype="bfloat16")]
    cpu_shapes = [dict(op="copy", size=2**16, dtype="float32"), dict(op="gemm", size=128, dtype="float32")]
    default_key = "op"  # a sweep's --op gemm takes gemm's size and dtype, not the copy's (2**30 elements a side)

    def make_inputs(self, op, size, dtype):
        if op == "copy":
            x = torch.randn(size, device=DEVICE, dtype=DTYPES[dtype])
            return {"x": x, "out": torch.empty_like(x)}, []
        a = torch.randn(size, size, device=DEVICE, dtype=DTYPES[dtype])
        return {"a": a, "b": torch.randn(size, size, device=DEVICE, dtype=DTYPES[dtype]) / size**0.5}, []

    @classmethod
    def work(cls, mode, shape):
        size, element = shape["size"], harness.dtype_bytes(shape["dtype"])
        if shape["op"] == "copy":
            return 2 * size * element, 0
        return 3 * size * size * element, 2 * size**3

    def reference(self, first, second):
        return first if self.shape_op == "copy" else first @ second

    def provider_fn(self, provider, op, **shape):
        self.shape_op = op
        if op == "copy":
            return lambda x, out: out.copy_(x)
        return torch.mm
