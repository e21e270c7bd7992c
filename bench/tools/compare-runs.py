#!/usr/bin/env python3
# Two full runs compared row by row as ratios to a peer of the same run
# (Caddy, node:http2 or the native handler), so a host that is faster or
# slower overall moves nothing:
#   python3 bench/tools/compare-runs.py bench/results/OLD.json bench/results/NEW.json
import json, statistics, sys
from collections import defaultdict
def load(p):
    d = json.load(open(p))
    rows = defaultdict(lambda: defaultdict(list))
    for r in d['rows']:
        for k in ('rps', 'cpu_us_per_req'):
            if isinstance(r.get(k), (int, float)):
                rows[r['workload']][(r['variant'], k)].append(r[k])
    return {w: {k: statistics.median(v) for k, v in vs.items()} for w, vs in rows.items()}, d
old, od = load(sys.argv[1]); new, nd = load(sys.argv[2])
PEERS = ['caddy', 'node-http2 (h2load)', 'h3-node (native)']
print(f"{'workload':8} {'variant':58} {'metric':15} {'old':>10} {'new':>10} {'raw':>7} {'vs peer':>8} peer")
worst = []
for w in sorted(new):
    for (variant, k), nv in sorted(new[w].items()):
        ov = old.get(w, {}).get((variant, k))
        if ov is None or ov == 0 or nv == 0: continue
        peer = next((p for p in PEERS if p != variant and (p, k) in new[w] and (p, k) in old.get(w, {})), None)
        raw = nv / ov
        rel = None
        if peer:
            rel = (nv / new[w][(peer, k)]) / (ov / old[w][(peer, k)])
        # "worse": rps lower, cpu higher
        bad = (1 / rel if k == 'rps' else rel) if rel else None
        worst.append((bad or 0, w, variant, k))
        print(f"{w:8} {variant[:58]:58} {k:15} {ov:10.1f} {nv:10.1f} {raw:7.2f} {rel if rel else float('nan'):8.2f} {peer or '-'}")
print()
print("worst relative (>1 = worse than last run against the same peer):")
for b, w, v, k in sorted(worst, reverse=True)[:12]:
    print(f"  {b:.3f} {w} {v} {k}")
