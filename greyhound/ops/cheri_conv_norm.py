"""Cheri Block kernels: the fused causal-conv + LayerNorm (forward and backward) and the inference megakernel.

The block, on x of shape (N, C, L) (docs/kernels/cheri_block.md is the full definition):
    y   = b_conv + sum_k w_conv[:, k] * x[:, :, l - (K-1-k)*dilation]   (depthwise, causal: zeros left of l=0)
    z   = LayerNorm_C(y) * gamma + beta                                   (over channels, per (n, l))
    out = x + (GELU_erf(z @ W1^T + b1) @ W2^T + b2)                       (pointwise MLP C -> E -> C)

Paths:
  * `conv_norm` (autograd): one Triton kernel for conv + LayerNorm, writing z as (N, L, C) for the eager MLP;
    its backward is one Triton kernel (recomputes y; per-program partial sums for the parameter gradients).
  * `cheri_block_megakernel` (inference): conv, LayerNorm, MLP and residual in one kernel; the E-wide hidden
    layer is produced BLOCK_E columns at a time and consumed at once, so it never leaves the chip.
  * `cheri_block_reference`: plain PyTorch in the inputs' dtype (tests, docs, torch-eager/torch.compile).
On CPU tensors without TRITON_INTERPRET the same functions run eager PyTorch with the same numerics.
"""
import functools
from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
import triton
import triton.language as tl

from greyhound._validate import FLOAT_DTYPES, check_choice, check_tensor, triton_interpreting

FP32_DOT_MODES = ("bf16x3", "tf32x3", "ieee")
# Megakernel MLP operand modes (a tl.constexpr): one bf16 dot, three bf16 dots on hi/lo splits, or fp32 dots.
_DOT_BF16, _DOT_BF16X3, _DOT_TF32X3, _DOT_IEEE = 0, 1, 2, 3
_DOT_MODE_CODES = {"bf16": _DOT_BF16, "bf16x3": _DOT_BF16X3, "tf32x3": _DOT_TF32X3, "ieee": _DOT_IEEE}


# ----------------------------------------------------------------------------------------------------------
# Plain-PyTorch definition (the reference every path is tested against)
# ----------------------------------------------------------------------------------------------------------
def causal_depthwise_conv(x, conv_weight, conv_bias, dilation):
    """y[n, c, l] = b[c] + sum_k w[c, 0, k] * x[n, c, l - (K-1-k)*dilation], zero-padded on the left."""
    kernel_size = conv_weight.shape[-1]
    x_padded = F.pad(x, ((kernel_size - 1) * dilation, 0))
    return F.conv1d(x_padded, conv_weight, conv_bias, dilation=dilation, groups=x.shape[1])


def mlp_residual(x, z, fc1_weight, fc1_bias, fc2_weight, fc2_bias):
    """out = x + (GELU(z @ W1^T + b1) @ W2^T + b2)^T for z of shape (N, L, C); exact-erf GELU."""
    hidden = F.gelu(F.linear(z, fc1_weight, fc1_bias))
    return x + F.linear(hidden, fc2_weight, fc2_bias).transpose(1, 2)


def cheri_block_reference(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight,
                          fc2_bias, *, dilation=1, eps=1e-5):
    """The Cheri Block in plain PyTorch, computed in the inputs' dtype (pass fp64 tensors for a test oracle)."""
    y = causal_depthwise_conv(x, conv_weight, conv_bias, dilation)
    z = F.layer_norm(y.transpose(1, 2), (x.shape[1],), norm_weight, norm_bias, eps)
    return mlp_residual(x, z, fc1_weight, fc1_bias, fc2_weight, fc2_bias)


# ----------------------------------------------------------------------------------------------------------
# Triton tile helpers shared by the three kernels. Tiles are (BLOCK_L positions, BLOCK_C channels), fp32.
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _causal_conv_tile(x_row, conv_w_ptr, conv_b_ptr, offs_l, offs_c, mask_c, L, stride_xc, stride_xl,
                      stride_wc, stride_wk, dilation, KERNEL_SIZE: tl.constexpr, BLOCK_L: tl.constexpr,
                      BLOCK_C: tl.constexpr):
    y = tl.zeros([BLOCK_L, BLOCK_C], dtype=tl.float32)
    y += tl.load(conv_b_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)[None, :]
    for k in tl.static_range(KERNEL_SIZE):
        src_l = offs_l - (KERNEL_SIZE - 1 - k) * dilation
        tap_mask = ((src_l >= 0) & (src_l < L))[:, None] & mask_c[None, :]
        x_tap = tl.load(x_row + offs_c[None, :] * stride_xc + src_l[:, None] * stride_xl, mask=tap_mask, other=0.0)
        w_tap = tl.load(conv_w_ptr + offs_c * stride_wc + k * stride_wk, mask=mask_c, other=0.0)
        y += x_tap.to(tl.float32) * w_tap.to(tl.float32)[None, :]
    return y


@triton.jit
def _layer_norm_tile(y, mask_c, C, eps):
    """Returns xhat = (y - mean) * rstd (zero on padded channels), mean and rstd per position."""
    mean = tl.sum(y, axis=1) / C  # padded channels of y are exactly zero
    centered = tl.where(mask_c[None, :], y - mean[:, None], 0.0)
    rstd = tl.math.rsqrt(tl.sum(centered * centered, axis=1) / C + eps)
    return centered * rstd[:, None], mean, rstd


@triton.jit
def _conv_norm_grad_tile(x_row, dz_row, mean_row, rstd_row, conv_w_ptr, conv_b_ptr, gamma, offs_l, offs_c,
                         mask_c, C, L, stride_xc, stride_xl, stride_wc, stride_wk, stride_dzl, stride_dzc,
                         dilation, KERNEL_SIZE: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr):
    """Recomputes xhat at positions offs_l and returns (dy, xhat, dz); all zero at positions >= L."""
    mask_l = offs_l < L
    y = _causal_conv_tile(x_row, conv_w_ptr, conv_b_ptr, offs_l, offs_c, mask_c, L, stride_xc, stride_xl,
                          stride_wc, stride_wk, dilation, KERNEL_SIZE, BLOCK_L, BLOCK_C)
    mean = tl.load(mean_row + offs_l, mask=mask_l, other=0.0)
    rstd = tl.load(rstd_row + offs_l, mask=mask_l, other=0.0)
    xhat = tl.where(mask_c[None, :], (y - mean[:, None]) * rstd[:, None], 0.0)
    dz = tl.load(dz_row + offs_l[:, None] * stride_dzl + offs_c[None, :] * stride_dzc,
                 mask=mask_l[:, None] & mask_c[None, :], other=0.0).to(tl.float32)
    g = dz * gamma[None, :]
    mean_g_xhat = tl.sum(g * xhat, axis=1) / C
    mean_g = tl.sum(g, axis=1) / C
    dy = tl.where(mask_c[None, :], rstd[:, None] * (g - xhat * mean_g_xhat[:, None] - mean_g[:, None]), 0.0)
    return dy, xhat, dz


# ----------------------------------------------------------------------------------------------------------
# Fused conv + LayerNorm: forward
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _conv_norm_fwd_kernel(
    x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr, z_ptr, mean_ptr, rstd_ptr,
    C, L, num_l_blocks, eps, dilation,
    stride_xn, stride_xc, stride_xl, stride_wc, stride_wk, stride_zn, stride_zl, stride_zc,
    KERNEL_SIZE: tl.constexpr, SAVE_STATS: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """z[n, l, :] = LayerNorm(causal_conv(x)[n, :, l]) * gamma + beta, stored (N, L, C) in z's dtype.
    Loads any float dtype, computes conv and statistics in fp32, rounds once on store.
    Optionally stores fp32 mean and rstd (N, L) for the backward."""
    pid = tl.program_id(0)
    n = pid // num_l_blocks
    offs_l = (pid % num_l_blocks) * BLOCK_L + tl.arange(0, BLOCK_L)
    offs_c = tl.arange(0, BLOCK_C)
    mask_l = offs_l < L
    mask_c = offs_c < C
    x_row = x_ptr + n.to(tl.int64) * stride_xn
    y = _causal_conv_tile(x_row, conv_w_ptr, conv_b_ptr, offs_l, offs_c, mask_c, L, stride_xc, stride_xl,
                          stride_wc, stride_wk, dilation, KERNEL_SIZE, BLOCK_L, BLOCK_C)
    xhat, mean, rstd = _layer_norm_tile(y, mask_c, C, eps)
    gamma = tl.load(gamma_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    beta = tl.load(beta_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    z = xhat * gamma[None, :] + beta[None, :]
    z_ptrs = z_ptr + n.to(tl.int64) * stride_zn + offs_l[:, None] * stride_zl + offs_c[None, :] * stride_zc
    tl.store(z_ptrs, z.to(z_ptr.dtype.element_ty), mask=mask_l[:, None] & mask_c[None, :])
    if SAVE_STATS:
        tl.store(mean_ptr + n.to(tl.int64) * L + offs_l, mean, mask=mask_l)
        tl.store(rstd_ptr + n.to(tl.int64) * L + offs_l, rstd, mask=mask_l)


# ----------------------------------------------------------------------------------------------------------
# Fused conv + LayerNorm: backward
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _conv_norm_bwd_kernel(
    x_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, mean_ptr, rstd_ptr, dz_ptr, dx_ptr, partials_ptr,
    C, L, tiles_per_program, programs_per_row, dilation,
    stride_xn, stride_xc, stride_xl, stride_wc, stride_wk, stride_dzn, stride_dzl, stride_dzc,
    stride_dxn, stride_dxc, stride_dxl,
    KERNEL_SIZE: tl.constexpr, BLOCK_K: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr,
):
    """dx (N, C, L) in dx's dtype, plus fp32 per-program partial sums (3 + K, C) of dgamma, dbeta, dconv_b, dconv_w.
    Recomputes y from x in fp32; dx[l] needs dy at l + shift_k, which is recomputed rather than stored.
    Each program owns `tiles_per_program` consecutive L-blocks of one row, so the partials stay small."""
    pid = tl.program_id(0)
    n = pid // programs_per_row
    first_block = (pid % programs_per_row) * tiles_per_program
    offs_c = tl.arange(0, BLOCK_C)
    offs_k = tl.arange(0, BLOCK_K)
    mask_c = offs_c < C
    x_row = x_ptr + n.to(tl.int64) * stride_xn
    dz_row = dz_ptr + n.to(tl.int64) * stride_dzn
    mean_row = mean_ptr + n.to(tl.int64) * L
    rstd_row = rstd_ptr + n.to(tl.int64) * L
    gamma = tl.load(gamma_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    dgamma_acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    dbeta_acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    dconv_b_acc = tl.zeros([BLOCK_C], dtype=tl.float32)
    dconv_w_acc = tl.zeros([BLOCK_K, BLOCK_C], dtype=tl.float32)
    for t in range(tiles_per_program):
        offs_l = (first_block + t) * BLOCK_L + tl.arange(0, BLOCK_L)
        dx = tl.zeros([BLOCK_L, BLOCK_C], dtype=tl.float32)
        for k in tl.static_range(KERNEL_SIZE):
            shift = (KERNEL_SIZE - 1 - k) * dilation
            dy, xhat, dz = _conv_norm_grad_tile(
                x_row, dz_row, mean_row, rstd_row, conv_w_ptr, conv_b_ptr, gamma, offs_l + shift, offs_c, mask_c,
                C, L, stride_xc, stride_xl, stride_wc, stride_wk, stride_dzl, stride_dzc, dilation,
                KERNEL_SIZE, BLOCK_L, BLOCK_C)
            w_k = tl.load(conv_w_ptr + offs_c * stride_wc + k * stride_wk, mask=mask_c, other=0.0).to(tl.float32)
            dx += dy * w_k[None, :]
            if k == KERNEL_SIZE - 1:  # unshifted tile: this program's share of the parameter gradients
                dgamma_acc += tl.sum(dz * xhat, axis=0)
                dbeta_acc += tl.sum(dz, axis=0)
                dconv_b_acc += tl.sum(dy, axis=0)
                for j in tl.static_range(KERNEL_SIZE):
                    src_l = offs_l - (KERNEL_SIZE - 1 - j) * dilation
                    tap_mask = ((src_l >= 0) & (src_l < L))[:, None] & mask_c[None, :]
                    x_tap = tl.load(x_row + offs_c[None, :] * stride_xc + src_l[:, None] * stride_xl,
                                    mask=tap_mask, other=0.0).to(tl.float32)
                    dconv_w_acc += tl.where(offs_k[:, None] == j, tl.sum(dy * x_tap, axis=0)[None, :], 0.0)
        dx_ptrs = dx_ptr + n.to(tl.int64) * stride_dxn + offs_c[None, :] * stride_dxc + offs_l[:, None] * stride_dxl
        tl.store(dx_ptrs, dx.to(dx_ptr.dtype.element_ty), mask=(offs_l < L)[:, None] & mask_c[None, :])
    partial_row = partials_ptr + pid.to(tl.int64) * (3 + KERNEL_SIZE) * C
    tl.store(partial_row + offs_c, dgamma_acc, mask=mask_c)
    tl.store(partial_row + C + offs_c, dbeta_acc, mask=mask_c)
    tl.store(partial_row + 2 * C + offs_c, dconv_b_acc, mask=mask_c)
    tl.store(partial_row + (3 + offs_k[:, None]) * C + offs_c[None, :], dconv_w_acc,
             mask=(offs_k < KERNEL_SIZE)[:, None] & mask_c[None, :])


# ----------------------------------------------------------------------------------------------------------
# Launchers and autograd for conv + LayerNorm
# ----------------------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _multiprocessor_count(device_index):
    return torch.cuda.get_device_properties(device_index).multi_processor_count


def _uses_triton(x):
    return x.device.type == "cuda" or (x.device.type == "cpu" and triton_interpreting())


def _next_power_of_2(n):
    return 1 << (n - 1).bit_length()  # triton.next_power_of_2 is a constexpr_function on 3.9: ~2 us a call


def _channel_block(channels):
    return max(16, _next_power_of_2(channels))


def _check_conv_norm_args(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps):
    check_tensor("x", x, dtypes=FLOAT_DTYPES, ndim=3)
    channels, length = x.shape[1], x.shape[2]
    for name, t, shape in (("conv_weight", conv_weight, None), ("conv_bias", conv_bias, (channels,)),
                           ("norm_weight", norm_weight, (channels,)), ("norm_bias", norm_bias, (channels,))):
        check_tensor(name, t, dtypes=FLOAT_DTYPES, like=x)
        if shape is not None and tuple(t.shape) != shape:
            raise ValueError(f"{name} must have shape {shape} for x of shape {tuple(x.shape)}, got {tuple(t.shape)}")
    if conv_weight.dim() != 3 or conv_weight.shape[:2] != (channels, 1) or conv_weight.shape[2] < 1:
        raise ValueError(f"conv_weight must have shape ({channels}, 1, kernel_size) (depthwise) for x of shape "
                         f"{tuple(x.shape)}, got {tuple(conv_weight.shape)}")
    if not isinstance(dilation, int) or dilation < 1:
        raise ValueError(f"dilation must be a positive int, got {dilation!r}")
    if not eps > 0:
        raise ValueError(f"eps must be positive, got {eps!r}")
    if channels * max(length, 1) >= 2**31:
        raise ValueError(f"x must have C * L < 2**31 (in-row offsets are int32), got shape {tuple(x.shape)}")


def _conv_norm_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps, save_stats,
                       block_l=None, num_warps=None):
    batch, channels, length = x.shape
    z = torch.empty((batch, length, channels), device=x.device, dtype=x.dtype)
    stats_shape = (batch, length) if save_stats else (1,)
    mean = torch.empty(stats_shape, device=x.device, dtype=torch.float32)
    rstd = torch.empty(stats_shape, device=x.device, dtype=torch.float32)
    if z.numel() == 0:
        return z, mean.zero_(), rstd.zero_()
    block_c = _channel_block(channels)
    block_l = block_l or max(16, min(64, 8192 // block_c))
    num_l_blocks = triton.cdiv(length, block_l)
    _conv_norm_fwd_kernel[(batch * num_l_blocks,)](
        x, conv_weight, conv_bias, norm_weight, norm_bias, z, mean, rstd,
        channels, length, num_l_blocks, eps, dilation,
        x.stride(0), x.stride(1), x.stride(2), conv_weight.stride(0), conv_weight.stride(2),
        z.stride(0), z.stride(1), z.stride(2),
        KERNEL_SIZE=conv_weight.shape[2], SAVE_STATS=save_stats, BLOCK_L=block_l, BLOCK_C=block_c,
        num_warps=num_warps or (4 if block_l * block_c <= 4096 else 8),
    )
    return z, mean, rstd


def _conv_norm_backward(dz, x, conv_weight, conv_bias, norm_weight, mean, rstd, dilation,
                        block_l=None, num_warps=None, target_programs=None):
    batch, channels, length = x.shape
    kernel_size = conv_weight.shape[2]
    block_c = _channel_block(channels)
    block_l = block_l or max(16, min(64, 4096 // block_c))
    num_l_blocks = triton.cdiv(length, block_l)
    # Enough programs to fill the GPU, few enough that the partial sums stay a small fraction of x.
    if target_programs is None:
        target_programs = 64 if x.device.type == "cpu" else 8 * _multiprocessor_count(x.device.index)
    tiles_per_program = max(1, min(num_l_blocks, (batch * num_l_blocks) // max(target_programs, 1)))
    programs_per_row = triton.cdiv(num_l_blocks, tiles_per_program)
    num_programs = batch * programs_per_row
    dx = torch.empty_like(x, memory_format=torch.contiguous_format)
    partials = torch.empty((num_programs, 3 + kernel_size, channels), device=x.device, dtype=torch.float32)
    _conv_norm_bwd_kernel[(num_programs,)](
        x, conv_weight, conv_bias, norm_weight, mean, rstd, dz, dx, partials,
        channels, length, tiles_per_program, programs_per_row, dilation,
        x.stride(0), x.stride(1), x.stride(2), conv_weight.stride(0), conv_weight.stride(2),
        dz.stride(0), dz.stride(1), dz.stride(2), dx.stride(0), dx.stride(1), dx.stride(2),
        KERNEL_SIZE=kernel_size, BLOCK_K=_next_power_of_2(kernel_size), BLOCK_L=block_l, BLOCK_C=block_c,
        num_warps=num_warps or (4 if block_l * block_c <= 4096 else 8),
    )
    sums = partials.sum(dim=0)
    dgamma, dbeta, dconv_b = sums[0], sums[1], sums[2]
    dconv_w = sums[3:].t().reshape(channels, 1, kernel_size)
    return dx, dconv_w, dconv_b, dgamma, dbeta


class _ConvNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps):
        z, mean, rstd = _conv_norm_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps,
                                           save_stats=True)
        ctx.save_for_backward(x, conv_weight, conv_bias, norm_weight, mean, rstd)
        ctx.dilation = dilation
        return z

    @staticmethod
    def backward(ctx, dz):
        x, conv_weight, conv_bias, norm_weight, mean, rstd = ctx.saved_tensors
        if x.numel() == 0:
            grads = (torch.zeros_like(x), torch.zeros_like(conv_weight), torch.zeros_like(conv_bias),
                     torch.zeros_like(norm_weight), torch.zeros_like(norm_weight))
        else:
            grads = _conv_norm_backward(dz, x, conv_weight, conv_bias, norm_weight, mean, rstd, ctx.dilation)
        params = (x, conv_weight, conv_bias, norm_weight, norm_weight)
        grads = [g.to(p.dtype) if needed else None
                 for g, p, needed in zip(grads, params, ctx.needs_input_grad[:5])]
        return (*grads, None, None)


def _conv_norm_eager(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps):
    """The Triton kernel's numerics in eager PyTorch: fp32 conv and statistics, one rounding to x's dtype."""
    y = causal_depthwise_conv(x.float(), conv_weight.float(), conv_bias.float(), dilation)
    z = F.layer_norm(y.transpose(1, 2), (x.shape[1],), norm_weight.float(), norm_bias.float(), eps)
    return z.to(x.dtype).contiguous()


def conv_norm(x, conv_weight, conv_bias, norm_weight, norm_bias, *, dilation=1, eps=1e-5):
    """LayerNorm over channels of the causal depthwise convolution of x (N, C, L); returns z of shape (N, L, C).

    Differentiable in x and all parameters (Triton backward when autograd needs it).
    Computes in fp32 whatever the input dtype; z has x's dtype."""
    _check_conv_norm_args(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    if not _uses_triton(x):
        return _conv_norm_eager(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    if torch.is_grad_enabled() and any(t.requires_grad for t in (x, conv_weight, conv_bias, norm_weight, norm_bias)):
        return _ConvNormFunction.apply(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    z, _, _ = _conv_norm_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps, save_stats=False)
    return z


def cheri_block_forward(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight,
                        fc2_bias, *, dilation=1, eps=1e-5):
    """The training-forward path: Triton conv + LayerNorm (with its Triton backward), then the eager MLP + residual."""
    z = conv_norm(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation=dilation, eps=eps)
    return mlp_residual(x, z, fc1_weight, fc1_bias, fc2_weight, fc2_bias)


# ----------------------------------------------------------------------------------------------------------
# Inference megakernel
# ----------------------------------------------------------------------------------------------------------
@triton.jit
def _bf16_dot(a, b, acc, EMULATE_BF16_DOT: tl.constexpr):
    if EMULATE_BF16_DOT:  # the interpreter's bf16 dot is wrong; bf16 x bf16 products are exact in fp32
        acc = tl.dot(a.to(tl.float32), b.to(tl.float32), acc, input_precision="ieee")
    else:
        acc = tl.dot(a, b, acc)
    return acc


@triton.jit
def _to_bf16(a, EMULATE_BF16_DOT: tl.constexpr):
    """Round-to-nearest-even fp32 -> bf16. The interpreter's cast truncates (biased dots, 1-ulp outputs)."""
    if EMULATE_BF16_DOT:
        bits = a.to(tl.int32, bitcast=True)
        bits = (bits + (0x7FFF + ((bits >> 16) & 1))) & -65536  # round the low 16 bits away (ties to even)
        a = bits.to(tl.float32, bitcast=True)  # now exactly representable: any cast mode keeps it
    return a.to(tl.bfloat16)


@triton.jit
def _dot_operand(a, DOT_MODE: tl.constexpr, EMULATE_BF16_DOT: tl.constexpr):
    """Splits an fp32 tile into the (hi, lo) operands DOT_MODE multiplies; lo is only read by bf16x3."""
    if DOT_MODE == 0:
        hi = _to_bf16(a, EMULATE_BF16_DOT)
        lo = hi
    elif DOT_MODE == 1:
        hi = _to_bf16(a, EMULATE_BF16_DOT)
        lo = _to_bf16(a - hi.to(tl.float32), EMULATE_BF16_DOT)
    else:
        hi = a
        lo = a
    return hi, lo


@triton.jit
def _mlp_dot(a_hi, a_lo, b_hi, b_lo, acc, DOT_MODE: tl.constexpr, EMULATE_BF16_DOT: tl.constexpr):
    if DOT_MODE == 0:
        acc = _bf16_dot(a_hi, b_hi, acc, EMULATE_BF16_DOT)
    elif DOT_MODE == 1:  # a*b ~ a_lo*b_hi + a_hi*b_lo + a_hi*b_hi: ~2^-16 relative, at bf16 tensor-core rate
        acc = _bf16_dot(a_lo, b_hi, acc, EMULATE_BF16_DOT)
        acc = _bf16_dot(a_hi, b_lo, acc, EMULATE_BF16_DOT)
        acc = _bf16_dot(a_hi, b_hi, acc, EMULATE_BF16_DOT)
    elif DOT_MODE == 2:
        acc = tl.dot(a_hi, b_hi, acc, input_precision="tf32x3")
    else:
        acc = tl.dot(a_hi, b_hi, acc, input_precision="ieee")
    return acc


@triton.jit
def _cheri_block_megakernel(
    x_ptr, out_ptr, conv_w_ptr, conv_b_ptr, gamma_ptr, beta_ptr,
    w1_hi_ptr, w1_lo_ptr, b1_ptr, w2_hi_ptr, w2_lo_ptr, b2_ptr,
    L, eps, dilation, rows_bucket,
    stride_xn, stride_xc, stride_xl, stride_on, stride_oc, stride_ol, stride_wc, stride_wk,
    stride_w1e, stride_w1c, stride_w2c, stride_w2e,
    C: tl.constexpr, HIDDEN: tl.constexpr, KERNEL_SIZE: tl.constexpr, DOT_MODE: tl.constexpr,
    EMULATE_BF16_DOT: tl.constexpr, BLOCK_L: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_E: tl.constexpr,
):
    """out = x + GELU(LayerNorm(conv(x)) @ W1^T + b1) @ W2^T + b2 for one (n, BLOCK_L positions) tile, out in x's dtype.
    Conv, statistics, GELU (erf), biases and both dot accumulators are fp32; dot operands follow DOT_MODE
    (bf16 / bf16x3 hi+lo splits / tf32x3 / ieee fp32). The hidden layer exists BLOCK_E columns at a time."""
    pid = tl.program_id(0)
    num_l_blocks = tl.cdiv(L, BLOCK_L)  # BLOCK_L comes from the autotuner
    n = pid // num_l_blocks
    offs_l = (pid % num_l_blocks) * BLOCK_L + tl.arange(0, BLOCK_L)
    offs_c = tl.arange(0, BLOCK_C)
    mask_l = offs_l < L
    mask_c = offs_c < C
    x_row = x_ptr + n.to(tl.int64) * stride_xn
    y = _causal_conv_tile(x_row, conv_w_ptr, conv_b_ptr, offs_l, offs_c, mask_c, L, stride_xc, stride_xl,
                          stride_wc, stride_wk, dilation, KERNEL_SIZE, BLOCK_L, BLOCK_C)
    xhat, _, _ = _layer_norm_tile(y, mask_c, C, eps)
    gamma = tl.load(gamma_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    beta = tl.load(beta_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)
    z = xhat * gamma[None, :] + beta[None, :]  # padded channels stay 0: they add nothing to the dots
    z_hi, z_lo = _dot_operand(z, DOT_MODE, EMULATE_BF16_DOT)

    acc = tl.zeros([BLOCK_L, BLOCK_C], dtype=tl.float32)
    for e0 in range(0, HIDDEN, BLOCK_E):
        offs_e = e0 + tl.arange(0, BLOCK_E)
        w1_offsets = offs_c[:, None] * stride_w1c + offs_e[None, :] * stride_w1e  # (BLOCK_C, BLOCK_E) = W1^T block
        w1_hi = tl.load(w1_hi_ptr + w1_offsets, mask=mask_c[:, None], other=0.0)
        w1_lo = w1_hi
        if DOT_MODE == 1:
            w1_lo = tl.load(w1_lo_ptr + w1_offsets, mask=mask_c[:, None], other=0.0)
        pre_act = tl.zeros([BLOCK_L, BLOCK_E], dtype=tl.float32) + tl.load(b1_ptr + offs_e).to(tl.float32)[None, :]
        pre_act = _mlp_dot(z_hi, z_lo, w1_hi, w1_lo, pre_act, DOT_MODE, EMULATE_BF16_DOT)
        hidden = 0.5 * pre_act * (1.0 + tl.math.erf(pre_act * 0.7071067811865476))  # exact GELU: x/2 (1 + erf(x/√2))
        h_hi, h_lo = _dot_operand(hidden, DOT_MODE, EMULATE_BF16_DOT)
        w2_offsets = offs_e[:, None] * stride_w2e + offs_c[None, :] * stride_w2c  # (BLOCK_E, BLOCK_C) = W2^T block
        w2_hi = tl.load(w2_hi_ptr + w2_offsets, mask=mask_c[None, :], other=0.0)
        w2_lo = w2_hi
        if DOT_MODE == 1:
            w2_lo = tl.load(w2_lo_ptr + w2_offsets, mask=mask_c[None, :], other=0.0)
        acc = _mlp_dot(h_hi, h_lo, w2_hi, w2_lo, acc, DOT_MODE, EMULATE_BF16_DOT)

    tile_mask = mask_l[:, None] & mask_c[None, :]
    residual = tl.load(x_row + offs_c[None, :] * stride_xc + offs_l[:, None] * stride_xl, mask=tile_mask, other=0.0)
    out = acc + tl.load(b2_ptr + offs_c, mask=mask_c, other=0.0).to(tl.float32)[None, :] + residual.to(tl.float32)
    out_ptrs = out_ptr + n.to(tl.int64) * stride_on + offs_c[None, :] * stride_oc + offs_l[:, None] * stride_ol
    if out_ptr.dtype.element_ty == tl.bfloat16:
        tl.store(out_ptrs, _to_bf16(out, EMULATE_BF16_DOT), mask=tile_mask)
    else:
        tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=tile_mask)


# (BLOCK_L, BLOCK_E, num_warps, num_stages); pruned to those whose BLOCK_E divides the hidden width.
# Every program re-reads all of W1 and W2 (256 KB in bf16 at C=128, E=512) from L2, so long L-tiles pay;
# few configs on purpose: each is compiled on the first call per dtype (the one-off cost the benchmark reports).
MEGAKERNEL_CONFIGS = [(64, 64, 4, 3), (128, 64, 8, 2), (128, 128, 8, 2), (256, 64, 16, 2)]


def _prune_megakernel_configs(configs, named_args, **kwargs):
    hidden, block_c = named_args.get("HIDDEN", kwargs.get("HIDDEN")), named_args.get("BLOCK_C", kwargs.get("BLOCK_C"))
    fitting = [c for c in configs if hidden % c.kwargs["BLOCK_E"] == 0
               and c.kwargs["BLOCK_L"] * block_c <= 32768 and c.kwargs["BLOCK_E"] * block_c <= 16384]
    if fitting:
        return fitting
    # E = 16 * odd, or very wide blocks: smaller tiles, slower (wide blocks may spill registers) but correct.
    block_e = 32 if hidden % 32 == 0 else 16
    block_l = max(16, min(64, 16384 // block_c))
    return [triton.Config({"BLOCK_L": block_l, "BLOCK_E": block_e}, num_warps=4, num_stages=2)]


_cheri_block_megakernel_autotuned = triton.autotune(
    configs=[triton.Config({"BLOCK_L": bl, "BLOCK_E": be}, num_warps=w, num_stages=s)
             for bl, be, w, s in MEGAKERNEL_CONFIGS],
    key=["C", "HIDDEN", "KERNEL_SIZE", "DOT_MODE", "rows_bucket"],
    prune_configs_by={"early_config_prune": _prune_megakernel_configs},
)(_cheri_block_megakernel)


class MlpDotWeights(NamedTuple):
    """The MLP weights as the megakernel multiplies them (what CheriBlock.eval() caches).

    mode "bf16": hi = W in bf16. "bf16x3": hi + lo = W (both bf16, lo = W - hi). "tf32x3"/"ieee": hi = W (fp32).
    Layouts are the nn.Linear ones: fc1 (E, C), fc2 (C, E); the kernel reads W1^T / W2^T blocks through strides."""
    mode: str
    fc1_hi: torch.Tensor
    fc1_lo: Optional[torch.Tensor]
    fc2_hi: torch.Tensor
    fc2_lo: Optional[torch.Tensor]


@triton.jit
def _split_bf16_kernel(fc1_ptr, fc2_ptr, fc1_hi_ptr, fc2_hi_ptr, fc1_lo_ptr, fc2_lo_ptr, numel,
                       WRITE_LO: tl.constexpr, EMULATE_BF16_DOT: tl.constexpr, BLOCK: tl.constexpr):
    """hi = bf16(w), lo = bf16(w - hi) for w = fc1 (program axis 1 = 0) or fc2 (= 1), from any float input,
    rounded to nearest even; w - hi is exact in fp32. One launch for both weights (the per-call cast)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < numel
    if tl.program_id(1) == 0:
        w = tl.load(fc1_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        hi_ptr, lo_ptr = fc1_hi_ptr, fc1_lo_ptr
    else:
        w = tl.load(fc2_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        hi_ptr, lo_ptr = fc2_hi_ptr, fc2_lo_ptr
    hi = _to_bf16(w, EMULATE_BF16_DOT)
    tl.store(hi_ptr + offs, hi, mask=mask)
    if WRITE_LO:
        tl.store(lo_ptr + offs, _to_bf16(w - hi.to(tl.float32), EMULATE_BF16_DOT), mask=mask)


def _split_bf16(fc1_weight, fc2_weight, write_lo):
    """(fc1_hi, fc1_lo, fc2_hi, fc2_lo) in bf16; the lo parts are None unless write_lo."""
    fc1_weight, fc2_weight = fc1_weight.detach().contiguous(), fc2_weight.detach().contiguous()
    parts = [torch.empty(w.shape, device=w.device, dtype=torch.bfloat16)
             for w in ((fc1_weight, fc2_weight) * (2 if write_lo else 1))]
    fc1_hi, fc2_hi = parts[0], parts[1]
    fc1_lo, fc2_lo = (parts[2], parts[3]) if write_lo else (None, None)
    if _uses_triton(fc1_weight):
        block = 1024
        _split_bf16_kernel[(triton.cdiv(fc1_weight.numel(), block), 2)](
            fc1_weight, fc2_weight, fc1_hi, fc2_hi, fc1_lo if write_lo else fc1_hi, fc2_lo if write_lo else fc2_hi,
            fc1_weight.numel(), WRITE_LO=write_lo, EMULATE_BF16_DOT=fc1_weight.device.type == "cpu", BLOCK=block)
    else:
        for weight, hi, lo in ((fc1_weight, fc1_hi, fc1_lo), (fc2_weight, fc2_hi, fc2_lo)):
            hi.copy_(weight)
            if write_lo:
                lo.copy_(weight.float() - hi.float())
    return fc1_hi, fc1_lo, fc2_hi, fc2_lo


def mlp_dot_mode(model_dtype, fp32_dot="bf16x3"):
    """bf16/fp16 models multiply bf16 weights; fp32 models use `fp32_dot` (fp32-accurate by default)."""
    check_choice("fp32_dot", fp32_dot, FP32_DOT_MODES)
    return fp32_dot if model_dtype == torch.float32 else "bf16"


def prepare_mlp_weights(fc1_weight, fc2_weight, fp32_dot="bf16x3"):
    """The bf16 weight cast (or fp32 hi/lo split) the megakernel reads; CheriBlock caches this in eval mode."""
    check_tensor("fc1_weight", fc1_weight, dtypes=FLOAT_DTYPES, ndim=2)
    check_tensor("fc2_weight", fc2_weight, dtypes=FLOAT_DTYPES, ndim=2, like=fc1_weight)
    if fc2_weight.dtype != fc1_weight.dtype or fc2_weight.shape != fc1_weight.shape[::-1]:
        raise ValueError(f"fc2_weight must be ({fc1_weight.shape[1]}, {fc1_weight.shape[0]}) in "
                         f"{fc1_weight.dtype} like fc1_weight, got {tuple(fc2_weight.shape)} in {fc2_weight.dtype}")
    mode = mlp_dot_mode(fc1_weight.dtype, fp32_dot)
    with torch.no_grad():
        if mode in ("tf32x3", "ieee"):
            return MlpDotWeights(mode, fc1_weight.detach(), None, fc2_weight.detach(), None)
        if fc1_weight.dtype == torch.bfloat16:  # already the dot dtype: no copy
            return MlpDotWeights(mode, fc1_weight.detach(), None, fc2_weight.detach(), None)
        return MlpDotWeights(mode, *_split_bf16(fc1_weight, fc2_weight, write_lo=mode == "bf16x3"))


def _megakernel_eager(x, conv_weight, conv_bias, norm_weight, norm_bias, weights, fc1_bias, fc2_bias, dilation, eps):
    """The megakernel's numerics in eager PyTorch (CPU without the interpreter): fp32 everywhere except that the
    dot operands are rounded as the kernel rounds them (bf16; bf16 hi+lo for bf16x3; fp32 otherwise)."""
    def operands(t):
        if weights.mode == "bf16":
            return [t.to(torch.bfloat16).float()]
        if weights.mode == "bf16x3":
            hi = t.to(torch.bfloat16)
            return [hi.float(), (t - hi.float()).to(torch.bfloat16).float()]
        return [t]

    def dot(a, w_hi, w_lo):  # a @ W^T with W = w_hi (+ w_lo), both from MlpDotWeights
        a_parts = operands(a)
        out = a_parts[0] @ w_hi.float().t()
        if weights.mode == "bf16x3":
            out = a_parts[1] @ w_hi.float().t() + a_parts[0] @ w_lo.float().t() + out
        return out

    z = _conv_norm_eager(x.float(), conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    hidden = F.gelu(dot(z, weights.fc1_hi, weights.fc1_lo) + fc1_bias.float())
    out = dot(hidden, weights.fc2_hi, weights.fc2_lo) + fc2_bias.float()
    return (x.float() + out.transpose(1, 2)).to(x.dtype)


def cheri_block_megakernel(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_weight, fc1_bias, fc2_weight,
                           fc2_bias, *, dilation=1, eps=1e-5, mlp_weights=None, fp32_dot="bf16x3", config=None):
    """The inference path: conv, LayerNorm, MLP and residual of the Cheri Block in one Triton kernel (no autograd).

    Needs the hidden width E = fc1_weight.shape[0] to be a multiple of 16. `mlp_weights` is a cached
    `prepare_mlp_weights(...)`; without it the cast happens here, every call. `config` = (BLOCK_L, BLOCK_E,
    num_warps, num_stages) skips autotuning (benchmark variants). Output: x's dtype, shape and device."""
    _check_conv_norm_args(x, conv_weight, conv_bias, norm_weight, norm_bias, dilation, eps)
    channels = x.shape[1]
    hidden_width = fc1_weight.shape[0]
    for name, t, shape in (("fc1_weight", fc1_weight, (hidden_width, channels)),
                           ("fc1_bias", fc1_bias, (hidden_width,)),
                           ("fc2_weight", fc2_weight, (channels, hidden_width)), ("fc2_bias", fc2_bias, (channels,))):
        check_tensor(name, t, dtypes=FLOAT_DTYPES, like=x)
        if tuple(t.shape) != shape:
            raise ValueError(f"{name} must have shape {shape} for x of shape {tuple(x.shape)}, got {tuple(t.shape)}")
    if hidden_width % 16:
        raise ValueError(f"the megakernel needs a hidden width (fc1_weight.shape[0]) that is a multiple of 16, "
                         f"got {hidden_width}; use cheri_block_forward")
    if mlp_weights is None:
        mlp_weights = prepare_mlp_weights(fc1_weight, fc2_weight, fp32_dot)
    elif mlp_weights.mode != mlp_dot_mode(x.dtype, fp32_dot) or mlp_weights.fc1_hi.shape != fc1_weight.shape:
        raise ValueError(f"mlp_weights must be prepare_mlp_weights(...) for a {x.dtype} model with fp32_dot="
                         f"{fp32_dot!r} (mode {mlp_dot_mode(x.dtype, fp32_dot)!r}, fc1 {tuple(fc1_weight.shape)}), "
                         f"got mode {mlp_weights.mode!r}, fc1 {tuple(mlp_weights.fc1_hi.shape)}")
    dot_dtype = torch.float32 if mlp_weights.mode in ("tf32x3", "ieee") else torch.bfloat16
    for name in ("fc1_hi", "fc1_lo", "fc2_hi", "fc2_lo"):
        part = getattr(mlp_weights, name)
        if part is not None:
            check_tensor(f"mlp_weights.{name}", part, dtypes=(dot_dtype,), like=x)
            if part.shape != getattr(mlp_weights, name[:3] + "_hi").shape or part.stride() != getattr(
                    mlp_weights, name[:3] + "_hi").stride():
                raise ValueError(f"mlp_weights.{name} must match the hi part's shape and strides")
    if config is not None and hidden_width % config[1]:
        raise ValueError(f"config BLOCK_E={config[1]} must divide the hidden width {hidden_width}")
    return run_megakernel(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights,
                          dilation, eps, config)


def run_megakernel(x, conv_weight, conv_bias, norm_weight, norm_bias, fc1_bias, fc2_bias, mlp_weights, dilation,
                   eps, config=None):
    """cheri_block_megakernel without argument checks, for callers that own validated parameters (CheriBlock):
    at small N the Python around the launch is a visible part of the call."""
    if not _uses_triton(x):
        return _megakernel_eager(x, conv_weight, conv_bias, norm_weight, norm_bias, mlp_weights, fc1_bias, fc2_bias,
                                 dilation, eps)
    batch, channels, length = x.shape
    out = torch.empty_like(x, memory_format=torch.contiguous_format)
    if out.numel() == 0:
        return out
    fc1_hi, fc2_hi = mlp_weights.fc1_hi, mlp_weights.fc2_hi
    fc1_lo = fc1_hi if mlp_weights.fc1_lo is None else mlp_weights.fc1_lo
    fc2_lo = fc2_hi if mlp_weights.fc2_lo is None else mlp_weights.fc2_lo
    hidden_width = fc1_hi.shape[0]
    interpreting = x.device.type == "cpu"
    launch_args = dict(
        C=channels, HIDDEN=hidden_width, KERNEL_SIZE=conv_weight.shape[2],
        DOT_MODE=_DOT_MODE_CODES[mlp_weights.mode], EMULATE_BF16_DOT=interpreting, BLOCK_C=_channel_block(channels))
    if interpreting and config is None:  # the interpreter: no autotuning; few, mid-sized tiles run fastest
        config = (32, next(b for b in (64, 32, 16) if hidden_width % b == 0), 4, 1)
    if config is not None:
        block_l, block_e, num_warps, num_stages = config
        kernel = _cheri_block_megakernel
        launch_args.update(BLOCK_L=block_l, BLOCK_E=block_e, num_warps=num_warps, num_stages=num_stages)
    else:
        kernel = _cheri_block_megakernel_autotuned

    def grid(meta):
        return (batch * triton.cdiv(length, meta["BLOCK_L"]),)

    # rows_bucket only keys the autotuner: tiny and huge batches may prefer different tiles.
    rows_bucket = min(max(_next_power_of_2(batch * length), 2**12), 2**20)
    kernel[grid](
        x, out, conv_weight, conv_bias, norm_weight, norm_bias,
        fc1_hi, fc1_lo, fc1_bias, fc2_hi, fc2_lo, fc2_bias,
        length, eps, dilation, rows_bucket,
        *x.stride(), *out.stride(), conv_weight.stride(0), conv_weight.stride(2), *fc1_hi.stride(), *fc2_hi.stride(),
        **launch_args,
    )
    return out
