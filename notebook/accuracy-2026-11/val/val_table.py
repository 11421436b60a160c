import json, csv, collections, statistics as st
def load(p):
    out = {}
    for l in open(p):
        d = json.loads(l)
        k = d.get("set") or d.get("data")
        out[k] = d
    return out
new = load('/work/plan/val/new-prot.jsonl'); old = load('/work/plan/val/old-prot.jsonl')
peers = {}
for l in open('/work/data/acc/peers.jsonl'):
    d = json.loads(l); peers.setdefault(d['data'], {})[d['tool']] = d['column_accuracy']
man = {r['set']: r for r in csv.DictReader(open('/work/data/acc/sets.tsv'), delimiter='\t')}
def acc(d):
    for k in ('papara', 'column_accuracy'):
        if k in d: return d[k]
    return d['papara-inproc']['column_accuracy'] if 'papara-inproc' in d else None
first = next(iter(new.values())); print(list(first.keys())[:12])
suites = collections.defaultdict(list)
for s, d in new.items():
    if s not in old: continue
    r = man[s]; p = peers.get(s, {})
    better = max(p.values()) if len(p) == 2 else None
    suites[r['suite']].append((s, r['family'], d['column_accuracy'], old[s]['column_accuracy'], better))
print("| suite | sets | mean change vs 0.11.0 | up / down | family-level: mean change, seed SD of 0.11.0 | sets with peers | >= better peer (new) | >= better peer (0.11.0) | worst margin (new) | worst margin (0.11.0) |")
allc=[]
for suite, rows in suites.items():
    ch = [n - o for _, _, n, o, _ in rows]; allc += ch
    wp = [(s, n - b, o - b) for s, _, n, o, b in rows if b is not None]
    fam = collections.defaultdict(list)
    for s, f, n, o, b in rows: fam[f].append((n, o))
    fam_lines = []
    for f, v in fam.items():
        if len(v) > 2:
            d = st.mean(n - o for n, o in v); sd = st.stdev(o for _, o in v)
            fam_lines.append(f"{f}: {d:+.4f} (SD {sd:.4f})")
    line = f"| {suite} | {len(rows)} | {st.mean(ch):+.4f} | {sum(c > 0 for c in ch)} / {sum(c < 0 for c in ch)} | "
    if wp:
        wn = min(wp, key=lambda x: x[1]); wo = min(wp, key=lambda x: x[2])
        line += f"{len(wp)} | {sum(x[1] >= 0 for x in wp)} | {sum(x[2] >= 0 for x in wp)} | {wn[1]:+.4f} ({wn[0]}) | {wo[2]:+.4f} ({wo[0]}) |"
    else:
        line += "0 | | | | |"
    print(line); print("   ", "; ".join(fam_lines))
print("ALL", len(allc), f"{st.mean(allc):+.4f}", sum(c>0 for c in allc), sum(c<0 for c in allc))
