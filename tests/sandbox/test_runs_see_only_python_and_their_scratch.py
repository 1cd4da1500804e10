"""Class 6: a run's filesystem is a minimal root of its own: the Python installation
(read-only), four devices and its scratch directory. The project, /etc, /home and
/proc are not there at all, so not even their metadata can be read or watched."""

import os

import pytest

from tests.conftest import text

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("language_layer_bypassed")]

PROBE = """
import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def attempt(action):
    try:
        action()
        return 'done'
    except OSError as exc:
        return errno.errorcode[exc.errno]
def watch(path):
    fd = libc.inotify_init()
    if fd < 0 or libc.inotify_add_watch(fd, path.encode(), 0xfff) < 0:
        raise OSError(ctypes.get_errno(), 'inotify')
seen = {'list /': attempt(lambda: os.listdir('/')), 'cwd': os.getcwd()}
for path in inputs['paths']:
    seen['stat ' + path] = attempt(lambda: os.stat(path))
    seen['readlink ' + path] = attempt(lambda: os.readlink(path))
    seen['watch ' + path] = attempt(lambda: watch(path))
seen['write /x'] = attempt(lambda: open('/x', 'w'))
seen['write scratch'] = attempt(lambda: open('mine.txt', 'w').write('ok'))
result = repr(seen)
"""


def test_nothing_outside_the_runs_own_root_can_be_seen_or_watched(approved_tool, call, settings):
    secret = settings.VAR_DIR / "secret_key"
    paths = [
        str(settings.VAR_DIR),
        str(secret),
        str(settings.BASE_DIR / "manage.py"),
        "/etc/passwd",
        "/home",
        "/proc/1/exe",
    ]
    schema = {"type": "object", "properties": {"paths": {"type": "array", "items": {"type": "string"}}}}
    approved_tool("peek", PROBE, schema)
    seen = eval(text(call("peek", paths=paths)))  # noqa: S307 - a repr written by the probe
    assert seen["cwd"] == "/scratch" and seen["list /"] == "EACCES"  # Landlock still applies
    for path in paths:
        assert seen[f"stat {path}"] == "ENOENT", path
        assert seen[f"readlink {path}"] == "ENOENT", path
        assert seen[f"watch {path}"] == "ENOENT", path
    assert seen["write /x"] == "EROFS" and seen["write scratch"] == "done"


def test_the_python_installation_is_there_and_read_only_and_landlock_still_refuses_reading_it(approved_tool, call):
    probe = (
        "import errno, os, sys\nlib = os.path.dirname(os.__file__)\n"
        "def attempt(action):\n    try:\n        action()\n        return 'done'\n"
        "    except OSError as exc:\n        return errno.errorcode[exc.errno]\n"
        "result = repr((attempt(lambda: os.stat(lib)), attempt(lambda: open(os.__file__).read(1)),"
        " attempt(lambda: open(lib + '/x.py', 'w'))))"
    )
    approved_tool("stdlib", probe)
    stat, read, write = eval(text(call("stdlib")))  # noqa: S307
    assert stat == "done" and read == "EACCES" and write in ("EROFS", "EACCES")


def test_the_zygote_itself_sees_neither_the_project_nor_var(settings):
    from registry.sandbox import service

    zygote = service.zygote()
    its_root = f"/proc/{zygote.process.pid}/root"
    assert zygote.capabilities["zygote_jailed"]
    assert os.path.exists(f"{its_root}/proc/self") and os.path.isdir(its_root + str(settings.SANDBOX["SCRATCH_DIR"]))
    for path in (settings.BASE_DIR / "manage.py", settings.VAR_DIR, "/etc/passwd", "/home"):
        assert not os.path.exists(f"{its_root}{path}"), path
