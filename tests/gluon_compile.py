"""Compile a Gluon kernel for Hopper (sm_90a) with the installed Triton, on a machine without a GPU.

The Gluon kernels run only on the H200; CI's Triton cannot execute them. Compiling them here checks that their
source is valid for this Triton's Gluon API (which moves between releases; the runtime would otherwise warn and fall
back to the plain Triton kernels there) and lets a test read facts off the PTX. The compile runs in a subprocess:
under TRITON_INTERPRET=1, how CI runs the kernels, `gluon.jit` functions are interpreter objects that cannot be
compiled.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

_SCRIPT = r"""
import json, re, sys
import triton
from triton.experimental.gluon._runtime import GluonASTSource
from triton.backends.compiler import GPUTarget
module_name, kernel_name, types, constexprs, num_warps, divisible, ptxas_report = json.loads(sys.argv[1])
module = __import__(module_name, fromlist=[kernel_name])
kernel = getattr(module, kernel_name)
names = kernel.arg_names
signature = {n: ("constexpr" if n in constexprs else types[n]) for n in names}
# what Triton's launcher specialises at run time for arguments divisible by 16
attrs = {(i,): [["tt.divisibility", 16]] for i, n in enumerate(names)
         if types.get(n, "").startswith("*") or n in divisible}
source = GluonASTSource(kernel, signature, constexprs={(names.index(k),): v for k, v in constexprs.items()},
                        attrs=attrs)
compiled = triton.compile(source, target=GPUTarget("cuda", 90, 128), options={"num_warps": num_warps})
ptx = compiled.asm["ptx"]
# ptxas's own report on this PTX (-v), when asked for: the first of Triton's ptxas builds that takes its PTX version
import os, subprocess, tempfile
report = None
if ptxas_report:
    with tempfile.TemporaryDirectory() as folder:
        open(os.path.join(folder, "k.ptx"), "w").write(ptx)
        for knob in ("ptxas", "ptxas_blackwell"):
            try:
                path = getattr(triton.knobs.nvidia, knob).path
            except Exception:
                continue
            run = subprocess.run([path, "-arch=sm_90a", "-v", os.path.join(folder, "k.ptx"), "-o",
                                  os.path.join(folder, "k.cubin")], capture_output=True, text=True)
            if run.returncode == 0:
                report = run.stderr
                break
copies = re.findall(r"cp\.async\.c[ag]\.shared\.global\S*\s+\[[^]]*\],\s*\[[^]]*\],\s*(0x[0-9a-f]+|\d+)", ptx)
print(json.dumps({"shared": compiled.metadata.shared, "cubin": bool(compiled.asm.get("cubin")),
                  "copy_bytes": sorted({int(c, 0) for c in copies}), "copies": len(copies),
                  "wgmma": ptx.count("wgmma.mma_async"), "global_stores": len(re.findall(r"\bst\.global", ptx)),
                  "global_stores_16b": len(re.findall(r"\bst\.global\S*\.v4\.b32", ptx)),
                  "wgmma_kinds": sorted(set(re.findall(r"wgmma\.mma_async\.\S+", ptx))),
                  "wgmma_register_a": len(re.findall(r"wgmma\.mma_async\S*\s+\{[^}]*\},\s*\{", ptx)),
                  "acquire_release": len(re.findall(r"\b(?:atom|red)\.\S*(?:release|acquire)|ld\.\S*acquire", ptx)),
                  "fences": len(re.findall(r"\b(?:fence|membar)\.", ptx)),
                  "exchanges": len(re.findall(r"\batom\.\S*exch", ptx)),
                  "l2_prefetches": len(re.findall(r"\bprefetch\.global\.L2\b", ptx)),
                  "plain_b16_loads": len(re.findall(r"^\s*ld\.global\.b16\b", ptx, re.M)),
                  "b16_loads": len(re.findall(r"\bld\.global\S*\.b16\b", ptx)),
                  "lane_shuffles_up": len(re.findall(r"\bshfl\.sync\.up\b", ptx)),
                  "bf16_widenings": len(re.findall(r"\bcvt\.f32\.bf16\b", ptx)),
                  "shift_widenings": len(re.findall(r"\band\.b32\s+\S+,\s*\S+,\s*(?:0xffff0000|-65536)\s*;", ptx)),
                  "wait_groups": sorted({int(n) for n in re.findall(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", ptx)}),
                  "ptxas_ran": report is not None,
                  "ptxas_warnings": sorted(set(re.findall(r"C75\d\d", report or ""))),
                  "spill_bytes": sum(int(n) for n in re.findall(r"(\d+) bytes spill stores", report or ""))}))
"""


def compile_for_hopper(module_name, kernel_name, types, constexprs, num_warps, divisible=(), ptxas_report=False):
    """Facts about `module_name.kernel_name` compiled for sm_90a: shared memory bytes, whether a cubin was made,
    the sizes of its cp.async copies, their count, its wgmma count and instruction kinds (operand types), its global
    store instructions, its wgmmas whose A operand is in registers, its acquire/release memory operations, its fences,
    its atomic exchanges, the wgmma wait depths it uses, and with `ptxas_report` (a second ptxas run, so off by
    default) what ptxas -v reports on the PTX: whether one of Triton's ptxas builds took it, its C75xx performance
    warnings (e.g. C7513 "wgmma ... serialized") and its spill store bytes."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[1]), env.get("PYTHONPATH", "")])
    result = subprocess.run([sys.executable, "-c", _SCRIPT,
                             json.dumps([module_name, kernel_name, types, constexprs, num_warps, list(divisible), ptxas_report])],
                            capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, f"compiling {kernel_name} for sm_90a failed:\n{result.stderr[-3000:]}"
    return json.loads(result.stdout.strip().splitlines()[-1])
