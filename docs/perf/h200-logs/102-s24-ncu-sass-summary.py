"""Session 24: the summary of log 102's per-SASS warp stall samples (`ncu -i mk.ncu-rep --page source --csv
--print-source sass`, 1.9 MB, not kept): the share of stall samples in the prologue (before the first HGMMA), the MLP
(first to last HGMMA) and the epilogue, each region's top stall reasons, and the 30 instructions with the most
samples. Usage: python 102-s24-ncu-sass-summary.py mk-sass.csv > 102-s24-ncu-sass-summary.txt"""
import io
import sys

import pandas as pd

lines = open(sys.argv[1]).read().splitlines()
df = pd.read_csv(io.StringIO("\n".join(lines[1:])))
stall = [c for c in df.columns if c.startswith("stall_") and "Not Issued" not in c]
samples = "Warp Stall Sampling (All Samples)"
for c in stall + [samples, "Instructions Executed"]:
    df[c] = pd.to_numeric(df[c].astype(str).str.replace(",", ""), errors="coerce").fillna(0)
total = df[samples].sum()
print(f"{len(df)} SASS instructions, {int(total)} stall samples, "
      f"{int(df['Instructions Executed'].sum())} warp instructions executed")
print("all:", (df[stall].sum() / total).sort_values(ascending=False).head(10).round(3).to_dict())
hgmma = df.index[df["Source"].str.contains("HGMMA")]
for name, part in (("prologue", df.loc[:hgmma[0] - 1]), ("mlp", df.loc[hgmma[0]:hgmma[-1]]),
                   ("epilogue", df.loc[hgmma[-1] + 1:])):
    print(f"{name}: {len(part)} instructions, {part[samples].sum() / total:.3f} of the samples;",
          (part[stall].sum() / total).sort_values(ascending=False).head(6).round(3).to_dict())
for i, r in df.sort_values(samples, ascending=False).head(30).iterrows():
    print(f"{i:5d} {r['Source'][:60]:60s} samples {int(r[samples]):5d} long_sb {int(r['stall_long_sb']):5d} "
          f"wait {int(r['stall_wait']):4d} barrier {int(r['stall_barrier']):4d}")
