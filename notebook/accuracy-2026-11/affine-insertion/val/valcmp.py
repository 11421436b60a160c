import json, math, sys
def load(f):
    return {json.loads(l)["set"]: json.loads(l) for l in open(f)}
b, x = load(sys.argv[1]), load(sys.argv[2])
folder = sys.argv[3]
d = []
for s in sorted(b):
    better = max(json.load(open(f"{folder}/{s}.{peer}.json"))["column_accuracy"] for peer in ("mafft", "hmmalign"))
    delta = x[s]["papara"] - b[s]["papara"]
    d.append(delta)
    print(f"| {s} | {b[s]['papara']:.4f} | {x[s]['papara']:.4f} | {delta:+.5f} | {better:.4f} | {b[s]['papara']-better:+.4f} | {x[s]['papara']-better:+.4f} |")
n = len(d); mean = sum(d)/n; sd = math.sqrt(sum((v-mean)**2 for v in d)/(n-1)); se = sd/math.sqrt(n)
print(f"mean {mean:+.5f} SE {se:.5f} mean/SE {mean/se:+.2f} up {sum(v>0 for v in d)} down {sum(v<0 for v in d)} worst {min(d):+.5f}")
