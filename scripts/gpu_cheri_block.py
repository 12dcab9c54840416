#!/usr/bin/env python3
"""Cheri Block on CUDA: correctness of every path in fp32/bf16/fp16 (PASS/FAIL lines), then a timing table.

    python3 scripts/gpu_cheri_block.py [--out PATH] [--sizes 16,64,512] [--no-compile] [--warm-cache]
    python3 scripts/gpu_cheri_block.py --cpu-smoke   # the script's logic on tiny shapes in the Triton interpreter

1. Cold first calls (Triton compile + autotune, .eval() cache build) of each greyhound path at the issue's shape.
2. Correctness vs an fp64 reference on fresh random inputs and weights, including the bf16 tl.dot paths.
3. do_bench medians (warmup=25, rep=100) and peak extra CUDA memory for N x dtype x path, the peers
   (torch-eager, torch.compile of the reference module), kernel/config variants; goals; the table last.
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


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.environ.get("OUT", "."), "gpu_cheri_block.json"))
    parser.add_argument("--sizes", default="16,64,512", help="batch sizes N (L=1024, C=128)")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile provider")
    parser.add_argument("--warm-cache", action="store_true",
                        help="keep the default Triton cache (first-call costs then exclude compilation)")
    parser.add_argument("--budget-s", type=float, default=80.0,
                        help="skip remaining torch.compile cells once this many seconds have passed")
    parser.add_argument("--cpu-smoke", action="store_true",
                        help="run every step on tiny CPU shapes through TRITON_INTERPRET=1 (no timings worth reading)")
    return parser.parse_args()


def use_cpu_smoke_mode():
    """Tiny shapes on CPU tensors through the Triton interpreter; CUDA timing and memory calls are stubbed."""
    global CHANNELS, LENGTH, ODD_SHAPE, DEVICE
    os.environ["TRITON_INTERPRET"] = "1"
    CHANNELS, LENGTH, ODD_SHAPE, DEVICE = 32, 48, (2, 24, 40), "cpu"


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
    checks, rows, errors = [], [], []
    env = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "triton": triton.__version__,
           "shape": {"C": CHANNELS, "L": LENGTH, "kernel_size": KERNEL_SIZE, "dilation": DILATION,
                     "expansion": EXPANSION}, "triton_cache": os.environ.get("TRITON_CACHE_DIR", "default")}
    print(f"# {env['device']} torch {env['torch']} triton {env['triton']}", flush=True)

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
            block.train()
            with torch.enable_grad():
                return block(x_grad)

        def train_step():
            block.train()
            with torch.enable_grad():
                block(x_grad).backward(grad_out)

        def mega_eval():
            with torch.no_grad():
                return block(x)

        def mega_no_eval():
            with torch.no_grad():
                return block(x)

        return {
            "training-fwd": (training_fwd, None, []),
            "train-step": (train_step, None, params + [x_grad]),
            "megakernel+eval": (mega_eval, lambda: block.eval(), []),
            "megakernel-no-eval": (mega_no_eval, lambda: block.train(), []),
        }

    blocks = {name: make_block(dtype) for name, dtype in dtypes.items()}
    inputs = {}
    for n in sizes:
        for name, dtype in dtypes.items():
            torch.manual_seed(100 + n)
            inputs[n, name] = (torch.randn(n, CHANNELS, LENGTH, device=DEVICE, dtype=dtype),
                               torch.randn(n, CHANNELS, LENGTH, device=DEVICE, dtype=dtype))

    # ---------------------------------------------------------------- 1. cold first calls
    first_calls = {}
    for name in dtypes:
        block = blocks[name]
        cost = guarded(f"{name} .eval() cache build", lambda: first_call_ms(lambda: block.eval()))
        first_calls["eval()-cache-build", name, None] = cost
        block.train()
        for n in sorted(sizes, reverse=True):
            x, grad_out = inputs[n, name]
            for path, (fn, prepare, _) in path_fns(block, x, grad_out).items():
                if prepare:
                    prepare()
                first_calls[path, name, n] = guarded(f"{name} N={n} {path} first call", lambda: first_call_ms(fn))
            block.train()
    print(f"# first calls done at {time.perf_counter() - started:.1f}s", flush=True)

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
        for mode in ("tf32x3", "ieee"):  # the config the variant timings use: no extra autotune compiles
            weights = ops.prepare_mlp_weights(block.fc1.weight, block.fc2.weight, mode)
            with torch.no_grad():
                out = ops.cheri_block_megakernel(x, *block._params(), dilation=DILATION, mlp_weights=weights,
                                                 fp32_dot=mode, config=(128, 64, 8, 2))
            check(f"fp32 megakernel fp32_dot={mode} max-abs vs fp64", max_abs(out, ref), 1e-5)

    def check_odd_shape(name, dtype):
        # C=96 (padded to 128 lanes), L=1000 (no tile divides it), K=2, a fixed tile config (one compile).
        batch, channels, length = ODD_SHAPE
        block = make_block(dtype, n_filters=channels, kernel_size=2, dilation=3, expansion=4, seed=3)
        x = torch.randn(batch, channels, length, device=DEVICE, dtype=dtype)
        ref = fp64_twin(block).reference_forward(x.double())
        with torch.no_grad():
            out = ops.cheri_block_megakernel(x, *block._params(), dilation=3, config=(64, 32, 4, 3))
            check(f"{name} odd shape (N,C,L={ODD_SHAPE},K=2) megakernel max-abs vs fp64", max_abs(out, ref),
                  MEGA_MAX_ABS[name])
            z = ops.conv_norm(x, *block._params()[:4], dilation=3)
            twin = fp64_twin(block)
            y64 = ops.causal_depthwise_conv(x.double(), twin.conv.weight, twin.conv.bias, 3)
            z64 = torch.nn.functional.layer_norm(y64.transpose(1, 2), (channels,), twin.norm.weight, twin.norm.bias)
        check(f"{name} odd shape conv+norm rel vs fp64", rel(z, z64), VALUE_REL[name])

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
    print(f"# correctness done at {time.perf_counter() - started:.1f}s", flush=True)

    # ---------------------------------------------------------------- 3. timing
    def record(path, name, n, fn, grad_to_none=(), note=""):
        def measure():
            median = do_bench(fn, warmup=25, rep=100, grad_to_none=list(grad_to_none) or None,
                              return_mode="median")
            memory = peak_extra_mb(fn)
            return median, memory
        result = guarded(f"{name} N={n} {path} timing", measure)
        rows.append({"path": path, "dtype": name, "N": n, "median_ms": result[0] if result else None,
                     "peak_extra_mb": result[1] if result else None,
                     "first_call_ms": first_calls.get((path, name, n)), "note": note})

    for n in sizes:
        for name in dtypes:
            block = blocks[name]
            x, grad_out = inputs[n, name]
            for path, (fn, prepare, grads) in path_fns(block, x, grad_out).items():
                if prepare:
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

    # variants at the big shape: fp32 dot modes, megakernel tile configs, conv+norm kernels alone
    big = max(sizes)
    fp32_block = blocks["fp32"]
    x32 = inputs[big, "fp32"][0]
    for mode in ("bf16x3", "tf32x3", "ieee"):  # one fixed config each: an autotune per mode costs compiles
        mode_weights = ops.prepare_mlp_weights(fp32_block.fc1.weight, fp32_block.fc2.weight, mode)

        def mode_fn(mode=mode, mode_weights=mode_weights):
            with torch.no_grad():
                return ops.cheri_block_megakernel(x32, *fp32_block._params(), dilation=DILATION,
                                                  mlp_weights=mode_weights, fp32_dot=mode, config=(128, 64, 8, 2))
        path = f"megakernel fp32_dot={mode} config (128,64,8,2)"
        first_calls[path, "fp32", big] = guarded(f"{path} first call", lambda: first_call_ms(mode_fn))
        record(path, "fp32", big, mode_fn)
    for name in ("bf16", "fp32"):
        block, x = blocks[name], inputs[big, name][0]
        weights = ops.prepare_mlp_weights(block.fc1.weight, block.fc2.weight)
        for config in ops.MEGAKERNEL_CONFIGS:
            def config_fn(config=config, block=block, x=x, weights=weights):
                with torch.no_grad():
                    return ops.cheri_block_megakernel(x, *block._params(), dilation=DILATION, mlp_weights=weights,
                                                      config=config)
            record(f"megakernel config {config}", name, big, config_fn,
                   note="fixed (BLOCK_L, BLOCK_E, num_warps, num_stages), eval-cached weights")
        conv_params = [p.detach() for p in block._params()[:4]]
        for block_l in (32, 64):
            record(f"conv+norm fwd kernel BLOCK_L={block_l}", name, big, lambda block_l=block_l: ops._conv_norm_forward(
                x, *conv_params, DILATION, block.norm.eps, save_stats=True, block_l=block_l))
        z, mean, rstd = ops._conv_norm_forward(x, *conv_params, DILATION, block.norm.eps, save_stats=True)
        dz = torch.randn_like(z)
        for block_l in (32, 64):
            record(f"conv+norm bwd kernel BLOCK_L={block_l}", name, big,
                   lambda block_l=block_l: ops._conv_norm_backward(dz, x, *conv_params[:3], mean, rstd, DILATION,
                                                                   block_l=block_l))

    # torch.compile of the reference module, last: its compile time is the least predictable
    if not args.no_compile:
        for name in dtypes:
            compiled = torch.compile(CheriBlockReference(blocks[name]), dynamic=True)
            for n in sizes:
                if time.perf_counter() - started > args.budget_s:
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

    elapsed = time.perf_counter() - started
    report = {"env": env, "checks": checks, "errors": errors, "rows": rows, "goals": goals,
              "first_calls": [{"path": k[0], "dtype": k[1], "N": k[2], "ms": v} for k, v in first_calls.items()],
              "elapsed_s": elapsed}
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)

    failed = [c for c in checks if not c["pass"]]
    print(f"\n# {len(checks) - len(failed)}/{len(checks)} checks passed, {len(errors)} errors, "
          f"{elapsed:.0f}s; JSON: {args.out}")
    print(f"{'dtype':5} {'path':52}" + "".join(f"{'N=' + str(n):>9}" for n in sizes)
          + f" {'1st-call':>10} {'peak MB':>9}   (median ms; 1st-call ms and peak extra MB at N={big})")
    seen = []
    for r in rows:
        if (r["dtype"], r["path"]) not in seen:
            seen.append((r["dtype"], r["path"]))
    for name, path in sorted(seen, key=lambda k: list(dtypes).index(k[0])):
        cells = {r["N"]: r for r in rows if (r["dtype"], r["path"]) == (name, path)}
        line = f"{name:5} {path[:52]:52}"
        for n in sizes:
            value = cells.get(n, {}).get("median_ms")
            line += f"{'-' if value is None else format(value, '.4f'):>9}"
        last = cells.get(big, {})
        first, memory = last.get("first_call_ms"), last.get("peak_extra_mb")
        line += f" {'-' if first is None else format(first, '.0f'):>10}"
        line += f" {'-' if memory is None else format(memory, '.0f'):>9}"
        print(line)
    eval_builds = ", ".join(f"{name} {first_calls.get(('eval()-cache-build', name, None)) or 0:.0f} ms"
                            for name in dtypes)
    print(f"# .eval() cache build first call: {eval_builds}")
    return 1 if failed or errors else 0


if __name__ == "__main__":
    sys.exit(main())
