import sys, glob
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
for d in sys.argv[1:]:
    ea = EventAccumulator(d, size_guidance={"scalars": 0}); ea.Reload()
    for t in ea.Tags()["scalars"]:
        ev = ea.Scalars(t); v = [e.value for e in ev]
        k = max(1, len(v)//10)
        first = sum(v[:k])/k; last = sum(v[-k:])/k
        print(f"{t}: n={len(v)} steps {ev[0].step}..{ev[-1].step} first={v[0]:.4f} last={v[-1]:.4f} mean_first10%={first:.4f} mean_last10%={last:.4f} min={min(v):.4f}@{ev[v.index(min(v))].step} max={max(v):.4f}")
