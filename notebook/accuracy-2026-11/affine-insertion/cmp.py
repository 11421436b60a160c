import csv, sys
def load(f):
    return {r["set"]: r for r in csv.DictReader(open(f), delimiter="\t")}
base = load("/tmp/aff/runs/base.tsv")
files = sys.argv[1:]
data = {f: load(f) for f in files}
sets = list(data[files[0]])
print("set".ljust(18), "base".rjust(9), *[f.split("/")[-1][:-4].rjust(10) for f in files])
for s in sets:
    b = float(base[s]["margin"])
    print(s.ljust(18), f"{b:+.5f}", *[f"{float(data[f][s]['margin'])-b:+.5f}".rjust(10) for f in files])
for f in files:
    ms = [float(data[f][s]["margin"]) for s in sets]
    print(f"{f}: worst {min(ms):+.5f} mean {sum(ms)/len(ms):+.5f} atorabove {sum(m>=0 for m in ms)}")
ms = [float(base[s]["margin"]) for s in sets]
print(f"base: worst {min(ms):+.5f} mean {sum(ms)/len(ms):+.5f} atorabove {sum(m>=0 for m in ms)}")
