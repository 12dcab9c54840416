"""Session 27 diagnosis (not a published timing): the default bf16 Cheri megakernel (Gluon) at N=512 against copies
of itself with one part taken out, each compiled from a rewritten copy of greyhound/ops/_cheri_gluon.py and timed in
one process by triton.testing.do_bench (median ms). The copies compute wrong results on purpose; what they say is
how much of the time each part holds:
  no_refill: the weight rings are filled once (chunks 0..STAGES-1) and never refilled: no L2 -> SM weight traffic
  x_l2:      every tile reads x from batch row 0 (256 KiB, L2-resident): x's HBM latency gone
  no_gelu:   the GELU is the identity (pre + b1)
"""
import importlib.util, os, sys
import torch, triton
from greyhound import CheriBlock

SRC = open(os.path.join(os.path.dirname(__import__("greyhound").__file__), "ops", "_cheri_gluon.py")).read()
EDITS = {
    "no_refill": [("if j + W1_STAGES < n_chunks:", "if False:"), ("if j - 1 + STAGES < n_chunks:", "if False:"),
                  ("if W1_STAGES < n_chunks:", "if False:")],
    "x_l2": [("x_row = x_ptr + row", "x_row = x_ptr + row * 0")],
    "no_gelu": [("hidden = _gelu_poly(pre, gl.expand_dims(bias, 0))", "hidden = pre + gl.expand_dims(bias, 0)")],
}
os.makedirs("/tmp/diag", exist_ok=True)


def module(name):
    src = SRC
    for part in name.split("+"):
        for old, new in EDITS.get(part, []):
            assert old in src, (part, old)
            src = src.replace(old, new)
    path = f"/tmp/diag/cg_{name.replace('+', '_')}.py"
    open(path, "w").write(src)
    spec = importlib.util.spec_from_file_location(f"cg_{name.replace('+', '_')}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


torch.manual_seed(0)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 512
block = CheriBlock(128, 3, 4, 4, device="cuda").to(torch.bfloat16).eval()
x = torch.randn(N, 128, 1024, device="cuda", dtype=torch.bfloat16)
out = torch.empty_like(x)
args = (x, out, block.conv.weight.contiguous(), block.conv.bias, block.norm.weight, block.norm.bias,
        block.fc1.weight.contiguous(), block.fc1.bias, block.fc2.weight.contiguous(), block.fc2.bias, 4, 1e-5)
CONFIGS = {"default": dict(block_l=64, block_e=32, num_warps=4, stages=2, max_registers=168, z_regs=True),
           "64x64": dict(block_l=64, block_e=64, num_warps=4, stages=2)}
variants = ["base", "no_refill", "x_l2", "no_gelu", "no_refill+x_l2", "no_refill+no_gelu", "no_refill+x_l2+no_gelu"]
mods = {v: module(v) for v in variants}
with torch.no_grad():
    reference = block(x)
    for cname, cfg in CONFIGS.items():
        mods["base"].launch(*args, **cfg)
        torch.cuda.synchronize()
        print(cname, "base max|out - module| =", (out.float() - reference.float()).abs().max().item(), flush=True)
    for rnd in range(2):
        for cname, cfg in CONFIGS.items():
            for v in variants if cname == "default" else ["base", "no_refill", "x_l2", "no_refill+x_l2"]:
                fn = lambda: mods[v].launch(*args, **cfg)
                ms = triton.testing.do_bench(fn, warmup=50, rep=300, return_mode="median")
                print(f"round {rnd} N={N} {cname:8s} {v:26s} {ms:.4f} ms", flush=True)
