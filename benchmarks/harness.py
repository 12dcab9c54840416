"""The one place that turns (provider, mode, shape) into a checked, timed call and a peak-memory figure.

A kernel suite subclasses `KernelSuite`: it declares `kernel_name`, `x_name`, `param_names`/`params` (first
`provider` and `mode`, then the shape parameters), `make_inputs`, `reference` and `provider_fn`, plus two one-line
asv methods, `time_<kernel_name>` and `track_peakmem_<kernel_name>`. Everything else lives here:

* Correctness gate: before a provider is timed, its output (and, in full/backward mode, the gradients of every
  differentiable input) is compared with the fp64 reference on the same inputs; a mismatch raises, so asv records
  a failure instead of a time.
* Speed: on a GPU, each asv sample is one call bracketed by CUDA events after an L2 flush, like
  `triton.testing.do_bench` (a short device spin first lets the host run ahead, as in do_bench's loop); the suite's asv `timer` returns the accumulated event time, so asv's own wall-clock
  timer (which does not wait for the GPU) never measures launch overhead or an unfinished kernel. On the CPU the
  timer is the wall clock.
* Memory: peak CUDA memory allocated during one call above what was allocated before it (the inputs, and in
  backward mode the forward's graph), in bytes. asv's own `peakmem_` would measure host RSS, so it is not used.
* greyhound providers call the public functions with `check_target=False`: like every peer, no host-side check
  of the targets (that check costs one host sync; its price is in docs/perf/).
* Modes: `full` = forward + backward, `forward` = output only with no gradient required, `backward` = the
  backward of a forward run (untimed) in setup.
"""
import abc
import functools
import os
import time

os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # is_available() must not initialise CUDA before fork

import torch  # noqa: E402
from asv_runner.benchmarks.mark import SkipNotImplemented  # noqa: E402

ON_GPU = torch.cuda.is_available() and os.environ.get("GREYHOUND_BENCH_DEVICE", "auto") != "cpu"
if not ON_GPU:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # greyhound's Triton kernels run on CPU tensors through it
DEVICE = "cuda" if ON_GPU else "cpu"

from . import providers  # noqa: E402

MODES = ["full", "forward", "backward"]
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# Relative-norm tolerance against the fp64 reference, by input dtype (bf16 operands land in 1e-3..1e-2).
TOLERANCE = {torch.float32: 2e-3, torch.float16: 1e-2, torch.bfloat16: 3e-2}
L2_FLUSH_BYTES = 256 * 2**20  # the same buffer size triton.testing.do_bench zeroes between calls
# GPU cycles (~0.3 ms at 1.98 GHz) the device spins before each timed call, so the host's Python prologue (argument
# checks, launches) is queued ahead of the device as in do_bench's back-to-back loop, not timed as idle GPU.
HEAD_START_CYCLES = 600_000

_device_seconds = [0.0]


def served_providers(providers):
    """The providers a suite runs here: on the CPU torch-compile is left out (tens of seconds of C++ compilation
    per benchmark process for a number nobody tracks)."""
    return list(providers) if ON_GPU else [p for p in providers if p != "torch-compile"]


def device_clock():
    """asv timer: seconds of CUDA-event time accumulated by `KernelSuite.timed_call` (wall clock on the CPU)."""
    return _device_seconds[0] if ON_GPU else time.perf_counter()


def random_logits(batch_size, vocab_size, dtype):
    """Inputs of the logits-based loss suites: standard-normal logits and uniform targets in [0, V)."""
    logits = torch.randn(batch_size, vocab_size, device=DEVICE, dtype=DTYPES[dtype])
    target = torch.randint(0, vocab_size, (batch_size,), device=DEVICE)
    return {"logits": logits, "target": target}, ["logits"]


def random_lm_head(batch_size, d_model, vocab_size, dtype, hidden_name="x"):
    """Inputs of the fused lm-head suites: hidden states, a 1/sqrt(d_model)-scaled weight, uniform targets."""
    hidden = torch.randn(batch_size, d_model, device=DEVICE, dtype=DTYPES[dtype])
    weight = torch.randn(vocab_size, d_model, device=DEVICE, dtype=DTYPES[dtype]) / d_model**0.5
    target = torch.randint(0, vocab_size, (batch_size,), device=DEVICE)
    return {hidden_name: hidden, "weight": weight, "target": target}, [hidden_name, "weight"]


def relative_error(out, ref):
    out, ref = out.detach().double(), ref.detach().double()
    if not torch.isfinite(out).all() and not torch.equal(torch.isnan(out), torch.isnan(ref)):
        return float("inf")
    out, ref = torch.nan_to_num(out), torch.nan_to_num(ref)
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def _as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


@functools.lru_cache(maxsize=1)
def _l2_flush_buffer():
    return torch.empty(L2_FLUSH_BYTES, dtype=torch.int8, device=DEVICE)


class KernelSuite(abc.ABC):
    """Base of every kernel suite; abstract, so asv does not collect it as a benchmark itself."""

    kernel_name: str
    x_name: str
    timer = staticmethod(device_clock)
    # Samples per benchmark (min, max, max seconds); asv's p20/p80 come from them (`--record-samples`).
    repeat = (10, 40, 10.0)
    warmup_time = 0.0  # the correctness gate in setup already ran every provider (compiles, autotunes) once
    timeout = 600
    processes = 1
    rounds = 1

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if inspect_abstract(cls):
            return
        names = list(cls.param_names)
        if names[:2] != ["provider", "mode"] or cls.x_name not in names:
            raise TypeError(f"{cls.__name__}.param_names must start with provider, mode and include x_name "
                            f"{cls.x_name!r}, got {names}")
        # asv copies function attributes into benchmarks.json: tools.export reads kernel_name and x_name there.
        for prefix, unit in (("time_", None), ("track_peakmem_", "bytes")):
            method = getattr(cls, prefix + cls.kernel_name, None)
            if method is None:
                raise TypeError(f"{cls.__name__} must define {prefix}{cls.kernel_name}")
            if getattr(method, "x_name", cls.x_name) != cls.x_name:  # relabelling would change the parent's too
                raise TypeError(f"{cls.__name__} changes x_name: it must define its own {prefix}{cls.kernel_name}")
            method.kernel_name, method.x_name = cls.kernel_name, cls.x_name
            if unit:
                method.unit = unit
                method.skip_benchmark = not ON_GPU  # asv leaves it out where there is no CUDA memory to measure

    # --- what a suite declares -------------------------------------------------------------------------------
    @abc.abstractmethod
    def make_inputs(self, **shape):
        """Fresh random inputs on DEVICE: (dict of named inputs, names of the differentiable ones)."""

    @abc.abstractmethod
    def reference(self, *inputs):
        """The fp64 reference output(s), computed from inputs already cast to float64."""

    @abc.abstractmethod
    def provider_fn(self, provider, **shape):
        """A callable taking the inputs (positionally, in make_inputs order) and returning the output(s)."""

    def forward_context(self, provider):
        """Forward mode runs without autograd by default."""
        return torch.no_grad()

    def check_output(self, provider, out, ref, dtype):
        """Raise AssertionError when an output is off the reference; suites may tighten or loosen per output."""
        tol = TOLERANCE[dtype]
        for i, (o, r) in enumerate(zip(_as_tuple(out), _as_tuple(ref))):
            err = relative_error(o, r)
            if not err <= tol:
                raise AssertionError(f"{self.kernel_name}/{provider}: output {i} relative error {err:.3g} > {tol:g}")

    # --- asv hooks ---------------------------------------------------------------------------------------------
    def setup(self, provider, mode, *shape_values):
        providers.require(provider)
        shape = dict(zip(self.param_names[2:], shape_values))
        key = (provider, mode, *shape_values)
        if getattr(self, "_prepared", None) != key:  # asv re-runs setup before every sample: prepare once
            self._prepare(provider, mode, shape)
            self._prepared = key
        for t in self._grad_inputs.values():
            t.grad = None
        if mode == "backward":
            self._outputs = self._forward_for_backward()

    def _prepare(self, provider, mode, shape):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        self.dtype = DTYPES[shape["dtype"]] if "dtype" in shape else torch.float32
        self.inputs, grad_names = self.make_inputs(**shape)
        self.mode, self.provider = mode, provider
        self.fn = self.provider_fn(provider, **shape)
        needs_grad = mode != "forward"
        self._grad_inputs = {n: self.inputs[n] for n in grad_names} if needs_grad else {}
        for t in self._grad_inputs.values():
            t.requires_grad_(True)
        self._gate()
        if ON_GPU:
            self._start, self._end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            _l2_flush_buffer()

    def _gate(self):
        """Run the provider once (this also warms it up) and compare with the fp64 reference."""
        ref_inputs = {n: (t.detach().double().requires_grad_(n in self._grad_inputs) if t.is_floating_point()
                          else t) for n, t in self.inputs.items()}
        ref = _as_tuple(self.reference(*ref_inputs.values()))
        if self.mode == "forward":
            with self.forward_context(self.provider):
                out = _as_tuple(self.fn(*self.inputs.values()))
            self.check_output(self.provider, out, ref, self.dtype)
            return
        out = _as_tuple(self.fn(*self.inputs.values()))
        self.check_output(self.provider, out, ref, self.dtype)
        self._grad_outputs = [torch.randn_like(o) if o.dim() else torch.ones_like(o)
                              for o in out if o.requires_grad]
        torch.autograd.backward([o for o in out if o.requires_grad], self._grad_outputs)
        ref_out = [r for r in ref if r.requires_grad]
        torch.autograd.backward(ref_out, [g.double() for g in self._grad_outputs])
        tol = TOLERANCE[self.dtype]
        for name, t in self._grad_inputs.items():
            err = relative_error(t.grad, ref_inputs[name].grad)
            if not err <= tol:
                raise AssertionError(f"{self.kernel_name}/{self.provider}: grad of {name} relative error "
                                     f"{err:.3g} > {tol:g}")
        del ref, ref_inputs, out

    def _forward_for_backward(self):
        return [o for o in _as_tuple(self.fn(*self.inputs.values())) if o.requires_grad]

    def _call(self):
        if self.mode == "forward":
            with self.forward_context(self.provider):
                return self.fn(*self.inputs.values())
        if self.mode == "full":
            outputs = self._forward_for_backward()
        else:
            outputs, self._outputs = self._outputs, None
        torch.autograd.backward(outputs, self._grad_outputs)

    def timed_call(self):
        """The body of every suite's time_ method: one call, timed by CUDA events on a GPU."""
        if not ON_GPU:
            self._call()
            return
        torch.cuda._sleep(HEAD_START_CYCLES)
        _l2_flush_buffer().zero_()
        self._start.record()
        self._call()
        self._end.record()
        self._end.synchronize()
        _device_seconds[0] += self._start.elapsed_time(self._end) * 1e-3

    def peak_memory(self):
        """The body of every suite's track_peakmem_ method: bytes of CUDA memory above what one call started with."""
        if not ON_GPU:
            raise SkipNotImplemented("peak CUDA memory needs a CUDA device")  # for direct calls; asv skips it
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        self._call()
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated() - before


def inspect_abstract(cls):
    # ABCMeta has not computed __abstractmethods__ yet when __init_subclass__ runs: a suite is one naming a kernel.
    return getattr(cls, "kernel_name", None) is None
