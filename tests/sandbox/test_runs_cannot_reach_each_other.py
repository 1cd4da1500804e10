"""Class 4: two runs at the same time, the language layer off: the second cannot find,
signal or re-limit the first (nor the zygote), and the first finishes untouched."""

import os
import threading

from registry.sandbox import oslayer, service
from tests.sandbox.conftest import output, run

WAIT = 60.0

ATTACK = """
import errno, os, resource
found = {'uid': os.getuid(), 'pid': os.getpid(), 'proc': os.path.exists('/proc')}
for label, pid in (('victim', inputs['victim']), ('zygote', inputs['zygote'])):
    for action, attempt in (('prlimit', lambda: resource.prlimit(pid, resource.RLIMIT_CPU, (0, 0))),
                            ('kill', lambda: os.kill(pid, 9))):
        try:
            attempt()
            found[label + ' ' + action] = 'done'
        except OSError as exc:
            found[label + ' ' + action] = errno.errorcode[exc.errno]
result = repr(found)
"""


def _child_running_as(parent: int, uid: int) -> int:
    """The host pid of ``parent``'s child whose uid is ``uid`` (found from outside the runs)."""
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/status") as status:
                fields = dict(line.split(":\t", 1) for line in status if ":\t" in line)
        except OSError:
            continue
        if int(fields["PPid"]) == parent and int(fields["Uid"].split()[0]) == uid:
            return int(entry)
    raise AssertionError(f"no child of {parent} runs as {uid}")


def test_a_run_cannot_find_signal_or_relimit_another_run_or_the_zygote():
    zygote_pid = service.zygote().process.pid
    victim_waiting, attack_done = threading.Event(), threading.Event()
    victim: dict = {}

    def hold(name: str, inputs: dict) -> str:
        victim["uid"] = inputs["uid"]
        victim_waiting.set()
        attack_done.wait(WAIT)
        return "released"

    def victim_run() -> None:
        victim["outcome"] = run(
            "import os\nresult = (os.getuid(), call_tool('hold', {'uid': os.getuid()}))",
            language=False,
            call_tool=hold,
            wall_seconds=WAIT,
            cpu_seconds=5,
        )

    thread = threading.Thread(target=victim_run)
    thread.start()
    try:
        assert victim_waiting.wait(WAIT)
        victim_pid = _child_running_as(zygote_pid, victim["uid"])
        attack = run(ATTACK, language=False, inputs={"victim": victim_pid, "zygote": zygote_pid})
    finally:
        attack_done.set()
        thread.join(WAIT)
    found = eval(output(attack))  # noqa: S307 - a repr of str/int/bool written by the test's own code
    assert found["pid"] == 1 and found["proc"] is False
    assert found["victim prlimit"] == "ESRCH" and found["zygote prlimit"] == "ESRCH"
    assert found["victim kill"] in ("ESRCH", "EPERM") and found["zygote kill"] in ("ESRCH", "EPERM")
    victim_uid, released = eval(output(victim["outcome"]))  # noqa: S307
    assert released == "released"
    assert found["uid"] != victim_uid
    assert {found["uid"], victim_uid} <= set(range(oslayer.RUN_ID_BASE, oslayer.RUN_ID_BASE + oslayer.RUN_ID_SLOTS))
