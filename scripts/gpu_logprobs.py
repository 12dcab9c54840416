#!/usr/bin/env python3
"""H200 check and timing of greyhound.ops.logprobs (logprobs, linear_logprobs); one call, about a minute.

1. Correctness on CUDA against the fp64 reference (fp32/fp16/bf16, entropy, temperature, gradients, odd and
   > 262144 vocabularies, strided logits, -inf logits, a logits tensor of > 2^31 elements, the linear form).
2. Timing with triton.testing.do_bench (median) at BT=8192, V=128256 bf16 (forward, forward+backward) for
   greyhound, kernel config variants, torch-eager, torch.compile of the reference and importable peers; the
   linear form at BT=8192, H=4096, V=128256 bf16. Peak extra CUDA memory of one call for each.
3. A compact table last; everything as JSON in --out (default $OUT/gpu_logprobs.json).

Usage (repo root): python3 scripts/gpu_logprobs.py [--out PATH] [--budget-s 85] [--quick]
--quick: greyhound rows only (no torch.compile / eager / peers, no linear chunk variants), for a tuning run.
"""
import argparse
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import torch  # noqa: E402
import triton  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from _checks import make_check, rel_err  # noqa: E402
from greyhound.ops import _fp32_gemm  # noqa: E402
from greyhound.ops import logprobs as ops  # noqa: E402
from greyhound.ops.logprobs import (  # noqa: E402
    linear_logprobs, linear_logprobs_reference, logprobs, logprobs_reference)

COPY_BYTES_PER_S = 4.27e12  # measured H200 copy bandwidth (docs/perf/logprobs.md)
BF16_FLOPS_PER_S = 694e12  # measured H200 bf16 matmul
DEVICE = "cuda"
BT, V, H = 8192, 128256, 4096  # the shapes (timing, and the vocabulary of the correctness checks)
BIG_V, ODD_V, HUGE = 262144 + 77, 50257, (16400, 131072)  # HUGE: a bf16 logits tensor of > 2^31 elements
GRAD_TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 2e-2}
START = time.time()
QUICK = "--quick" in sys.argv
RESULTS = {"device": None, "versions": {}, "checks": [], "timings": [], "skipped": []}


check = make_check(RESULTS)


# ----------------------------------------------------------------------------------------------------------------
# 1. correctness
# ----------------------------------------------------------------------------------------------------------------
def guarded(name, fn, *args, **kwargs):
    """Run one check; an exception (a compile error on this Triton, OOM) is a FAIL line, and the run goes on."""
    try:
        fn(*args, **kwargs)
    except Exception as error:
        check(f"{name} raised {type(error).__name__}: {str(error)[:200]}", math.inf, 0.0)
    torch.cuda.empty_cache()


def check_logprobs(name, logits, target, temperature=1.0, grads=("logprob", "entropy")):
    ours_in = logits.detach().clone().requires_grad_()
    ref_in = logits.detach().double().requires_grad_()
    lp, ent = logprobs(ours_in, target, temperature=temperature, return_entropy=True)
    ref_lp, ref_ent = logprobs_reference(ref_in, target, temperature=temperature, return_entropy=True)
    check(f"{name} logprob", rel_err(lp, ref_lp), 1e-5)
    check(f"{name} entropy", rel_err(ent, ref_ent), 1e-5)
    g_lp, g_ent = torch.randn_like(ref_lp), torch.randn_like(ref_ent)
    ours_loss = sum((o * g.float()).sum() for o, g, k in ((lp, g_lp, "logprob"), (ent, g_ent, "entropy")) if k in grads)
    ref_loss = sum((o * g).sum() for o, g, k in ((ref_lp, g_lp, "logprob"), (ref_ent, g_ent, "entropy")) if k in grads)
    ours_loss.backward()
    ref_loss.backward()
    check(f"{name} grad[{'+'.join(grads)}]", rel_err(ours_in.grad, ref_in.grad), GRAD_TOLERANCE[logits.dtype])


def check_huge():
    """> 2^31 elements: int64 offsets. Checked on the first and last rows only (the reference is fp64)."""
    rows, width = HUGE
    huge = torch.randn(rows, width, device=DEVICE, dtype=torch.bfloat16).requires_grad_()
    target = torch.randint(0, width, (rows,), device=DEVICE)
    lp = logprobs(huge, target)
    (grad,) = torch.autograd.grad(lp, huge, torch.ones_like(lp))
    ends = torch.cat([torch.arange(4, device=DEVICE), torch.arange(rows - 4, rows, device=DEVICE)])
    ref_in = huge.detach()[ends].double().requires_grad_()
    ref = logprobs_reference(ref_in, target[ends])
    ref.sum().backward()
    check(f"bf16 {rows}x{width} (> 2^31 elements) logprob, end rows", rel_err(lp[ends], ref), 1e-5)
    check(f"bf16 {rows}x{width} (> 2^31 elements) grad, end rows", rel_err(grad[ends], ref_in.grad), 2e-2)


def check_linear(tag, dtype, n_rows, hidden_size, vocab, chunk_size):
    hidden = torch.randn(n_rows, hidden_size, device=DEVICE).to(dtype)
    weight = (torch.randn(vocab, hidden_size, device=DEVICE) / hidden_size**0.5).to(dtype)
    bias = torch.randn(vocab, device=DEVICE).to(dtype)
    target = torch.randint(0, vocab, (n_rows,), device=DEVICE)
    leaves = [t.clone().requires_grad_() for t in (hidden, weight, bias)]
    refs = [t.double().requires_grad_() for t in (hidden, weight, bias)]
    lp, ent = linear_logprobs(leaves[0], leaves[1], target, leaves[2], temperature=0.9, return_entropy=True,
                              chunk_size=chunk_size)
    ref_lp, ref_ent = linear_logprobs_reference(refs[0], refs[1], target, refs[2], temperature=0.9,
                                                return_entropy=True)
    tol = GRAD_TOLERANCE[dtype]
    check(f"{tag} logprob", rel_err(lp, ref_lp), tol)
    check(f"{tag} entropy", rel_err(ent, ref_ent), tol)
    g_lp, g_ent = torch.randn_like(ref_lp), torch.randn_like(ref_ent)
    ((lp * g_lp.float()).sum() + (ent * g_ent.float()).sum()).backward()
    ((ref_lp * g_lp).sum() + (ref_ent * g_ent).sum()).backward()
    for name, leaf, ref in zip(("hidden", "weight", "bias"), leaves, refs):
        check(f"{tag} grad {name}", rel_err(leaf.grad, ref.grad), tol)


def check_unchecked_targets():
    """check_target=False: out-of-range targets give nan rows (logprob and gradient), no error; others exact."""
    logits = (torch.randn(8, 257, V, device=DEVICE) * 3).bfloat16()
    target = torch.randint(0, V, (8, 257), device=DEVICE)
    bad = target.clone()
    bad[0, 5], bad[3, 7] = V, -1
    leaf = logits.clone().requires_grad_()
    lp = logprobs(leaf, bad, check_target=False)
    lp.sum().backward()
    is_bad = (bad < 0) | (bad >= V)
    ref_in = logits.double().requires_grad_()
    ref = logprobs_reference(ref_in, torch.where(is_bad, 0, bad))
    ref.sum().backward()
    nan_rows = bool(lp[is_bad].isnan().all() and leaf.grad[is_bad].isnan().all())
    check("check_target=False: bad rows nan", 0.0 if nan_rows else math.inf, 0.0)
    check("check_target=False: other rows logprob", rel_err(lp[~is_bad], ref[~is_bad]), 1e-5)
    check("check_target=False: other rows grad", rel_err(leaf.grad[~is_bad], ref_in.grad[~is_bad]), 2e-2)


def correctness():
    dev = DEVICE
    guarded("check_target=False", check_unchecked_targets)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        tag = str(dtype).replace("torch.", "")
        logits = (torch.randn(8, 257, V, device=dev) * 3).to(dtype)
        target = torch.randint(0, V, (8, 257), device=dev)
        guarded(tag, check_logprobs, f"{tag} (8,257,V={V}) T=1", logits, target)
    # One upstream gradient absent (None): other kernel specialisations; bf16 only, to keep compiles few.
    guarded("bf16 logprob-grad only", check_logprobs, f"bfloat16 (8,257,V={V}) T=0.7 logprob-grad only",
            logits, target, 0.7, grads=("logprob",))
    guarded("bf16 entropy-grad only", check_logprobs, f"bfloat16 (8,257,V={V}) T=1.3 entropy-grad only",
            logits, target, 1.3, grads=("entropy",))
    logits = (torch.randn(64, BIG_V, device=dev) * 3).bfloat16()
    guarded("bf16 big V", check_logprobs, f"bf16 (64,V={BIG_V})", logits, torch.randint(0, BIG_V, (64,), device=dev))
    full = (torch.randn(4, 130, ODD_V, device=dev) * 3).bfloat16()  # odd V: unaligned rows, scalar loads
    guarded("bf16 strided", check_logprobs, f"bf16 logits[:, :-1] (4,129,V={ODD_V})", full[:, :-1],
            torch.randint(0, ODD_V, (4, 129), device=dev))
    logits = (torch.randn(256, ODD_V, device=dev) * 3).float()
    logits[:, : ODD_V // 8] = float("-inf")
    guarded("fp32 -inf", check_logprobs, "fp32 -inf in the first eighth of V", logits,
            torch.randint(ODD_V // 8, ODD_V, (256,), device=dev))
    del logits, full
    guarded("bf16 > 2^31 elements", check_huge)
    fused = _fp32_gemm._cublas_accumulates_into_fp32(torch.empty(0, device=dev).device, torch.bfloat16)
    RESULTS["fused_fp32_addmm"] = fused
    print(f"grad_hidden accumulation: {'one addmm(out_dtype=fp32)' if fused else 'fp32 GEMMs on upcast copies'}")
    for dtype, n_rows, hidden_size, vocab in ((torch.bfloat16, 1000, H, V), (torch.float16, 300, H // 4, ODD_V),
                                              (torch.float32, 300, H // 8, ODD_V)):
        for chunk_size in (None, 128):
            tag = f"linear {str(dtype).replace('torch.', '')} N={n_rows},H={hidden_size},V={vocab} chunk={chunk_size}"
            guarded(tag, check_linear, tag, dtype, n_rows, hidden_size, vocab, chunk_size)


# ----------------------------------------------------------------------------------------------------------------
# 2. timing
# ----------------------------------------------------------------------------------------------------------------
def measure(job, budget_s):
    """Median ms by do_bench and peak extra CUDA memory of one call; errors are recorded, not raised."""
    kernel, provider, mode, shape, fn, extra = job
    if time.time() - START > budget_s:
        RESULTS["skipped"].append(f"{kernel}/{provider}/{mode}")
        print(f"skip {kernel}/{provider}/{mode}: past the {budget_s:.0f} s budget", flush=True)
        return
    grad_to_none = extra.get("grad_to_none")
    row = {"kernel": kernel, "provider": provider, "mode": mode, "shape": shape}
    try:
        fn()  # compile / autotune outside the timing
        torch.cuda.synchronize()
        row["ms"] = do_bench(fn, warmup=25, rep=100, grad_to_none=grad_to_none, return_mode="median")
        for tensor in grad_to_none or ():
            tensor.grad = None
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        out = fn()
        torch.cuda.synchronize()
        row["extra_mib"] = (torch.cuda.max_memory_allocated() - before) / 2**20
        del out
        for tensor in grad_to_none or ():
            tensor.grad = None
        if "bytes" in extra:
            row["floor_ms"] = extra["bytes"] / COPY_BYTES_PER_S * 1e3
            row["GB/s"] = extra["bytes"] / row["ms"] / 1e6
        if "flops" in extra:
            row["floor_ms"] = extra["flops"] / BF16_FLOPS_PER_S * 1e3
            row["TFLOP/s"] = extra["flops"] / row["ms"] / 1e9
    except Exception as error:  # a peer's API drift must not stop the run
        row["error"] = f"{type(error).__name__}: {str(error)[:200]}"
    RESULTS["timings"].append(row)
    shown = f"{row['ms']:.4f} ms, extra {row['extra_mib']:.1f} MiB" if "ms" in row else row["error"]
    print(f"time {kernel:16s} {provider:40s} {mode:8s} {shown}", flush=True)
    torch.cuda.empty_cache()


def peers():
    found = {}
    try:
        from liger_kernel.transformers.functional import liger_cross_entropy
        found["liger-ce(none)"] = lambda x, t: -liger_cross_entropy(x, t, reduction="none")
    except Exception as error:
        print(f"liger cross entropy not importable: {error}")
    try:
        from fla.modules import FusedCrossEntropyLoss
        fla_loss = FusedCrossEntropyLoss(reduction="none")
        found["fla-ce(none)"] = lambda x, t: -fla_loss(x, t)
    except Exception as error:
        print(f"fla cross entropy not importable: {error}")
    return found


def linear_peers():
    found = {}
    try:
        from cut_cross_entropy import linear_cross_entropy
        found["cce(none)"] = lambda h, w, t: -linear_cross_entropy(h, w, t, reduction="none")
    except Exception as error:
        print(f"cut-cross-entropy not importable: {error}")
    try:
        from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss
        liger_loss = LigerFusedLinearCrossEntropyLoss(reduction="none")
        found["liger-flce(none)"] = lambda h, w, t: -liger_loss(w, h, t)
    except Exception as error:
        print(f"liger fused linear cross entropy not importable: {error}")
    return found


def no_grad(fn):
    def run():
        with torch.no_grad():
            return fn()
    return run


def logprobs_jobs():
    """(priority, job): priority 0 = the numbers the issue asks for, run first in case the time budget runs out."""
    shape = f"BT={BT},V={V},bf16"
    read_once = BT * V * 2
    logits = torch.randn(BT, V, device=DEVICE, dtype=torch.bfloat16)
    target = torch.randint(0, V, (BT,), device=DEVICE)
    grad_out = torch.randn(BT, device=DEVICE)
    x = logits.clone().requires_grad_()
    eager = lambda x, t: torch.gather(x.float().log_softmax(-1), -1, t[:, None]).squeeze(-1)  # noqa: E731
    compiled = torch.compile(logprobs_reference)
    fwd, full = dict(bytes=read_once), dict(bytes=3 * read_once, grad_to_none=[x])

    def with_entropy():
        lp, ent = logprobs(x, target, return_entropy=True)
        torch.autograd.backward((lp, ent), (grad_out, grad_out))

    def job(provider, mode, fn, extra):
        return ("logprobs", provider, mode, shape, no_grad(fn) if mode == "forward" else fn, extra)

    unchecked = dict(check_target=False)
    jobs = [
        (0, job("greyhound", "forward", lambda: logprobs(logits, target), fwd)),
        (0, job("greyhound check_target=False", "forward", lambda: logprobs(logits, target, **unchecked), fwd)),
        (0, job("torch-compile", "forward", lambda: compiled(logits, target), fwd)),
        (0, job("greyhound", "full", lambda: logprobs(x, target).backward(grad_out), full)),
        (0, job("greyhound check_target=False", "full", lambda: logprobs(x, target, **unchecked).backward(grad_out),
                full)),
        (0, job("torch-compile", "full", lambda: compiled(x, target).backward(grad_out), full)),
        (1, job("greyhound+entropy", "forward", lambda: logprobs(logits, target, return_entropy=True), fwd)),
        (1, job("greyhound+entropy", "full", with_entropy, full)),
        (2, job("torch-eager", "forward", lambda: eager(logits, target), fwd)),
        (2, job("torch-eager", "full", lambda: eager(x, target).backward(grad_out), full)),
    ]
    if QUICK:
        jobs = [(p, j) for p, j in jobs if j[1].startswith("greyhound")]
    # Kernel variants without the public function's target check (its cost = greyhound minus the default row).
    outputs = ops._forward_outputs(BT, False, logits.device)
    outputs_entropy = ops._forward_outputs(BT, True, logits.device)
    default = ops._forward_config(V)
    # v2 (H200): a persistent grid of 2048/4 programs, 4 or 6 per SM, measured 0.74 / 0.59 ms: dropped
    for config in (default, (4096, 8, True), (1024, 2, True)):
        tag = f"kernel BLOCK_V={config[0]},w={config[1]},pf={int(config[2])}{' (default)' if config == default else ''}"
        forward = lambda c=config: ops._launch_forward(logits, target, 1.0, outputs, c)  # noqa: E731
        jobs.append((1, job(tag, "forward", forward, fwd)))
    for config in (default, (4096, 8, True)):
        jobs.append((1, job(f"kernel+entropy BLOCK_V={config[0]},w={config[1]}", "forward",
                            lambda c=config: ops._launch_forward(logits, target, 1.0, outputs_entropy, c), fwd)))
    _, row_max, log2_sum, _ = ops._launch_forward(logits, target, 1.0, ops._forward_outputs(BT, False, logits.device))
    for config in (ops._backward_config(V), (4096, 8), (1024, 2)):
        backward = lambda c=config: ops._launch_backward(  # noqa: E731
            logits, target, row_max, log2_sum, None, grad_out, None, 1.0, config=c)
        jobs.append((1, job(f"backward kernel BLOCK_V={config[0]},w={config[1]}", "backward", backward,
                            dict(bytes=2 * read_once))))
    for name, peer in ({} if QUICK else peers()).items():
        peer_x = logits.clone().requires_grad_()  # liger writes gradients into its input: a copy of its own
        jobs.append((2, job(name, "forward", lambda p=peer, z=peer_x: p(z.detach(), target), fwd)))
        jobs.append((2, job(name, "full", lambda p=peer, z=peer_x: p(z, target).backward(grad_out),
                            dict(full, grad_to_none=[peer_x]))))
    return jobs


def linear_jobs():
    shape = f"BT={BT},H={H},V={V},bf16"
    gemm = 2 * BT * H * V
    hidden = torch.randn(BT, H, device=DEVICE, dtype=torch.bfloat16)
    weight = (torch.randn(V, H, device=DEVICE) / H**0.5).bfloat16()
    target = torch.randint(0, V, (BT,), device=DEVICE)
    grad_out = torch.randn(BT, device=DEVICE)
    h, w = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
    compiled = torch.compile(linear_logprobs_reference)
    fwd, full = dict(flops=gemm), dict(flops=3 * gemm, grad_to_none=[h, w])
    auto_chunk = ops._auto_chunk_rows(BT, V, 2)

    def job(provider, mode, fn, extra):
        return ("linear_logprobs", provider, mode, shape, no_grad(fn) if mode == "forward" else fn, extra)

    jobs = []
    for priority, chunk in ((0, None),) if QUICK else ((0, None), (1, 512), (1, 4096)):
        name = f"greyhound chunk={chunk or f'auto({auto_chunk})'}"
        forward = lambda c=chunk: linear_logprobs(hidden, weight, target, chunk_size=c)  # noqa: E731
        forward_backward = lambda c=chunk: linear_logprobs(h, w, target, chunk_size=c).backward(grad_out)  # noqa: E731
        jobs.append((priority, job(name, "forward", forward, fwd)))
        jobs.append((priority, job(name, "full", forward_backward, full)))
    if QUICK:
        return jobs
    jobs += [
        (0, job("torch-compile", "forward", lambda: compiled(hidden, weight, target), fwd)),
        (0, job("torch-compile", "full", lambda: compiled(h, w, target).backward(grad_out), full)),
        (2, job("torch-eager", "forward", lambda: linear_logprobs_reference(hidden, weight, target), fwd)),
        (2, job("torch-eager", "full", lambda: linear_logprobs_reference(h, w, target).backward(grad_out), full)),
    ]
    for name, peer in linear_peers().items():
        jobs.append((2, job(name, "forward", lambda p=peer: p(hidden, weight, target), fwd)))
        jobs.append((2, job(name, "full", lambda p=peer: p(h, w, target).backward(grad_out), full)))
    return jobs


def table():
    print("\n| kernel | provider | mode | ms | floor ms | GB/s or TFLOP/s | extra MiB |")
    print("|---|---|---|---|---|---|---|")
    for row in RESULTS["timings"]:
        if "error" in row:
            print(f"| {row['kernel']} | {row['provider']} | {row['mode']} | error: {row['error'][:80]} | | | |")
            continue
        rate = f"{row['GB/s']:.0f} GB/s" if "GB/s" in row else f"{row.get('TFLOP/s', 0):.0f} TFLOP/s"
        print(f"| {row['kernel']} | {row['provider']} | {row['mode']} | {row['ms']:.4f} | "
              f"{row.get('floor_ms', math.nan):.3f} | {rate} | {row['extra_mib']:.1f} |")
    failed = [c["name"] for c in RESULTS["checks"] if not c["pass"]]
    print(f"\nchecks: {len(RESULTS['checks']) - len(failed)} PASS, {len(failed)} FAIL"
          + (f" ({'; '.join(failed)})" if failed else ""))
    if RESULTS["skipped"]:
        print(f"skipped for time: {', '.join(RESULTS['skipped'])}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gpu_logprobs.json"))
    parser.add_argument("--budget-s", type=float, default=85.0, help="skip timings that would start after this")
    parser.add_argument("--skip-correctness", action="store_true")
    parser.add_argument("--quick", action="store_true", help="greyhound rows only (no peers, compile, eager)")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("needs a CUDA device")
    RESULTS["device"] = torch.cuda.get_device_name()
    RESULTS["versions"] = {"torch": torch.__version__, "triton": triton.__version__}
    print(f"{RESULTS['device']}, torch {torch.__version__}, triton {triton.__version__}", flush=True)
    torch.manual_seed(0)
    try:
        if not args.skip_correctness:
            correctness()
        print(f"correctness done at {time.time() - START:.0f} s", flush=True)
        jobs = logprobs_jobs() + linear_jobs()
        for _, job in sorted(jobs, key=lambda item: item[0]):  # stable: the numbers first
            measure(job, args.budget_s)
        order = {(job[0], job[1], job[2]): i for i, (_, job) in enumerate(jobs)}
        RESULTS["timings"].sort(key=lambda row: order[(row["kernel"], row["provider"], row["mode"])])
    finally:  # whatever ran is written, even if something above raised
        RESULTS["wall_s"] = time.time() - START
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(RESULTS, f, indent=1)
        table()
        print(f"wrote {args.out} after {RESULTS['wall_s']:.0f} s")


if __name__ == "__main__":
    main()
