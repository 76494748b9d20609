"""Anchor for DESIGN.md §6: load every scalar of one TensorBoard event file with tbparse."""
import resource, sys, time

from tbparse import SummaryReader

t = time.perf_counter()
df = SummaryReader(sys.argv[1]).scalars
secs = time.perf_counter() - t
print(f"tbparse_seconds {secs:.3f} ({len(df)} scalars)")
print(f"tbparse_peak_rss_mb {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f}")
