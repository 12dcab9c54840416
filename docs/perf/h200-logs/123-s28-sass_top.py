"""Session 28: the top stall-sampled SASS instructions of one ncu source page (csv), with their main stall reasons."""
import io, sys
import pandas as pd
lines = open(sys.argv[1]).read().splitlines()
df = pd.read_csv(io.StringIO("\n".join(lines[1:])))
stall = [c for c in df.columns if c.startswith("stall_") and "Not Issued" not in c]
samples = "Warp Stall Sampling (All Samples)"
for c in stall + [samples, "Instructions Executed"]:
    df[c] = pd.to_numeric(df[c].astype(str).str.replace(",", ""), errors="coerce").fillna(0)
total = df[samples].sum()
print(f"{len(df)} SASS instructions, {int(total)} stall samples")
print("all:", (df[stall].sum() / total).sort_values(ascending=False).head(10).round(3).to_dict())
for i, r in df.sort_values(samples, ascending=False).head(40).iterrows():
    top = sorted(((r[c], c.replace("stall_", "")) for c in stall), reverse=True)[:3]
    print(f"{i:5d} {str(r['Source'])[:70]:70s} {r[samples] / total:.3f} " + " ".join(f"{n}:{int(v)}" for v, n in top))
