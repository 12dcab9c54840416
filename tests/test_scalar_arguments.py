"""numpy scalars (as configs and sweeps hand them over) are taken wherever a Python int or float is, and give the
same result bit for bit; a bool or a tensor is still refused by name."""
import numpy as np
import pytest
import torch

from greyhound import (CheriBlock, causal_conv1d, causal_conv1d_update, chunked_linear_cross_entropy,
                       cross_entropy_with_grad, linear_logprobs, logprobs)


def test_cross_entropy_options_take_numpy_scalars(device):
    logits = torch.randn(6, 50, device=device)
    target = torch.randint(0, 50, (6,), device=device)
    target[2] = 7
    python = cross_entropy_with_grad(logits, target, ignore_index=7, label_smoothing=0.1, softcap=20.0)
    numpy_ = cross_entropy_with_grad(logits, target, ignore_index=np.int64(7), label_smoothing=np.float32(0.1),
                                     softcap=np.float32(20.0))
    assert torch.equal(numpy_, python)
    with pytest.raises(TypeError, match="ignore_index must be an int, got bool"):
        cross_entropy_with_grad(logits, target, ignore_index=True)


def test_linear_ops_take_numpy_chunk_sizes_and_temperatures(device):
    x = torch.randn(9, 16, device=device)
    weight = torch.randn(40, 16, device=device)
    target = torch.randint(0, 40, (9,), device=device)
    python = chunked_linear_cross_entropy(x, weight, target, chunk_size=4, ignore_index=3)
    numpy_ = chunked_linear_cross_entropy(x, weight, target, chunk_size=np.int32(4), ignore_index=np.int16(3))
    assert torch.equal(numpy_, python)
    assert torch.equal(linear_logprobs(x, weight, target, chunk_size=np.int64(4), temperature=np.float32(0.5)),
                       linear_logprobs(x, weight, target, chunk_size=4, temperature=float(np.float32(0.5))))
    logits = torch.randn(5, 30, device=device)
    labels = torch.randint(0, 30, (5,), device=device)
    assert torch.equal(logprobs(logits, labels, temperature=np.float16(2.0)), logprobs(logits, labels, temperature=2.0))


def test_conv_and_block_take_numpy_ints(device):
    x = torch.randn(2, 8, 20, device=device)
    weight, bias = torch.randn(8, 3, device=device), torch.randn(8, device=device)
    assert torch.equal(causal_conv1d(x, weight, bias, dilation=np.int64(2)), causal_conv1d(x, weight, bias, dilation=2))
    state = torch.randn(2, 8, 4, device=device)
    states = [state.clone(), state.clone()]
    x_t = torch.randn(2, 8, device=device)
    assert torch.equal(causal_conv1d_update(x_t, states[0], weight, bias, dilation=np.int32(2)),
                       causal_conv1d_update(x_t, states[1], weight, bias, dilation=2))
    assert torch.equal(states[0], states[1])
    torch.manual_seed(1)
    block_numpy = CheriBlock(np.int64(16), np.int64(3), np.int32(2), np.int8(4), device=device)
    torch.manual_seed(1)
    block_python = CheriBlock(16, 3, 2, 4, device=device)
    assert block_numpy.dilation == 2 and type(block_numpy.dilation) is int
    x = torch.randn(2, 16, 24, device=device)
    assert torch.equal(block_numpy(x), block_python(x))
    with pytest.raises(ValueError, match="dilation must be a positive int, got True"):
        CheriBlock(16, 3, True)
