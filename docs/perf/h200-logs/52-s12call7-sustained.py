# session 12 call 7 (GPU-82dca5a9, 5e827b8), diagnosis: per-call GPU time of the linear CE forward over 80
# back-to-back calls (CUDA events), with nvidia-smi polled during them. Run as: PYTHONPATH=/tmp/site:/tmp/t python3 this
import torch, subprocess, threading, time
from greyhound import chunked_linear_cross_entropy
torch.manual_seed(0)
BT, H, V = 8192, 4096, 128256
x = (torch.randn(BT, H, device="cuda") * 0.5).bfloat16(); w = (torch.randn(V, H, device="cuda") * 0.02).bfloat16()
t = torch.randint(0, V, (BT,), device="cuda")
clocks = []
def poll():
    for _ in range(12):
        clocks.append(subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu", "--format=csv,noheader"], capture_output=True, text=True).stdout.strip()); time.sleep(0.1)
with torch.no_grad():
    chunked_linear_cross_entropy(x, w, t, check_target=False); torch.cuda.synchronize(); time.sleep(2)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(80)]
    th = threading.Thread(target=poll); th.start()
    for a, b in ev:
        a.record(); chunked_linear_cross_entropy(x, w, t, check_target=False); b.record()
    torch.cuda.synchronize(); th.join()
ms = [a.elapsed_time(b) for a, b in ev]
print("per-call ms, calls 1-10:", " ".join(f"{m:.2f}" for m in ms[:10]))
print("calls 71-80:", " ".join(f"{m:.2f}" for m in ms[-10:]))
print("clocks/power/temp during:", clocks)
