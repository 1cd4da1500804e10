import cProfile, pstats, threading, concurrent.futures.thread as cft, os, sys, runpy
profs = []
local = threading.local()
orig_run = cft._WorkItem.run
def run(self):
    p = getattr(local, "p", None)
    if p is None:
        p = local.p = cProfile.Profile(); profs.append(p)
    p.enable()
    try:
        return orig_run(self)
    finally:
        p.disable()
cft._WorkItem.run = run
main = cProfile.Profile()
import atexit
def dump():
    main.disable()
    s = pstats.Stats(main)
    for p in profs: s.add(p)
    s.dump_stats("/tmp/turnprof.pstats")
atexit.register(dump)
main.enable()
runpy.run_path(os.path.join(os.path.dirname(__file__), "_turnprof.py"), run_name="__main__")
