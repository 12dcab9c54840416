#!/usr/bin/env python3
"""H200 check and timing of greyhound.ops.cross_entropy and greyhound.ops.linear_cross_entropy; one call, < 90 s.

1. Correctness on CUDA against fp64 references: cross_entropy_with_grad in fp32/fp16/bf16 at V in {32768, 128256,
   262144} (every option, reductions, inplace_backward), a bf16 logits tensor of > 2^31 elements (loss-only and
   with gradient), chunked_linear_cross_entropy in fp32/fp16/bf16 and at the issue's shape; whether cuBLAS sums
   the weight gradient into fp32 directly (addmm out_dtype) or the slow fallback runs.
   Every timed CE config variant is also checked (gradient vs fp64 at V=128256), and check_target=False's nan rows.
2. triton.testing.do_bench medians (warmup 25 ms, rep 100 ms) and peak extra CUDA memory of one call at
   BT=8192, V=128256 bf16 (CE) and BT=8192, H=4096, V=128256 bf16 (linear CE), full (forward + backward) and
   forward (no gradient): greyhound (default, check_target=False, the bare kernels), its config variants
   (block sizes / num_warps / prefetch of the loss and gradient kernels; chunk sizes), and the
   importable peers: Liger, fla, torch eager, torch.compile, CCE.
3. A compact table last; everything as JSON in --out (default $OUT/gpu_cross_entropy.json).

Usage (repo root): python3 scripts/gpu_cross_entropy.py [--out PATH] [--budget-s 80] [--skip-timing] [--quick]
                   python3 scripts/gpu_cross_entropy.py --cpu-smoke  # the logic on tiny shapes, Triton interpreter
--quick: greyhound rows only (no peers, no linear-CE chunk variants), for a tuning run.
"""
import argparse
import json
import os
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CPU_SMOKE = "--cpu-smoke" in sys.argv
if CPU_SMOKE:
    os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
from triton.testing import do_bench  # noqa: E402

from greyhound.ops import cross_entropy as ce  # noqa: E402
from _checks import make_check, rel_err  # noqa: E402
from greyhound.ops import _fp32_gemm  # noqa: E402
from greyhound.ops.cross_entropy import cross_entropy_reference, cross_entropy_with_grad  # noqa: E402
from greyhound.ops.linear_cross_entropy import (  # noqa: E402
    chunked_linear_cross_entropy, chunked_linear_cross_entropy_reference)

COPY_BYTES_PER_S = 4.27e12  # measured H200 copy bandwidth
BF16_FLOPS_PER_S = 694e12  # measured H200 bf16 matmul
DEVICE = "cpu" if CPU_SMOKE else "cuda"
BT, V, H = (16, 384, 32) if CPU_SMOKE else (8192, 128256, 4096)
CE_VOCABS = (300, 1000) if CPU_SMOKE else (32768, 128256, 262144)
HUGE = (4, 1000) if CPU_SMOKE else (16400, 131072)  # rows x vocab: 2.15e9 bf16 logits > 2^31 elements
TOLERANCE = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 2e-2}
Config = ce._Config  # (loss BLOCK_V, loss num_warps, loss PREFETCH, gradient BLOCK_V); default (2048, 4, True, 2048)
# v2 measured on the H200 (full, unchecked): 4096/w8 loss 1.635 ms, gradient 4096 1.639, gradient 1024 1.620 vs
# default 1.620; the fused persistent kernel (one program per SM, second sweep re-reading its row) 1.68-1.89 ms at
# V = 32768 / 65536 / 128256 against 1.57-1.63 for the two kernels: dropped (docs/perf/cross_entropy.md)
CE_FULL_VARIANTS = [Config(4096, 8, True, 2048), Config(2048, 4, True, 1024)]
CE_FORWARD_VARIANTS = [Config(4096, 8, True, 2048), Config(1024, 2, True, 2048)]
QUICK = "--quick" in sys.argv
LINEAR_CHUNKS_FULL = [512, 2048, 4096]  # besides the automatic choice (1024 rows at this shape)
LINEAR_CHUNKS_FORWARD = [128, 1024]  # besides the automatic choice (256 rows)
START = time.time()
RESULTS = {"device": None, "versions": {}, "checks": [], "timings": [], "skipped": [], "notes": []}


def elapsed():
    return time.time() - START


check = make_check(RESULTS)


def guarded(name, fn):
    """Run one section; an exception becomes a FAIL line instead of ending the script."""
    try:
        fn()
    except Exception as error:  # noqa: BLE001 - report and go on to the next section
        RESULTS["checks"].append({"name": name, "error": repr(error), "pass": False})
        print(f"FAIL {name}: {error!r}", flush=True)
        traceback.print_exc(limit=4)
    finally:
        if DEVICE == "cuda":
            torch.cuda.empty_cache()


def tag(dtype):
    return str(dtype).replace("torch.", "")


# ----------------------------------------------------------------------------------------------------------------
# 1. correctness
# ----------------------------------------------------------------------------------------------------------------
def check_cross_entropy(name, logits, target, grad_output=None, **options):
    ours_in = logits.detach().clone().requires_grad_()
    ref_in = logits.detach().double().requires_grad_()
    out = cross_entropy_with_grad(ours_in, target, return_per_token_loss=True, return_lse=True, **options)
    ref = cross_entropy_reference(ref_in, target, return_per_token_loss=True, return_lse=True, **options)
    grad_output = torch.randn_like(ref.loss) if grad_output is None else grad_output
    out.loss.backward(grad_output.float())
    ref.loss.backward(grad_output.double())
    check(f"CE {name} loss", rel_err(out.loss, ref.loss), 1e-5)
    check(f"CE {name} lse", rel_err(out.lse, ref.lse), 1e-5)
    check(f"CE {name} grad", rel_err(ours_in.grad, ref_in.grad), TOLERANCE[logits.dtype])


def cross_entropy_checks():
    all_options = dict(label_smoothing=0.1, softcap=30.0, lse_square_scale=1e-4)
    for vocab in CE_VOCABS:
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            logits = (torch.randn(64, vocab, device=DEVICE) * 3).to(dtype)
            target = torch.randint(0, vocab, (64,), device=DEVICE)
            target[5] = -100
            check_cross_entropy(f"{tag(dtype)} V={vocab}", logits, target)
        check_cross_entropy(f"bf16 V={vocab} smoothing+softcap+zloss sum", logits, target, reduction="sum",
                            **all_options)
    logits = (torch.randn(48, V, device=DEVICE) * 3).to(torch.bfloat16)
    target = torch.randint(0, V, (48,), device=DEVICE)
    check_cross_entropy("bf16 none per-token grad_output", logits, target, reduction="none", **all_options)
    check_cross_entropy("bf16 mean grad_output=0.5", logits, target,
                        grad_output=torch.tensor(0.5, device=DEVICE))
    check_cross_entropy("bf16 mean grad_output=1", logits, target, grad_output=torch.tensor(1.0, device=DEVICE))
    for config in CE_FULL_VARIANTS:
        ce._CONFIG_OVERRIDE = config
        try:
            check_cross_entropy(f"bf16 V={V} {config_tag(config)}", logits, target, **all_options)
        finally:
            ce._CONFIG_OVERRIDE = None
    # check_target=False: no error; the bad rows are nan (loss, lse, gradient), the others exact
    bad_target = target.clone()
    bad_target[[3, 17]] = torch.tensor([V, -5], device=DEVICE)
    leaf = logits.clone().requires_grad_()
    out = cross_entropy_with_grad(leaf, bad_target, reduction="none", return_lse=True, check_target=False)
    out.loss.sum().backward()
    good = torch.ones(48, dtype=torch.bool, device=DEVICE)
    good[[3, 17]] = False
    ref_leaf = logits.double().requires_grad_()
    ref = cross_entropy_reference(ref_leaf, target, reduction="none", return_lse=True)
    ref.loss.sum().backward()
    nan_rows = bool(out.loss[~good].isnan().all() and out.lse[~good].isnan().all()
                    and leaf.grad[~good].isnan().all())
    check("CE check_target=False: bad rows nan", 0.0 if nan_rows else float("inf"), 0.0)
    check("CE check_target=False: other rows' grad", rel_err(leaf.grad[good], ref_leaf.grad[good]),
          TOLERANCE[torch.bfloat16])
    # inplace_backward: the gradient lands in the logits' own storage
    leaf = logits.detach().double().requires_grad_()
    cross_entropy_reference(leaf, target, **all_options).backward()
    inplace = logits.clone().requires_grad_()
    loss = cross_entropy_with_grad(inplace * 1.0, target, inplace_backward=True, **all_options)
    loss.backward()
    check("CE bf16 inplace_backward grad", rel_err(inplace.grad, leaf.grad), TOLERANCE[torch.bfloat16])


def cross_entropy_beyond_int32():
    rows, vocab = HUGE
    logits = torch.randn(rows, vocab, device=DEVICE, dtype=torch.bfloat16)
    target = torch.randint(0, vocab, (rows,), device=DEVICE)
    expected = torch.cat([F.cross_entropy(logits[s:s + 2048].float(), target[s:s + 2048], reduction="none")
                          for s in range(0, rows, 2048)])
    tail = logits[-64:].double().requires_grad_()
    F.cross_entropy(tail, target[-64:], reduction="sum").backward()
    with torch.no_grad():
        per_token = cross_entropy_with_grad(logits, target, reduction="none")
    check("CE bf16 BTxV>2^31 loss-only per-token", rel_err(per_token, expected), 1e-5)
    logits.requires_grad_()
    loss = cross_entropy_with_grad(logits, target, reduction="sum", inplace_backward=True)
    loss.backward()
    check("CE bf16 BTxV>2^31 with grad: loss", rel_err(loss, expected.double().sum()), 1e-5)
    check("CE bf16 BTxV>2^31 with grad: last rows' grad", rel_err(logits.grad[-64:], tail.grad),
          TOLERANCE[torch.bfloat16])


def check_linear(name, x, weight, bias, target, grad_output=None, **options):
    ours = [t.detach().clone().requires_grad_() if t is not None else None for t in (x, weight, bias)]
    refs = [t.detach().double().requires_grad_() if t is not None else None for t in (x, weight, bias)]
    out = chunked_linear_cross_entropy(ours[0], ours[1], target, ours[2], return_lse=True, **options)
    ref = chunked_linear_cross_entropy_reference(refs[0], refs[1], target, refs[2], return_lse=True, **options)
    grad_output = torch.randn_like(ref.loss) if grad_output is None else grad_output
    out.loss.backward(grad_output.float())
    ref.loss.backward(grad_output.double())
    tolerance = TOLERANCE[x.dtype]
    check(f"LCE {name} loss", rel_err(out.loss, ref.loss), tolerance)
    for label, mine, theirs in zip(("x", "weight", "bias"), ours, refs):
        if mine is not None:
            check(f"LCE {name} grad_{label}", rel_err(mine.grad, theirs.grad), tolerance)


def make_linear(rows, hidden, vocab, dtype, with_bias=False):
    x = torch.randn(rows, hidden, device=DEVICE).to(dtype)
    weight = (torch.randn(vocab, hidden, device=DEVICE) / hidden ** 0.5 * 3).to(dtype)
    bias = (torch.randn(vocab, device=DEVICE) * 0.5).to(dtype) if with_bias else None
    target = torch.randint(0, vocab, (rows,), device=DEVICE)
    target[3] = -100
    return x, weight, bias, target


def linear_checks():
    if DEVICE == "cuda":
        fast = _fp32_gemm._cublas_accumulates_into_fp32(torch.device("cuda", torch.cuda.current_device()), torch.bfloat16)
        RESULTS["cublas_fp32_accumulate"] = fast
        RESULTS["checks"].append({"name": "LCE cuBLAS fp32 weight-gradient sum", "pass": fast})
        print(f"{'PASS' if fast else 'FAIL'} LCE weight-gradient sum runs as addmm(out_dtype=float32) into fp32"
              f"{'' if fast else ': this torch takes the slow upcast fallback'}", flush=True)
    rows, hidden, vocab = (40, 16, 500) if CPU_SMOKE else (1024, 512, 32768)
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        check_linear(f"{tag(dtype)} {rows}x{hidden} V={vocab} chunk={rows // 3}",
                     *make_linear(rows, hidden, vocab, dtype), chunk_size=rows // 3)
    check_linear(f"bf16 bias+smoothing+softcap+zloss V={2 * vocab}",
                 *make_linear(rows + 7, hidden // 2, 2 * vocab, torch.bfloat16, True),
                 label_smoothing=0.1, softcap=30.0, lse_square_scale=1e-4, chunk_size=rows // 2)
    check_linear("bf16 none per-token grad_output",
                 *make_linear(rows // 2 + 3, hidden // 2, vocab + 77, torch.bfloat16), reduction="none",
                 chunk_size=rows // 4)
    check_linear("bf16 vocab schedule, reduction none (forward on vocabulary chunks)",
                 *make_linear(rows + 5, hidden // 2, vocab + 33, torch.bfloat16, True), reduction="none",
                 forward_schedule="vocab", label_smoothing=0.1, softcap=30.0)
    # the shape: real chunking (auto: 1024 rows), the in-place narrowing at V=128256, H=4096
    check_linear(f"bf16 {BT}x{H} V={V} auto chunks", *make_linear(BT, H, V, torch.bfloat16))


# ----------------------------------------------------------------------------------------------------------------
# 2. timing
# ----------------------------------------------------------------------------------------------------------------
def peak_extra_mib(fn):
    if DEVICE != "cuda":
        fn()
        return 0.0
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2 ** 20


def time_one(kernel, provider, mode, shape, fn, grad_to_none, floor_ms, work, unit, budget_s):
    if elapsed() > budget_s:
        RESULTS["skipped"].append(f"{kernel} {provider} {mode}: time budget")
        print(f"SKIP {kernel} {provider} {mode}: time budget", flush=True)
        return
    try:
        fn()  # compile / warm up outside the timed region
        for t in grad_to_none:
            t.grad = None
        extra = peak_extra_mib(fn)
        for t in grad_to_none:
            t.grad = None
        ms = do_bench(fn, warmup=25, rep=100, grad_to_none=grad_to_none, return_mode="median")
    except Exception as error:  # noqa: BLE001 - a peer that fails to run is reported, not fatal
        RESULTS["skipped"].append(f"{kernel} {provider} {mode}: {error!r}"[:300])
        print(f"SKIP {kernel} {provider} {mode}: {error!r}"[:300], flush=True)
        return
    finally:
        for t in grad_to_none:
            t.grad = None
    rate = work / (ms * 1e-3) / (1e9 if unit == "GB/s" else 1e12)
    row = {"kernel": kernel, "provider": provider, "mode": mode, "shape": shape, "ms": ms, "extra_mib": extra,
           "rate": rate, "unit": unit, "floor_ms": floor_ms}
    RESULTS["timings"].append(row)
    print(f"TIME {kernel:20s} {provider:28s} {mode:8s} {ms:8.3f} ms  {extra:9.1f} MiB  {rate:7.1f} {unit}"
          f"  (floor {floor_ms:.3f} ms)", flush=True)


def config_tag(config):
    return f"loss {config.block_v}/w{config.num_warps}/pf{int(config.prefetch)}, gradient {config.gradient_block_v}"


def cross_entropy_jobs():
    """(provider, mode, fn, grad_to_none, floor_ms, work, unit, compiles) for BT x V bf16 logits."""
    logits = torch.randn(BT, V, device=DEVICE, dtype=torch.bfloat16)
    target = torch.randint(0, V, (BT,), device=DEVICE)
    leaf = logits.clone().requires_grad_()
    nbytes = logits.numel() * logits.element_size()
    jobs = []
    grad_buffer = torch.empty_like(logits)

    # in-place providers turn `leaf` into gradients; this kernel's speed does not depend on the values
    def add(provider, fn, modes=("full", "forward"), compiles=False):
        if "full" in modes:
            jobs.append((provider, "full", lambda: fn(leaf, target).backward(), [leaf],
                         2 * nbytes / COPY_BYTES_PER_S * 1e3, 2 * nbytes, compiles))
        if "forward" in modes:
            jobs.append((provider, "forward", lambda: fn(logits, target), [], nbytes / COPY_BYTES_PER_S * 1e3,
                         nbytes, compiles))

    add("greyhound", cross_entropy_with_grad)
    add("greyhound[check_target=False]", lambda a, t: cross_entropy_with_grad(a, t, check_target=False))
    add("greyhound-inplace_backward", lambda a, t: cross_entropy_with_grad(a, t, inplace_backward=True),
        modes=("full",))
    # the bare kernel writing loss + gradient (no autograd, allocation, n_valid or backward launch): the floor's
    # comparison point; 'full' here is one kernel reading the logits and writing the gradient
    jobs.append(("greyhound kernel only", "full", lambda: ce._cross_entropy_rows(logits, target, grad_buffer),
                 [], 2 * nbytes / COPY_BYTES_PER_S * 1e3, 2 * nbytes, False))
    jobs.append(("greyhound kernel only", "forward", lambda: ce._cross_entropy_rows(logits, target),
                 [], nbytes / COPY_BYTES_PER_S * 1e3, nbytes, False))
    for mode, configs in (("full", CE_FULL_VARIANTS), ("forward", CE_FORWARD_VARIANTS)):
        for config in configs:
            def with_config(a, t, config=config, mode=mode):
                ce._CONFIG_OVERRIDE = config
                try:
                    return cross_entropy_with_grad(a, t, check_target=False)
                finally:
                    ce._CONFIG_OVERRIDE = None
            add(f"greyhound[{config_tag(config)}] unchecked", with_config, modes=(mode,))
    if QUICK:
        return f"BT={BT},V={V},bf16", jobs
    add("torch-eager", F.cross_entropy)
    try:
        from liger_kernel.transformers import LigerCrossEntropyLoss
        add("liger", LigerCrossEntropyLoss())  # writes its gradient into the logits, as inplace_backward
    except ImportError as error:
        RESULTS["skipped"].append(f"liger: {error!r}")
    try:
        from fla.modules import FusedCrossEntropyLoss
        add("fla", FusedCrossEntropyLoss())
    except ImportError as error:
        RESULTS["skipped"].append(f"fla: {error!r}")
    add("torch-compile", torch.compile(F.cross_entropy), compiles=True)
    return f"BT={BT},V={V},bf16", jobs


def linear_jobs():
    x = torch.randn(BT, H, device=DEVICE, dtype=torch.bfloat16)
    weight = (torch.randn(V, H, device=DEVICE) / H ** 0.5).to(torch.bfloat16)
    target = torch.randint(0, V, (BT,), device=DEVICE)
    x_leaf, weight_leaf = x.clone().requires_grad_(), weight.clone().requires_grad_()
    flops = 2 * BT * H * V
    jobs = []

    def add(provider, fn, modes=("full", "forward"), compiles=False):
        if "full" in modes:
            jobs.append((provider, "full", lambda: fn(x_leaf, weight_leaf, target).backward(), [x_leaf, weight_leaf],
                         3 * flops / BF16_FLOPS_PER_S * 1e3, 3 * flops, compiles))
        if "forward" in modes:
            jobs.append((provider, "forward", lambda: fn(x, weight, target), [], flops / BF16_FLOPS_PER_S * 1e3,
                         flops, compiles))

    add("greyhound", chunked_linear_cross_entropy)
    for cols in (None, 2048, 8192):  # the vocabulary-major loss-only pass (full-height GEMMs), forward only
        add(f"greyhound[vocab{'' if cols is None else f', chunk={cols}'}]",
            lambda a, w, t, c=cols: chunked_linear_cross_entropy(a, w, t, forward_schedule="vocab", chunk_size=c),
            modes=("forward",))
    if QUICK:
        return f"BT={BT},H={H},V={V},bf16", jobs
    for chunk in LINEAR_CHUNKS_FULL:
        add(f"greyhound[chunk={chunk}]", lambda a, w, t, c=chunk: chunked_linear_cross_entropy(a, w, t, chunk_size=c),
            modes=("full",))
    for chunk in LINEAR_CHUNKS_FORWARD:
        add(f"greyhound[chunk={chunk}]", lambda a, w, t, c=chunk: chunked_linear_cross_entropy(a, w, t, chunk_size=c),
            modes=("forward",))
    try:
        from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss
        liger = LigerFusedLinearCrossEntropyLoss()
        add("liger", lambda a, w, t: liger(w, a, t))
    except ImportError as error:
        RESULTS["skipped"].append(f"liger linear: {error!r}")
    try:
        from cut_cross_entropy import linear_cross_entropy as cce_linear_cross_entropy
        add("cce", lambda a, w, t: cce_linear_cross_entropy(a, w, t))
    except ImportError as error:
        RESULTS["skipped"].append(f"cce: {error!r}")
    add("torch-compile", torch.compile(lambda a, w, t: F.cross_entropy((a @ w.t()).float(), t)), compiles=True)
    return f"BT={BT},H={H},V={V},bf16", jobs


def _smoke_bench(fn, warmup, rep, grad_to_none=None, return_mode="median"):
    for t in grad_to_none or ():
        t.grad = None
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1e3


def run_timings(budget_s):
    """greyhound rows first, then peers, then torch.compile peers (slow to compile) while time is left."""
    sections = [("cross_entropy", "GB/s", cross_entropy_jobs), ("linear_cross_entropy", "TFLOP/s", linear_jobs)]
    queue = []
    for kernel, unit, make_jobs in sections:
        shape, jobs = make_jobs()
        queue += [(kernel, unit, shape) + job for job in jobs]
    rank = {True: 2}
    queue.sort(key=lambda job: rank.get(job[-1], 0 if job[3].startswith("greyhound") else 1))  # stable sort
    for kernel, unit, shape, provider, mode, fn, grad_to_none, floor_ms, work, compiles in queue:
        if compiles and CPU_SMOKE:
            continue
        time_one(kernel, provider, mode, shape, fn, grad_to_none, floor_ms, work, unit,
                 budget_s - (35 if compiles else 0))  # a torch.compile warm-up takes 15-30 s


# ----------------------------------------------------------------------------------------------------------------
# 3. report
# ----------------------------------------------------------------------------------------------------------------
def report(out_path):
    print("\n| kernel | provider | mode | ms | floor ms | extra MiB | rate |")
    print("|---|---|---|---|---|---|---|")
    for row in RESULTS["timings"]:
        print(f"| {row['kernel']} | {row['provider']} | {row['mode']} | {row['ms']:.3f} | {row['floor_ms']:.3f} "
              f"| {row['extra_mib']:.1f} | {row['rate']:.1f} {row['unit']} |")
    failed = [c["name"] for c in RESULTS["checks"] if not c["pass"]]
    print(f"\nchecks: {len(RESULTS['checks']) - len(failed)} passed, {len(failed)} failed"
          + (f" ({'; '.join(failed)})" if failed else ""))
    if RESULTS["skipped"]:
        print("skipped: " + "; ".join(RESULTS["skipped"]))
    print(f"total {elapsed():.1f} s; JSON: {out_path}")
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(RESULTS, f, indent=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gpu_cross_entropy.json"))
    parser.add_argument("--budget-s", type=float, default=80.0,
                        help="stop starting new timings after this many seconds (correctness always runs)")
    parser.add_argument("--skip-timing", action="store_true")
    parser.add_argument("--quick", action="store_true", help="greyhound rows only: no peers, no chunk variants")
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="every step on tiny CPU shapes through TRITON_INTERPRET=1; timings meaningless, no "
                             "torch.compile peers")
    args = parser.parse_args()
    if CPU_SMOKE:
        global do_bench
        do_bench = _smoke_bench
    else:
        assert torch.cuda.is_available(), "needs a CUDA device (or --cpu-smoke)"
    torch.manual_seed(0)
    RESULTS["device"] = torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (smoke)"
    RESULTS["versions"] = {"torch": torch.__version__, "triton": triton.__version__}
    guarded("CE correctness", cross_entropy_checks)
    guarded("CE BTxV>2^31", cross_entropy_beyond_int32)
    guarded("LCE correctness", linear_checks)
    print(f"correctness done at {elapsed():.1f} s", flush=True)
    if not args.skip_timing:
        guarded("timing", lambda: run_timings(args.budget_s))
    report(args.out)


if __name__ == "__main__":
    main()
