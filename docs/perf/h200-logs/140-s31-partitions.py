"""Session 31: ncu source-level stall samples of the warp-specialised kernel (one SASS csv of `ncu --page source`),
split by partition. The partitions' code ranges are found by their setmaxnreg (USETMAXREG) instructions: argv[2] is
a JSON dict name -> [first, last) SASS row."""
import io, json, sys
import pandas as pd
lines = open(sys.argv[1]).read().splitlines()
df = pd.read_csv(io.StringIO("\n".join(lines[1:])))
samples = "Warp Stall Sampling (All Samples)"
stall = [c for c in df.columns if c.startswith("stall_") and "Not Issued" not in c]
for c in stall + [samples, "Instructions Executed"]:
    df[c] = pd.to_numeric(df[c].astype(str).str.replace(",", ""), errors="coerce").fillna(0)
total = df[samples].sum()
for i, s in enumerate(df["Source"].astype(str)):
    if "SETMAXREG" in s or s.strip().startswith("EXIT"):
        print("marker", i, s.strip()[:60])
for name, (a, b) in json.loads(sys.argv[2]).items():
    sub = df.iloc[a:b]
    s = sub[samples].sum()
    print(f"{name}: {s / total:.3f} of the samples, {int(sub['Instructions Executed'].sum())} warp instructions executed")
    print("   ", (sub[stall].sum() / s).sort_values(ascending=False).head(6).round(3).to_dict())
    for i, r in sub.sort_values(samples, ascending=False).head(8).iterrows():
        print(f"    {i:5d} {str(r['Source'])[:62]:62s} {r[samples] / s:.3f}")
