#!/usr/bin/env python3
"""Cheri Block on CUDA: correctness of every path in fp32/bf16/fp16 (PASS/FAIL lines), then a timing table.

    python3 scripts/gpu_cheri_block.py [--out PATH] [--sizes 16,64,512] [--no-compile] [--explore] [--jobs 12]
    python3 scripts/gpu_cheri_block.py --cpu-smoke   # the script's logic on tiny shapes in the Triton interpreter

1. Cold first calls (Triton compile, .eval() cache build) of each greyhound path at the issue's shape.
2. Correctness vs an fp64 reference on fresh random inputs and weights, including the bf16 tl.dot paths.
3. do_bench medians (warmup=25, rep=100) and peak extra CUDA memory for N x dtype x path, the peers
   (torch-eager, torch.compile of the reference module), the conv + LayerNorm kernels, host time per call;
   goals; the table last. --explore adds the fused kernel's tile/layout/GELU variants (compiled first by
   --jobs worker processes into the shared Triton cache), each checked against fp64 before it is timed.
Full results go to --out (default $OUT/gpu_cheri_block.json). TF32 is off everywhere (fp32 means fp32).
"""
import argparse
import json
import os
import sys
import tempfile
import time
import traceback

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO_ROOT)

CHANNELS, LENGTH, KERNEL_SIZE, DILATION, EXPANSION = 128, 1024, 3, 4, 4
ODD_SHAPE = (3, 96, 1000)  # N, C, L for the padded-channel / ragged-tile check
DEVICE = "cuda"
# (dtype name -> bound): training-fwd values / grads rel-norm; megakernel max-abs vs fp64 at unit scale.
VALUE_REL = {"fp32": 1e-5, "bf16": 2e-2, "fp16": 5e-3}
GRAD_REL = {"fp32": 1e-5, "bf16": 3e-2, "fp16": 1e-2}
MEGA_MAX_ABS = {"fp32": 1e-5, "bf16": 3e-2, "fp16": 5e-3}  # issue: "about 3e-2 and 4e-3"; fp16 measures ~4.0e-3
GOALS_MS = [("megakernel+eval", "bf16", 512, 0.25), ("megakernel+eval", "fp16", 512, 0.25),
            ("megakernel+eval", "fp32", 512, 0.40), ("megakernel+eval", "bf16", 16, 0.045),
            ("megakernel+eval", "fp16", 16, 0.045), ("megakernel+eval", "fp32", 16, 0.045),
            ("training-fwd", "bf16", 512, 0.55)]
NO_EVAL_OVERHEAD_GOAL_MS = 0.018
# Fused-kernel variants for --explore: (dtype, training, (BLOCK_L, BLOCK_E, num_warps, num_stages, layout, maxnreg),
# gelu, expansion). dtype "fp32-1pass" is an fp32 model with fp32_dot="bf16". Registers / shared memory per program
# from offline sm_90a compiles (Triton 3.9) are in docs/perf/cheri_block.md.
EXPLORE_VARIANTS = (
    [("bf16", False, c, "poly", EXPANSION) for c in [
        (64, 32, 4, 3, "lc", None), (64, 32, 4, 2, "lc", None), (128, 64, 8, 2, "lc", 128),
        (64, 64, 4, 3, "lc", None), (128, 64, 8, 3, "lc", None), (64, 64, 4, 2, "cl", None)]]
    + [("bf16", False, (64, 32, 4, 3, "lc", None), "none", EXPANSION)]
    + [("fp16", False, c, "poly", EXPANSION) for c in [(64, 32, 4, 3, "lc", None), (128, 64, 8, 2, "lc", 128)]]
    + [("fp32", False, c, "poly", EXPANSION) for c in [(128, 64, 8, 2, "lc", None), (64, 32, 4, 2, "lc", None)]]
    + [("fp32-1pass", False, c, "poly", EXPANSION) for c in [(64, 32, 4, 3, "lc", None), (128, 64, 8, 2, "lc", 128)]]
    + [("bf16", True, c, "poly", EXPANSION) for c in [
        (64, 32, 4, 3, "lc", None), (64, 64, 4, 2, "lc", None), (128, 64, 8, 2, "lc", 128), (64, 32, 4, 2, "lc", None)]]
    + [("fp32", True, c, "poly", EXPANSION) for c in [(128, 64, 8, 2, "lc", None), (64, 64, 4, 1, "lc", None)]]
    + [("fp16", True, c, "poly", EXPANSION) for c in [(64, 32, 4, 3, "lc", None)]]
    # v4: z from the conv + LayerNorm kernel (memory-bound, bf16 z), then the MLP kernel without the prologue
    + [("bf16", False, c, "poly", EXPANSION) for c in [
        (64, 32, 4, 3, "split", None), (64, 64, 4, 3, "split", None), (128, 64, 8, 2, "split", 128),
        (128, 64, 8, 3, "split", None), (128, 128, 8, 2, "split", None)]]
    + [("fp16", False, (64, 32, 4, 3, "split", None), "poly", EXPANSION)]
    + [("fp32", False, (128, 64, 8, 2, "split", None), "poly", EXPANSION)]
    + [("bf16", True, c, "poly", EXPANSION) for c in [(64, 32, 4, 3, "split", None), (128, 64, 8, 2, "split", 128)]]
)
FP32_MODE_CONFIGS = {"tf32x3": (64, 32, 4, 1, "lc"), "ieee": (64, 16, 8, 1, "lc")}
DTYPE_NAMES = {"fp32": "float32", "fp32-1pass": "float32", "bf16": "bfloat16", "fp16": "float16"}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gpu_cheri_block.json"))
    parser.add_argument("--sizes", default="16,64,512", help="batch sizes N (L=1024, C=128)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile provider")
    parser.add_argument("--warm-cache", action="store_true",
                        help="keep the default Triton cache (first-call costs then exclude compilation)")
    parser.add_argument("--budget-s", type=float, default=80.0,
                        help="skip remaining torch.compile cells once this many seconds have passed")
    parser.add_argument("--explore", action="store_true", help="time the fused kernel's tile/layout variants")
    parser.add_argument("--jobs", type=int, default=12, help="worker processes compiling the --explore variants")
    parser.add_argument("--explore-all-sizes", action="store_true", help="time the inference variants at every N")
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="run every step on tiny CPU shapes through TRITON_INTERPRET=1 (no timings worth reading)")
    return parser.parse_args()


def use_cpu_smoke_mode():
    """Tiny shapes on CPU tensors through the Triton interpreter; CUDA timing and memory calls are stubbed."""
    global CHANNELS, LENGTH, ODD_SHAPE, DEVICE
    os.environ["TRITON_INTERPRET"] = "1"
    CHANNELS, LENGTH, ODD_SHAPE, DEVICE = 32, 48, (2, 24, 40), "cpu"


def variant_label(dtype_name, training, config, gelu, expansion):
    block_l, block_e, warps, stages, layout, max_registers = config
    return (f"{'train-kernel' if training else 'megakernel'} {layout} {block_l}x{block_e} w{warps} s{stages}"
            + ("" if max_registers is None else f" r{max_registers}") + ("" if gelu == "poly" else f" gelu={gelu}")
            + ("" if expansion == EXPANSION else f" E={expansion * CHANNELS}")
            + (" fp32_dot=bf16" if dtype_name == "fp32-1pass" else ""))


def make_variant_case(torch, ops, dtype_name, training, batch, seed=0, expansion=EXPANSION):
    """Inputs and prepared weights for one fused-kernel variant call (used by the workers and the main process):
    a CheriBlock's default init with LayerNorm affine and biases moved off 1 and 0, as make_block does."""
    from greyhound.nn.cheri_block import CheriBlock
    dtype = getattr(torch, DTYPE_NAMES[dtype_name])
    torch.manual_seed(seed)
    block = CheriBlock(CHANNELS, KERNEL_SIZE, DILATION, expansion, device=DEVICE)
    with torch.no_grad():
        block.norm.weight.copy_(1 + 0.3 * torch.randn(CHANNELS))
        for bias in (block.conv.bias, block.norm.bias, block.fc1.bias, block.fc2.bias):
            bias.add_(0.2 * torch.randn_like(bias))
    block.to(dtype)
    params = [p.detach() for p in block._params()]
    x = torch.randn(batch, CHANNELS, LENGTH, device=DEVICE, dtype=dtype)
    fp32_dot = "bf16" if dtype_name == "fp32-1pass" else "bf16x3"
    weights = ops.prepare_mlp_weights(params[4], params[6], fp32_dot, training=training)
    return x, params, weights


def run_variant(torch, ops, x, params, weights, training, config, gelu):
    result = ops.run_fused(x, *params[:4], params[5], params[7], weights, DILATION, 1e-5, training=training,
                           config=config, gelu=gelu)
    return result[0] if training else result


def compile_variant(spec):
    """Worker: one tiny call of a variant, so its kernel lands in the shared Triton cache. Returns (spec, error, s)."""
    start = time.perf_counter()
    try:
        import torch
        from greyhound.ops import cheri_conv_norm as ops
        dtype_name, training, config, gelu, expansion = spec
        x, params, weights = make_variant_case(torch, ops, dtype_name, training, batch=1, expansion=expansion)
        with torch.no_grad():
            run_variant(torch, ops, x, params, weights, training, config, gelu)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        return spec, None, time.perf_counter() - start
    except Exception as exc:  # reported by the main process; the variant is then skipped
        return spec, f"{type(exc).__name__}: {str(exc)[:300]}", time.perf_counter() - start


def main():
    args = parse_args()
    if args.cpu_smoke:
        use_cpu_smoke_mode()
        args.sizes, args.no_compile = "1,2", True
    if not args.warm_cache:  # cold compiles every run, so first-call costs are comparable between runs
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-cheri-")
    import torch
    import triton
    from triton.testing import do_bench

    if DEVICE == "cpu":
        def do_bench(fn, warmup, rep, grad_to_none=None, return_mode="median"):  # noqa: F811 (smoke stub)
            for t in grad_to_none or ():
                t.grad = None
            start = time.perf_counter()
            fn()
            return (time.perf_counter() - start) * 1e3

        for name in ("synchronize", "reset_peak_memory_stats"):
            setattr(torch.cuda, name, lambda *a, **k: None)
        torch.cuda.memory_allocated = torch.cuda.max_memory_allocated = lambda *a, **k: 0
        torch.cuda.get_device_name = lambda *a, **k: "cpu (TRITON_INTERPRET=1 smoke run)"

    from greyhound.nn.cheri_block import CheriBlock, CheriBlockReference
    from greyhound.ops import cheri_conv_norm as ops

    started = time.perf_counter()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dtypes = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
    sizes = [int(s) for s in args.sizes.split(",")]
    big = max(sizes)
    checks, rows, errors = [], [], []
    env = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "shape": {"C": CHANNELS, "L": LENGTH, "kernel_size": KERNEL_SIZE, "dilation": DILATION,
                     "expansion": EXPANSION}, "triton_cache": os.environ.get("TRITON_CACHE_DIR", "default"),
           "default_configs": {f"{k[0]}/{'train' if k[1] else 'infer'}": v for k, v in ops._FUSED_CONFIGS.items()}}
    print(f"# {env['device']} torch {env['torch']} triton {env['triton']}", flush=True)

    def elapsed():
        return time.perf_counter() - started

    def dump(stage):  # partial results survive a run that is stopped at its time limit
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump({"env": env, "stage": stage, "checks": checks, "errors": errors, "rows": rows,
                       "first_calls": [{"path": k[0], "dtype": k[1], "N": k[2], "ms": v}
                                       for k, v in first_calls.items()], "elapsed_s": elapsed()}, f, indent=1)

    def make_block(dtype, n_filters=CHANNELS, kernel_size=KERNEL_SIZE, dilation=DILATION, expansion=EXPANSION,
                   seed=0, **kwargs):
        torch.manual_seed(seed)
        block = CheriBlock(n_filters, kernel_size, dilation, expansion, device=DEVICE, **kwargs)
        with torch.no_grad():  # fresh weights: default init with LayerNorm affine and biases moved off 1 and 0
            block.norm.weight.copy_(1 + 0.3 * torch.randn(n_filters))
            for bias in (block.conv.bias, block.norm.bias, block.fc1.bias, block.fc2.bias):
                bias.add_(0.2 * torch.randn_like(bias))
        return block.to(dtype)

    def fp64_twin(block):
        twin = CheriBlock(block.n_filters, block.kernel_size, block.dilation, block.expansion, eps=block.norm.eps,
                          device=DEVICE, dtype=torch.float64)
        twin.load_state_dict({k: v.double() for k, v in block.state_dict().items()})
        return twin

    def rel(a, b):
        return ((a.double() - b.double()).norm() / b.double().norm()).item()

    def max_abs(a, b):
        return (a.double() - b.double()).abs().max().item()

    def check(name, value, bound):
        ok = value <= bound
        checks.append({"check": name, "value": value, "bound": bound, "pass": ok})
        print(f"{'PASS' if ok else 'FAIL'} {name}: {value:.3e} (bound {bound:.0e})", flush=True)
        return ok

    def guarded(label, fn):
        try:
            return fn()
        except Exception as exc:  # one broken path must not hide the others' results
            errors.append({"where": label, "error": repr(exc), "traceback": traceback.format_exc()})
            print(f"FAIL {label}: raised {exc!r}", flush=True)
            return None

    def first_call_ms(fn):
        torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3

    def peak_extra_mb(fn):
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        result = fn()
        torch.cuda.synchronize()
        peak = torch.cuda.max_memory_allocated()
        del result
        return (peak - before) / 2**20

    # ---------------------------------------------------------------- greyhound paths as callables
    def path_fns(block, x, grad_out):
        params = list(block.parameters())
        x_grad = x.detach().clone().requires_grad_()

        def training_fwd():
            with torch.enable_grad():
                return block(x_grad)

        def train_step():
            with torch.enable_grad():
                block(x_grad).backward(grad_out)

        def mega():
            with torch.no_grad():
                return block(x)

        return {
            "training-fwd": (training_fwd, lambda: block.train(), []),
            "train-step": (train_step, lambda: block.train(), params + [x_grad]),
            "megakernel+eval": (mega, lambda: block.eval(), []),
            "megakernel-no-eval": (mega, lambda: block.train(), []),
        }

    blocks = {name: make_block(dtype) for name, dtype in dtypes.items()}
    inputs = {}
    for n in sizes:
        for name, dtype in dtypes.items():
            torch.manual_seed(100 + n)
            inputs[n, name] = (torch.randn(n, CHANNELS, LENGTH, device=DEVICE, dtype=dtype),
                               torch.randn(n, CHANNELS, LENGTH, device=DEVICE, dtype=dtype))

    # ---------------------------------------------------------------- 1. cold first calls (default configs)
    first_calls = {}
    for name in dtypes:
        block = blocks[name]
        first_calls["eval()-cache-build", name, None] = guarded(f"{name} .eval() cache build",
                                                                lambda: first_call_ms(lambda: block.eval()))
        for n in sorted(sizes, reverse=True):
            x, grad_out = inputs[n, name]
            for path, (fn, prepare, _) in path_fns(block, x, grad_out).items():
                prepare()
                first_calls[path, name, n] = guarded(f"{name} N={n} {path} first call", lambda: first_call_ms(fn))
        block.train()
    print(f"# first calls done at {elapsed():.1f}s", flush=True)
    dump("first calls")

    # ---------------------------------------------------------------- 1b. compile the variants in parallel
    variants = list(EXPLORE_VARIANTS) if args.explore else []
    if args.cpu_smoke and variants:  # the interpreter is slow: one of each kind
        variants = [v for i, v in enumerate(variants) if i in (0, 5, 6, 8, 10, 12, 14, 18, 20, 27)]
    compile_errors = {}
    if variants:
        if DEVICE == "cuda" and args.jobs > 1:
            import multiprocessing
            context = multiprocessing.get_context("spawn")
            with context.Pool(min(args.jobs, len(variants))) as pool:
                results = pool.map(compile_variant, variants, chunksize=1)
        else:
            results = [compile_variant(spec) for spec in variants]
        for spec, error, seconds in results:
            if error:
                compile_errors[spec] = error
                print(f"# variant {variant_label(*spec)} {spec[0]}: compile failed: {error}", flush=True)
        print(f"# {len(variants)} variants compiled ({len(compile_errors)} failed) at {elapsed():.1f}s, "
              f"slowest worker call {max(r[2] for r in results):.1f}s", flush=True)

    # ---------------------------------------------------------------- 2. correctness
    def check_training_path(name, block, x):
        x = x.detach().clone().requires_grad_()
        block.train()
        out = block(x)
        twin = fp64_twin(block)
        x64 = x.detach().double().requires_grad_()
        ref = twin.reference_forward(x64)
        check(f"{name} training-fwd values rel vs fp64", rel(out, ref), VALUE_REL[name])
        grad_out = torch.randn_like(out)
        out.backward(grad_out)
        ref.backward(grad_out.double())
        worst = max([rel(x.grad, x64.grad)] + [rel(p.grad, p64.grad) for p, p64 in
                                               zip(block.parameters(), twin.parameters())])
        check(f"{name} training-path grads (x and all 8 params) worst rel vs fp64", worst, GRAD_REL[name])
        block.zero_grad(set_to_none=True)
        return out.detach(), ref.detach()

    def check_megakernel(name, block, x, training_out, ref):
        with torch.no_grad():
            block.train()
            no_eval = block(x)
            block.eval()
            evaluated = block(x)
        block.train()
        check(f"{name} megakernel+eval max-abs vs fp64", max_abs(evaluated, ref), MEGA_MAX_ABS[name])
        check(f"{name} megakernel no-eval == eval (exact)", 0.0 if torch.equal(no_eval, evaluated) else 1.0, 0.0)
        if name == "fp32":
            check("fp32 megakernel vs training-fwd max-abs", max_abs(evaluated, training_out), 1e-5)

    for name, dtype in dtypes.items():
        torch.manual_seed(7)
        block = make_block(dtype, seed=1)
        x = torch.randn(4, CHANNELS, LENGTH, device=DEVICE, dtype=dtype)
        result = guarded(f"{name} training path", lambda: check_training_path(name, block, x))
        if result:
            guarded(f"{name} megakernel", lambda: check_megakernel(name, block, x, *result))

    def check_fp32_dot_modes():
        block = make_block(torch.float32, seed=2)
        x = torch.randn(4, CHANNELS, LENGTH, device=DEVICE)
        ref = fp64_twin(block).reference_forward(x.double())
        for mode in ("tf32x3", "ieee"):
            weights = ops.prepare_mlp_weights(block.fc1.weight, block.fc2.weight, mode)
            with torch.no_grad():
                out = ops.cheri_block_megakernel(x, *block._params(), dilation=DILATION, mlp_weights=weights,
                                                 fp32_dot=mode)
            check(f"fp32 megakernel fp32_dot={mode} max-abs vs fp64", max_abs(out, ref), 1e-5)

    def check_odd_shape(name, dtype):
        # C=96 (padded to 128 lanes), L=1000 (no tile divides it), K=2, both layouts.
        batch, channels, length = ODD_SHAPE
        block = make_block(dtype, n_filters=channels, kernel_size=2, dilation=3, expansion=4, seed=3)
        x = torch.randn(batch, channels, length, device=DEVICE, dtype=dtype)
        twin = fp64_twin(block)
        ref = twin.reference_forward(x.double())
        with torch.no_grad():
            for config in (None, (64, 64 if 4 * channels % 64 == 0 else 32, 4, 2, "cl")):
                out = ops.cheri_block_megakernel(x, *block._params(), dilation=3, config=config)
                check(f"{name} odd shape (N,C,L={ODD_SHAPE},K=2) megakernel {config} max-abs vs fp64",
                      max_abs(out, ref), MEGA_MAX_ABS[name])
            z = ops.conv_norm(x, *block._params()[:4], dilation=3)
            y64 = ops.causal_depthwise_conv(x.double(), twin.conv.weight, twin.conv.bias, 3)
            z64 = torch.nn.functional.layer_norm(y64.transpose(1, 2), (channels,), twin.norm.weight, twin.norm.bias)
        check(f"{name} odd shape conv+norm rel vs fp64", rel(z, z64), VALUE_REL[name])
        xg = x.detach().clone().requires_grad_()
        out = block(xg)
        x64 = x.detach().double().requires_grad_()
        ref = twin.reference_forward(x64)
        grad_out = torch.randn_like(out)
        out.backward(grad_out)
        ref.backward(grad_out.double())
        worst = max([rel(xg.grad, x64.grad)] + [rel(p.grad, p64.grad) for p, p64 in
                                                zip(block.parameters(), twin.parameters())])
        check(f"{name} odd shape training grads worst rel vs fp64", worst, GRAD_REL[name])

    def check_fallback_and_cache():
        block = make_block(torch.float32, n_filters=12, expansion=3, seed=4)  # hidden 36: not a multiple of 16
        x = torch.randn(2, 12, 300, device=DEVICE)
        with torch.no_grad():
            out = block.eval()(x)
        check("fp32 hidden=36 no_grad fallback (training-fwd path) rel vs fp64",
              rel(out, fp64_twin(block).reference_forward(x.double())), 1e-5)
        check("hidden=36 does not use the megakernel", float(block.uses_megakernel_when_no_grad), 0.0)
        block = make_block(torch.bfloat16, seed=5).eval()
        x = torch.randn(2, CHANNELS, LENGTH, device=DEVICE, dtype=torch.bfloat16)
        with torch.no_grad():
            before = block(x)
        optimizer = torch.optim.SGD(block.parameters(), lr=1.0)
        for p in block.parameters():  # a step of controlled size keeps the outputs at unit scale
            p.grad = 0.05 * torch.randn_like(p)
        optimizer.step()
        with torch.no_grad():
            after = block(x)
        check("bf16 eval cache rebuilt after optimizer step: max-abs vs new fp64",
              max_abs(after, fp64_twin(block).reference_forward(x.double())), MEGA_MAX_ABS["bf16"])
        check("bf16 output changed after the step (1 = yes)", 0.0 if max_abs(after, before) > 1e-2 else 1.0, 0.0)

    guarded("fp32 dot modes", check_fp32_dot_modes)
    for name in ("fp32", "bf16"):
        guarded(f"{name} odd shape", lambda: check_odd_shape(name, dtypes[name]))
    guarded("fallback and cache", check_fallback_and_cache)

    # each explore variant: fp64 check on a small batch before it may be timed
    variant_ok = {}
    for spec in variants:
        if spec in compile_errors:
            continue
        dtype_name, training, config, gelu, expansion = spec

        def check_variant():
            x, params, weights = make_variant_case(torch, ops, dtype_name, training, batch=2, seed=11,
                                                   expansion=expansion)
            with torch.no_grad():
                out = run_variant(torch, ops, x, params, weights, training, config, gelu)
                ref = ops.cheri_block_reference(x.double(), *[p.double() for p in params], dilation=DILATION)
            if gelu == "none":  # no activation on purpose: timing only
                return True
            bound = 3e-2 if dtype_name == "fp32-1pass" else MEGA_MAX_ABS[dtype_name]
            return check(f"{dtype_name} {variant_label(*spec)} max-abs vs fp64", max_abs(out, ref), bound)
        variant_ok[spec] = bool(guarded(f"{dtype_name} {variant_label(*spec)} check", check_variant))
    print(f"# correctness done at {elapsed():.1f}s", flush=True)
    dump("correctness")

    # ---------------------------------------------------------------- 3. timing
    def record(path, name, n, fn, grad_to_none=(), note="", memory=True):
        def measure():
            median = do_bench(fn, warmup=25, rep=100, grad_to_none=list(grad_to_none) or None,
                              return_mode="median")
            return median, (peak_extra_mb(fn) if memory else None)
        result = guarded(f"{name} N={n} {path} timing", measure)
        rows.append({"path": path, "dtype": name, "N": n, "median_ms": result[0] if result else None,
                     "peak_extra_mb": result[1] if result else None,
                     "first_call_ms": first_calls.get((path, name, n)), "note": note})
        return result[0] if result else None

    for n in sizes:
        for name in dtypes:
            block = blocks[name]
            x, grad_out = inputs[n, name]
            for path, (fn, prepare, grads) in path_fns(block, x, grad_out).items():
                prepare()
                record(path, name, n, fn, grads)
            block.train()
            x_ref = x.detach().clone().requires_grad_()

            def eager_fwd():
                with torch.no_grad():
                    return block.reference_forward(x)

            def eager_step():
                block.reference_forward(x_ref).backward(grad_out)

            record("torch-eager", name, n, eager_fwd, note="reference module, no_grad")
            record("torch-eager train-step", name, n, eager_step, list(block.parameters()) + [x_ref])
    print(f"# main table done at {elapsed():.1f}s", flush=True)
    dump("main table")

    # host time per call (perf_counter over back-to-back calls, no sync inside) vs device time, smallest N
    small = min(sizes)
    for name in dtypes:
        block = blocks[name].eval()
        x = inputs[small, name][0]

        def host_us(fn, calls=200):
            fn()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            host = (time.perf_counter() - start) / calls * 1e6
            torch.cuda.synchronize()
            return host

        def mega_call():
            with torch.no_grad():
                return block(x)
        host = guarded(f"{name} host time", lambda: host_us(mega_call))
        rows.append({"path": "megakernel+eval host us/call", "dtype": name, "N": small, "median_ms": host,
                     "peak_extra_mb": None, "first_call_ms": None, "note": "microseconds of Python per call"})
        block.train()

    # where the host time goes at the smallest N (bf16, eval weights): the bare Triton launch, a launch through
    # the CompiledKernel that JITFunction.warmup returns (no argument binding), run_fused, the module
    def host_breakdown():
        block = blocks["bf16"].eval()
        x = inputs[small, "bf16"][0]
        params = block._params()
        weights = block._cached_mlp_weights(params[4], params[6])
        block_l, block_e, warps, stages, layout, max_registers = ops._default_config(
            CHANNELS, EXPANSION * CHANNELS, "bf16", False)
        out = torch.empty_like(x)
        args = (x, out, out, out, out, *params[:4], weights.fc1_hi, weights.fc1_hi, params[5], weights.fc2_hi,
                weights.fc2_hi, params[7], out, LENGTH, block.norm.eps)
        constexprs = dict(C=CHANNELS, HIDDEN=EXPANSION * CHANNELS, KERNEL_SIZE=KERNEL_SIZE, DILATION=DILATION,
                          EVEN_L=LENGTH % block_l == 0, DOT_MODE=0, TRAINING=False, GELU_VARIANT=0,
                          EMULATE_DOT=False, Z_PRECOMPUTED=False, BLOCK_L=block_l, BLOCK_C=CHANNELS,
                          BLOCK_E=block_e)
        options = dict(num_warps=warps, num_stages=stages)
        if max_registers is not None:
            options["maxnreg"] = max_registers
        grid = (small * LENGTH // block_l,)
        kernel = ops._KERNELS["lc" if layout == "split" else layout]  # the one-kernel form of the launch
        result = {}

        def timed(label, fn, calls=300):
            fn()
            torch.cuda.synchronize()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            result[label] = (time.perf_counter() - start) / calls * 1e6
            torch.cuda.synchronize()

        timed("Triton launch kernel[grid](...)", lambda: kernel[grid](*args, **constexprs, **options))
        reference = out.clone()
        out.zero_()
        ops._launch(kernel, grid, args, constexprs, options)
        torch.cuda.synchronize()
        result["fast launch output equals Triton launch (1 = yes)"] = float(torch.equal(out, reference))
        timed("fast launch (ops._launch)", lambda: ops._launch(kernel, grid, args, constexprs, options))
        timed("run_fused", lambda: ops.run_fused(x, *params[:4], params[5], params[7], weights, DILATION,
                                                block.norm.eps))
        with torch.no_grad():
            timed("module forward (eval, no_grad)", lambda: block(x))
        timed("torch.empty_like", lambda: torch.empty_like(x))
        block.train()
        return result

    if DEVICE == "cuda":
        breakdown = guarded("host breakdown", host_breakdown) or {}
        for label, value in breakdown.items():
            print(f"# host {label}: {value:.1f} us" if "equals" not in label else f"# {label}: {value}", flush=True)
            if "equals" in label:
                check("fast launch output == Triton launch output (1 = yes)", 1.0 - value, 0.0)
            rows.append({"path": f"host: {label}", "dtype": "bf16", "N": small, "median_ms": value,
                         "peak_extra_mb": None, "first_call_ms": None, "note": "microseconds per call"})

    # variants at the big shape (and the small ones for the inference variants)
    for spec in variants:
        if not variant_ok.get(spec):
            continue
        dtype_name, training, config, gelu, expansion = spec
        for n in ([big] if training or gelu != "poly" or expansion != EXPANSION or not args.explore_all_sizes
                  else sizes):
            case = make_variant_case(torch, ops, dtype_name, training, batch=n, seed=12, expansion=expansion)

            def variant_fn(case=case):
                with torch.no_grad():
                    return run_variant(torch, ops, *case, training, config, gelu)
            record(variant_label(*spec), dtype_name.replace("-1pass", ""), n, variant_fn, memory=False)
            del case
        dump("variants")
    for mode, config in FP32_MODE_CONFIGS.items():
        block, x = blocks["fp32"], inputs[big, "fp32"][0]
        weights = ops.prepare_mlp_weights(block.fc1.weight, block.fc2.weight, mode)

        def mode_fn(weights=weights, mode=mode, config=config):
            with torch.no_grad():
                return ops.cheri_block_megakernel(x, *block._params(), dilation=DILATION, mlp_weights=weights,
                                                  fp32_dot=mode, config=config)
        record(f"megakernel fp32_dot={mode} {config}", "fp32", big, mode_fn, memory=False)

    # the conv + LayerNorm kernels alone (training backward pieces)
    for name in ("bf16", "fp32"):
        block, x = blocks[name], inputs[big, name][0]
        conv_params = [p.detach() for p in block._params()[:4]]
        for block_l in (32, 64):
            record(f"conv+norm fwd kernel BLOCK_L={block_l}", name, big, lambda block_l=block_l: ops._conv_norm_forward(
                x, *conv_params, DILATION, block.norm.eps, save_stats=True, block_l=block_l), memory=False)
        z, mean, rstd = ops._conv_norm_forward(x, *conv_params, DILATION, block.norm.eps, save_stats=True)
        dz = torch.randn_like(z)
        def dy_only(block_l):
            batch = x.shape[0]
            num_l_blocks = LENGTH // block_l
            tiles = max(1, min(num_l_blocks, batch * num_l_blocks // (8 * ops._multiprocessor_count(0))))
            programs = batch * (num_l_blocks // tiles)
            dy = torch.empty((batch, CHANNELS, LENGTH), device=DEVICE, dtype=torch.float32)
            partials = torch.empty((programs, 3 + KERNEL_SIZE, CHANNELS), device=DEVICE, dtype=torch.float32)
            ops._conv_norm_bwd_dy_kernel[(programs,)](
                x, conv_params[0], conv_params[1], conv_params[2], mean, rstd, dz, dy, partials,
                LENGTH, tiles, num_l_blocks // tiles, C=CHANNELS, KERNEL_SIZE=KERNEL_SIZE, DILATION=DILATION,
                EVEN_L=num_l_blocks % tiles == 0, BLOCK_K=4, BLOCK_L=block_l, BLOCK_C=CHANNELS,
                num_warps=4 if block_l * CHANNELS <= 4096 else 8)
            return dy
        if DEVICE == "cuda":
            for block_l in (16, 32, 64):
                record(f"conv+norm bwd dy kernel alone BLOCK_L={block_l}", name, big,
                       lambda block_l=block_l: dy_only(block_l), memory=False)
        for block_l, dx_block_l in ((32, 256), (64, 256), (32, 128)):
            record(f"conv+norm bwd (dy+dx kernels) BLOCK_L={block_l}/{dx_block_l}", name, big,
                   lambda block_l=block_l, dx_block_l=dx_block_l: ops._conv_norm_backward(
                       dz, x, *conv_params[:3], mean, rstd, DILATION, residual_grad=x, block_l=block_l,
                       dx_block_l=dx_block_l), memory=False)
    print(f"# variants done at {elapsed():.1f}s", flush=True)

    # torch.compile of the reference module, last: its compile time is the least predictable
    if not args.no_compile:
        for name in dtypes:
            compiled = torch.compile(CheriBlockReference(blocks[name]), dynamic=True)
            for n in sizes:
                if elapsed() > args.budget_s:
                    rows.append({"path": "torch-compile", "dtype": name, "N": n, "median_ms": None,
                                 "peak_extra_mb": None, "first_call_ms": None, "note": "skipped: time budget"})
                    continue
                x = inputs[n, name][0]

                def compiled_fn(compiled=compiled, x=x):
                    with torch.no_grad():
                        return compiled(x)
                first_calls["torch-compile", name, n] = guarded(f"{name} N={n} torch-compile first call",
                                                                lambda: first_call_ms(compiled_fn))
                record("torch-compile", name, n, compiled_fn, note="dynamic=True, no_grad")

    # ---------------------------------------------------------------- goals, JSON, table
    def median(path, name, n):
        return next((r["median_ms"] for r in rows if (r["path"], r["dtype"], r["N"]) == (path, name, n)), None)

    goals = []
    for path, name, n, goal in GOALS_MS:
        value = median(path, name, n)
        goals.append({"goal": f"{path} {name} N={n} <= {goal} ms", "value_ms": value,
                      "met": value is not None and value <= goal})
    for name in dtypes:
        for n in sizes:
            a, b = median("megakernel-no-eval", name, n), median("megakernel+eval", name, n)
            overhead = None if a is None or b is None else a - b
            goals.append({"goal": f"no-eval overhead {name} N={n} <= {NO_EVAL_OVERHEAD_GOAL_MS} ms",
                          "value_ms": overhead, "met": overhead is not None and overhead <= NO_EVAL_OVERHEAD_GOAL_MS})
    for g in goals:
        value = "n/a" if g["value_ms"] is None else f"{g['value_ms']:.4f} ms"
        print(f"GOAL {'MET ' if g['met'] else 'MISS'} {g['goal']}: {value}")

    report = {"env": env, "checks": checks, "errors": errors, "rows": rows, "goals": goals,
              "first_calls": [{"path": k[0], "dtype": k[1], "N": k[2], "ms": v} for k, v in first_calls.items()],
              "compile_errors": {variant_label(*k) + " " + k[0]: v for k, v in compile_errors.items()},
              "elapsed_s": elapsed()}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)

    failed = [c for c in checks if not c["pass"]]
    print(f"\n# {len(checks) - len(failed)}/{len(checks)} checks passed, {len(errors)} errors, "
          f"{elapsed():.0f}s; JSON: {args.out}")
    print(f"{'dtype':5} {'path':46}" + "".join(f"{'N=' + str(n):>9}" for n in sizes)
          + f" {'1st-call':>9} {'peakMB':>7}   (median ms; 1st-call ms and peak extra MB at N={big})")
    seen = []
    for r in rows:
        if (r["dtype"], r["path"]) not in seen:
            seen.append((r["dtype"], r["path"]))
    for name, path in sorted(seen, key=lambda k: list(dtypes).index(k[0])):
        cells = {r["N"]: r for r in rows if (r["dtype"], r["path"]) == (name, path)}
        line = f"{name:5} {path[:46]:46}"
        for n in sizes:
            value = cells.get(n, {}).get("median_ms")
            line += f"{'-' if value is None else format(value, '.4f'):>9}"
        last = cells.get(big, {})
        first, memory = last.get("first_call_ms"), last.get("peak_extra_mb")
        line += f" {'-' if first is None else format(first, '.0f'):>9}"
        line += f" {'-' if memory is None else format(memory, '.0f'):>7}"
        print(line)
    eval_builds = ", ".join(f"{name} {first_calls.get(('eval()-cache-build', name, None)) or 0:.0f} ms"
                            for name in dtypes)
    print(f"# .eval() cache build first call: {eval_builds}")
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
