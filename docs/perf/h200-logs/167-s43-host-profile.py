"""Session 43 diagnosis (not a goal figure): where a small CheriBlock call's host time goes on the device's host.
For each case: host µs a call (perf_counter over 300 calls queued without a sync; the GPU work of an N=16 call is
~30-55 µs, so the loop is host-bound when this exceeds that), then cProfile of 300 calls, top functions by own time."""
import cProfile
import pstats
import sys
import time

import torch

from greyhound import CheriBlock

CASES = [("train", torch.bfloat16), ("train", torch.float32), ("train", torch.float16), ("noeval", torch.float32),
         ("eval", torch.bfloat16)]
for mode, dtype in CASES:
    torch.manual_seed(0)
    block = CheriBlock(128, 3, 4, 4, device="cuda").to(dtype)
    block.train(mode != "eval")
    x = torch.randn(16, 128, 1024, device="cuda", dtype=dtype)
    context = torch.enable_grad if mode == "train" else torch.no_grad

    def calls(n):
        with context():
            for _ in range(n):
                block(x)

    calls(20)
    torch.cuda.synchronize()
    start = time.perf_counter()
    calls(300)
    host = (time.perf_counter() - start) / 300 * 1e6
    torch.cuda.synchronize()
    wall = (time.perf_counter() - start) / 300 * 1e6
    print(f"== {mode} {dtype}: host {host:.1f} us a call, with the final sync {wall:.1f} us")
    profile = cProfile.Profile()
    profile.enable()
    calls(300)
    profile.disable()
    torch.cuda.synchronize()
    stats = pstats.Stats(profile, stream=sys.stdout)
    stats.sort_stats("tottime").print_stats(22)
