"""Child process for the warm-cache latency measurement (run by bench/run.py).

    python bench/_warm_child.py MODULE_PATH N

Imports numpy, s2sad and MODULE_PATH (not timed), then times, from before
`s2sad.grad(module.loss)` to the return of its first call on an array of N elements.
Prints one JSON line. S2SAD_CACHE_DIR comes from the environment.
"""
import importlib.util
import json
import os
import sys
import time

t_import = time.perf_counter()
import numpy as np  # noqa: E402

import s2sad  # noqa: E402

path, n = sys.argv[1], int(sys.argv[2])
spec = importlib.util.spec_from_file_location(os.path.splitext(os.path.basename(path))[0], path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
x = np.random.default_rng(0).standard_normal(n)
import_ms = (time.perf_counter() - t_import) * 1e3

t0 = time.perf_counter()
g = s2sad.grad(mod.loss)(x)
t1 = time.perf_counter()
# A second call of a second grad object: what is left once everything is in memory.
t2 = time.perf_counter()
s2sad.grad(mod.loss)(x)
t3 = time.perf_counter()

cache = os.environ.get("S2SAD_CACHE_DIR", "")
files = sum(len(fs) for _, _, fs in os.walk(cache)) if cache and os.path.isdir(cache) else 0
print(json.dumps({"first_us": (t1 - t0) * 1e6, "second_grad_object_us": (t3 - t2) * 1e6,
                  "import_ms": import_ms, "cache_files": files,
                  "llvmlite_loaded": "llvmlite.binding" in sys.modules,
                  "grad_ok": bool(np.all(np.isfinite(g)))}))
