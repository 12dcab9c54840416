"""What the H200 check scripts share: the relative-norm error and a PASS/FAIL line recorded into their results."""
import torch


def rel_err(out, ref):
    out, ref = out.detach().double(), ref.detach().double()
    if not torch.equal(torch.isfinite(out), torch.isfinite(ref)):
        return float("inf")
    out, ref = torch.nan_to_num(out), torch.nan_to_num(ref)
    return ((out - ref).norm() / ref.norm().clamp_min(1e-30)).item()


def make_check(results):
    """A check(name, err, tol) that prints PASS/FAIL and appends to results["checks"]."""
    def check(name, err, tol):
        ok = err <= tol
        results["checks"].append({"name": name, "rel_err": err, "tol": tol, "pass": ok})
        print(f"{'PASS' if ok else 'FAIL'} {name}: rel err {err:.2e} (tol {tol:.0e})", flush=True)
        return ok
    return check
