"""CheriBlock: causal dilated depthwise conv -> LayerNorm over channels -> MLP (GELU) -> residual, on (N, C, L).

A thin module over greyhound.ops.cheri_conv_norm (docs/kernels/cheri_block.md defines it and its paths):
  * grad enabled (training-fwd): the fused block kernel saving the hidden layer for a cuBLAS + Triton backward
    (hidden width a multiple of 16; on Hopper an fp32 model's runs the Gluon version of the kernel); otherwise
    Triton conv + LayerNorm, then the MLP in eager PyTorch;
  * grad disabled and hidden width (expansion * n_filters) a multiple of 16: the inference megakernel. In
    eval mode it reads the MLP weights' cast cached by .eval() (fp32 models; bf16 and fp16 models multiply their
    own weights); in train mode an fp32 model casts them every call;
  * grad disabled otherwise: the training-fwd path without autograd.
Every path is made of registered torch.library ops, so torch.compile(fullgraph=True) of a model holding the
block has no graph break (inside it, eval mode casts the MLP weights in the graph instead of reading the cache).
CPU tensors without TRITON_INTERPRET=1 run the same paths as eager PyTorch with the same numerics.
"""
import math

import torch
from torch import nn

from greyhound._validate import FLOAT_DTYPES, as_float, check_choice, check_tensor, is_int, is_real
from greyhound.ops.cheri_conv_norm import (
    FP32_DOT_MODES,
    MlpDotWeights,
    cheri_block_reference,
    dot_dtype,
    mlp_dot_mode,
    prepare_mlp_weights,
    run_megakernel,
    train_forward,
)

_CACHE_BUFFERS = ("_mlp_fc1_hi", "_mlp_fc1_lo", "_mlp_fc2_hi", "_mlp_fc2_lo")
_PARAM_NAMES = ("conv.weight", "conv.bias", "norm.weight", "norm.bias", "fc1.weight", "fc1.bias", "fc2.weight",
                "fc2.bias")


class CheriBlock(nn.Module):
    """out = x + fc2(GELU(fc1(LayerNorm_C(causal_depthwise_conv(x))))) for x of shape (N, n_filters, L).

    Parameters are ordinary submodules (conv: depthwise nn.Conv1d used causally, norm: nn.LayerNorm,
    fc1/fc2: nn.Linear), so state dicts match an eager implementation. `fp32_dot` picks how an fp32 model's fused
    kernel multiplies (inference and training forward): "bf16x3" (hi/lo bf16 splits, ~1e-6 relative, the default),
    "tf32x3", "ieee" (slow), or "bf16" (one bf16 pass: ~1.6x faster, ~4e-3 max-abs, not fp32-accurate)."""

    def __init__(self, n_filters, kernel_size=3, dilation=1, expansion=4, eps=1e-5, fp32_dot="bf16x3",
                 device=None, dtype=None):
        super().__init__()
        for name, value in (("n_filters", n_filters), ("kernel_size", kernel_size), ("dilation", dilation),
                            ("expansion", expansion)):
            if not is_int(value) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not is_real(eps) or not (math.isfinite(as_float(eps)) and eps > 0):
            raise ValueError(f"eps must be a positive finite float (the LayerNorm's), got {eps!r}")
        if dtype is not None and not (isinstance(dtype, torch.dtype) and dtype.is_floating_point):
            raise TypeError(f"dtype must be None or a floating-point torch.dtype (the parameters'), got {dtype!r}")
        self.fp32_dot = fp32_dot  # (checked, and the cast cache key cleared, by the property's setter)
        n_filters, kernel_size, dilation, expansion = int(n_filters), int(kernel_size), int(dilation), int(expansion)
        self.n_filters, self.kernel_size, self.dilation, self.expansion = n_filters, kernel_size, dilation, expansion
        self.hidden = expansion * n_filters
        factory = {"device": device, "dtype": dtype}
        self.conv = nn.Conv1d(n_filters, n_filters, kernel_size, dilation=dilation, groups=n_filters, **factory)
        self.norm = nn.LayerNorm(n_filters, eps=eps, **factory)
        self.fc1 = nn.Linear(n_filters, self.hidden, **factory)
        self.fc2 = nn.Linear(self.hidden, n_filters, **factory)
        for name in _CACHE_BUFFERS:  # non-persistent: never in state_dict, rebuilt from the weights
            self.register_buffer(name, None, persistent=False)
        self._cache_key = None

    def extra_repr(self):
        return (f"n_filters={self.n_filters}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
                f"expansion={self.expansion}, eps={self.norm.eps}, fp32_dot={self.fp32_dot!r}")

    # -------------------------------------------------------------------------------------------- forward
    def forward(self, x):
        params = self._params()
        self._check_input(x, params)
        if x.numel() == 0:
            return x.clone()
        eps = self._modules["norm"].eps
        # Parameters are the module's own (shapes fixed at construction) and x is checked above: every path skips
        # the functional API's checks, which are a visible part of a small-N call's host time.
        if torch.is_grad_enabled() or not self.uses_megakernel_when_no_grad:
            return train_forward(x, *params, self.dilation, eps, self.fp32_dot)
        # No cache in train mode: the cast happens here, every call. Nor inside torch.compile, which cannot read the
        # cache key (data_ptr, _version): there the cast is part of the graph (bf16 models have none to do). Nor for
        # inference tensors (a model built under inference_mode): they have no _version, and inside inference_mode
        # they can be written in place (load_state_dict) unseen.
        if (self.training or torch.compiler.is_compiling() or params[4].is_inference()
                or params[6].is_inference()):
            mlp_weights = prepare_mlp_weights(params[4], params[6], self.fp32_dot)
        else:
            mlp_weights = self._cached_mlp_weights(params[4], params[6])
        return run_megakernel(x, *params[:4], params[5], params[7], mlp_weights, self.dilation, eps)

    def reference_forward(self, x):
        """The same block in plain PyTorch with these parameters (torch-eager / torch.compile provider)."""
        return cheri_block_reference(x, *self._params(), dilation=self.dilation, eps=self.norm.eps)

    @property
    def uses_megakernel_when_no_grad(self):
        """The dispatch rule: the megakernel tiles the hidden layer 16 columns at a time."""
        return self.hidden % 16 == 0

    def _params(self):
        # Through the module dicts: nn.Module.__getattr__ costs ~1 us a name, visible in a ~20 us call at N=16.
        conv, norm, fc1, fc2 = (self._modules[name]._parameters for name in ("conv", "norm", "fc1", "fc2"))
        params = (conv["weight"], conv["bias"], norm["weight"], norm["bias"],
                  fc1["weight"], fc1["bias"], fc2["weight"], fc2["bias"])
        # (a bias or affine parameter set to None after construction; by identity: `None in params` compares each
        # tensor with None through Tensor.__eq__, ~96 us a call on this CPU, where this is ~0.4 us)
        if any(param is None for param in params):
            missing = [name for name, param in zip(_PARAM_NAMES, params) if param is None]
            raise ValueError(f"CheriBlock computes with every parameter it was built with; {', '.join(missing)} "
                             f"is None (set after construction): give it a tensor (e.g. zeros) instead")
        return params

    @property
    def fp32_dot(self):
        return self._fp32_dot

    @fp32_dot.setter
    def fp32_dot(self, value):
        self._fp32_dot = check_choice("fp32_dot", value, FP32_DOT_MODES)
        self._cache_key = None  # (the eval-mode cast depends on it)

    def _check_input(self, x, params):
        weight = params[4]
        if weight.dtype not in FLOAT_DTYPES:  # e.g. an fp64 twin: its forward would multiply in bf16
            raise TypeError(f"CheriBlock's forward runs float32, bfloat16 or float16 models, got a "
                            f"{str(weight.dtype).replace('torch.', '')} model (use reference_forward for an fp64 "
                            f"oracle)")
        check_tensor("x", x, ndim=3)
        self._check_params(params, x)
        if x.dtype is not weight.dtype:
            check_tensor("x", x, dtypes=(weight.dtype,))  # raises
        if x.shape[1] != self.n_filters:
            raise ValueError(f"x must have shape (N, {self.n_filters}, L) for n_filters={self.n_filters}, "
                             f"got {tuple(x.shape)}")
        if x.shape[1] * x.shape[2] >= 2**31:
            raise ValueError(f"x must have n_filters * L < 2**31 (the kernels' in-row offsets are int32), got shape "
                             f"{tuple(x.shape)}")

    _param_signature = None  # [(shape, device, dtype)] of the parameters as _check_params last passed them

    def _check_params(self, params, x):
        """Each parameter against the block as built: the shapes its sizes give, the MLP's in fc1.weight's dtype (the
        model's), conv and norm in a float dtype, all on x's device. The kernels take the shapes from the sizes: a
        parameter set after construction with another shape would be read out of bounds."""
        # Fast path (~2.4 us on a dev CPU; at small N the Python around the launch is the call's time): the
        # parameters' shapes, devices and dtypes as the last check passed them, x on their device. (Shapes alone
        # would take ~1.2 us, but a parameter moved or cast alone after a call would then fail deep inside.)
        signature = [(param.shape, param.device, param.dtype) for param in params]
        device = x.device
        if signature == self._param_signature and device == signature[4][1]:
            return
        if all(param.device != device for param in params):
            check_tensor("x", x, like=params[4])  # x is the one off: raises
        channels, kernel_size, hidden, model = self.n_filters, self.kernel_size, self.hidden, params[4].dtype
        shapes = ((channels, 1, kernel_size), (channels,), (channels,), (channels,), (hidden, channels), (hidden,),
                  (channels, hidden), (channels,))
        for i, (name, param, shape) in enumerate(zip(_PARAM_NAMES, params, shapes)):
            if param.shape != shape:
                sizes = f"n_filters={channels}, kernel_size={kernel_size}, expansion={self.expansion}"
                raise ValueError(f"{name} must have shape {shape} for CheriBlock({sizes}), got {tuple(param.shape)}")
            if param.device != device:
                raise ValueError(f"{name} must be on {device} like x, got {param.device}")
            if i < 4:
                check_tensor(name, param, dtypes=FLOAT_DTYPES)
            elif param.dtype != model:
                raise TypeError(f"{name} must have fc1.weight's dtype ({str(model).replace('torch.', '')}: the MLP's "
                                f"parameters share the model's dtype), got {str(param.dtype).replace('torch.', '')}")
        if not torch.compiler.is_compiling():
            self._param_signature = signature

    # ---------------------------------------------------------------------- eval-mode MLP weight cache
    def train(self, mode=True):
        super().train(mode)
        if mode:
            self.clear_inference_cache()
        elif self.fc1.weight.dtype in FLOAT_DTYPES and not (self.fc1.weight.is_inference()
                                                           or self.fc2.weight.is_inference()):
            try:  # built here, outside any (compiled) forward
                self._cached_mlp_weights(self.fc1.weight, self.fc2.weight)
            except (TypeError, ValueError):  # weights that do not fit each other: the forward's check names them
                self.clear_inference_cache()
        return self

    def clear_inference_cache(self):
        """Drops the cached weight cast (train() does this; call it after editing weights through `.data`)."""
        for name in _CACHE_BUFFERS:
            setattr(self, name, None)
        self._cache_key = None

    def _cached_mlp_weights(self, fc1_weight, fc2_weight):
        # An in-place update (optimizer step, load_state_dict) bumps _version; .to() or a new Parameter moves
        # data_ptr/dtype/device. The buffers' dtype is checked too: .to(dtype) casts buffers as well.
        key = (fc1_weight.data_ptr(), fc1_weight._version, fc2_weight.data_ptr(), fc2_weight._version,
               fc1_weight.dtype, fc1_weight.device, self.fp32_dot)
        buffers = self._buffers
        cached_hi = buffers["_mlp_fc1_hi"]
        mode = mlp_dot_mode(fc1_weight.dtype, self.fp32_dot)
        if key != self._cache_key or cached_hi is None or cached_hi.dtype != dot_dtype(mode):
            with torch.no_grad():
                weights = prepare_mlp_weights(fc1_weight, fc2_weight, self.fp32_dot)
            for name, tensor in zip(_CACHE_BUFFERS, weights[1:]):
                buffers[name] = tensor  # a bf16 model's cast is its weights: an alias, no copy
            self._cache_key = key
        return MlpDotWeights(mode, buffers["_mlp_fc1_hi"], buffers["_mlp_fc1_lo"], buffers["_mlp_fc2_hi"],
                             buffers["_mlp_fc2_lo"])


class CheriBlockReference(nn.Module):
    """Plain-PyTorch CheriBlock sharing `block`'s parameters: the torch-eager / torch.compile benchmark provider."""

    def __init__(self, block: CheriBlock):
        super().__init__()
        self.block = block

    def forward(self, x):
        return self.block.reference_forward(x)
