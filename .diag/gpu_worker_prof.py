import cProfile, pstats, io, sys, time
import numpy as np
sys.path.insert(0, "benchmarks")
from _harness import ranking_data

def prof(fn):
    pr = cProfile.Profile(); pr.enable(); t = time.perf_counter(); out = fn(); dt = time.perf_counter() - t; pr.disable()
    s = io.StringIO(); pstats.Stats(pr, stream=s).sort_stats("cumulative").print_stats(25)
    return dt, s.getvalue(), out

def fit_worker(X, y, qid, params):
    from skltr import GPUHistGBDTRanker
    GPUHistGBDTRanker(**{**params, "n_estimators": 2}).fit(X[:20000], y[:20000], qid=qid[:20000])
    dt, text, m = prof(lambda: GPUHistGBDTRanker(**params).fit(X, y, qid=qid))
    return dt, text, m.timings_

if __name__ == "__main__":
    from distributed import Client, LocalCluster
    X, Xt, y, yt, qid, qt = ranking_data(1_000_000, 120)
    X = np.ascontiguousarray(X, dtype=np.float32)
    params = dict(n_estimators=200, device="cuda", growth="depthwise", max_depth=6, max_leaves=None, random_state=0, n_jobs=4)
    with LocalCluster(n_workers=1, threads_per_worker=4, processes=True, dashboard_address=":0") as cl, Client(cl) as c:
        [fx] = c.scatter([X]); 
        dt, text, tim = c.submit(fit_worker, fx, y, qid, params).result()
        print("LOCAL GPU FIT INSIDE A DASK WORKER", dt, tim); print(text[:6000])
    dt, text, tim = fit_worker(X, y, qid, params)
    print("LOCAL GPU FIT IN THE MAIN PROCESS", dt, tim); print(text[:6000])
