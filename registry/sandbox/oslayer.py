"""The OS layer: what a forked run does to itself before it touches user code.

Each step is independent and reports whether it took effect, so a run can
record which layers were active. Landlock and seccomp are reached through
ctypes (Landlock by raw syscall, seccomp through libseccomp). No Django import:
the zygote loads this module.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import os
import resource
import signal

from registry.sandbox.protocol import CPU_LIMIT_STATUS

CLONE_NEWNET = 0x40000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNS = 0x00020000
PR_SET_NO_NEW_PRIVS = 38
PR_SET_PDEATHSIG = 1
# Each concurrent run gets its own uid and gid from this range, so no run can
# signal, ptrace or re-limit another (those need the same uid or a capability).
RUN_ID_BASE = 600_000
RUN_ID_SLOTS = 1024
# Where a run finds its scratch directory inside its own root.
RUN_SCRATCH = "/scratch"
# A run that reaches its CPU seconds is warned by the kernel (SIGXCPU) and exits with
# protocol.CPU_LIMIT_STATUS; one that ignores the warning is killed (SIGKILL) this many CPU
# seconds later. The warning is what names the CPU limit: a SIGKILL alone cannot say
# whether the kernel or someone outside sent it.
CPU_GRACE_SECONDS = 1
_DEVICES = ("null", "zero", "urandom", "random")
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 1, 2, 4, 8
_MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = 32, 4096, 16384, 1 << 18
_MNT_DETACH = 2
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine, -1)

# x86_64 / aarch64 share these numbers for the Landlock syscalls.
_SYS_LANDLOCK_CREATE_RULESET = 444
_SYS_LANDLOCK_ADD_RULE = 445
_SYS_LANDLOCK_RESTRICT_SELF = 446
_LANDLOCK_CREATE_RULESET_VERSION = 1
_LANDLOCK_RULE_PATH_BENEATH = 1
# Filesystem rights by ABI: 13 in v1, REFER in v2, TRUNCATE in v3, IOCTL_DEV in v5.
_FS_BITS_BY_ABI = {1: 13, 2: 14, 3: 15, 4: 15, 5: 16}
_NET_BIND_TCP, _NET_CONNECT_TCP = 1, 2
_SCOPE_ABSTRACT_UNIX, _SCOPE_SIGNAL = 1, 2
_SCRATCH_FS_RIGHTS = (
    (1 << 1)  # WRITE_FILE
    | (1 << 2)  # READ_FILE
    | (1 << 3)  # READ_DIR
    | (1 << 4)  # REMOVE_DIR
    | (1 << 5)  # REMOVE_FILE
    | (1 << 7)  # MAKE_DIR
    | (1 << 8)  # MAKE_REG
)

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_libc.umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is unavailable."""
    abi = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, None, 0, _LANDLOCK_CREATE_RULESET_VERSION)
    return max(int(abi), 0)


_seccomp: ctypes.CDLL | None = None


def load_seccomp() -> ctypes.CDLL | None:
    """Load libseccomp once (in the zygote: finding a library runs helper programs)."""
    global _seccomp
    if _seccomp is None:
        path = ctypes.util.find_library("seccomp")
        if path is not None:
            _seccomp = _declare(ctypes.CDLL(path))
    return _seccomp


@functools.cache
def seccomp_available() -> bool:
    """Whether libseccomp is installed. Looked up once per process: find_library runs
    ``ldconfig -p``, about 5 ms (17 ms on a loaded machine), and every run asks."""
    return ctypes.util.find_library("seccomp") is not None


def unshare_network() -> bool:
    """Move this process into a new, empty network namespace (root only)."""
    return _libc.unshare(CLONE_NEWNET) == 0


def set_limits(*, cpu_seconds: int, memory_bytes: int, file_bytes: int, open_files: int) -> None:
    """CPU (SIGXCPU at the limit, SIGKILL ``CPU_GRACE_SECONDS`` later), address space,
    file size, fds."""
    vm_now = _vm_size_bytes()
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + CPU_GRACE_SECONDS))
    resource.setrlimit(resource.RLIMIT_AS, (vm_now + memory_bytes, vm_now + memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_files, open_files))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_NPROC, (0, 0))  # enforced once the uid is dropped


def exit_at_the_cpu_limit() -> None:
    """Exit with ``protocol.CPU_LIMIT_STATUS`` on the kernel's SIGXCPU.

    The first process of a PID namespace ignores a signal it has no handler for, so
    without this one the warning would be lost and only the hard limit's SIGKILL left.
    """
    signal.signal(signal.SIGXCPU, lambda _signum, _frame: os._exit(CPU_LIMIT_STATUS))


def _vm_size_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def die_with_parent() -> bool:
    """SIGKILL this process when the one that forked it (the zygote) dies."""
    return _libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0


def no_new_privs() -> bool:
    return _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0


def landlock_confine(scratch: str) -> int:
    """Allow file access only beneath ``scratch``; no TCP; no signals or abstract
    sockets beyond this domain. Returns the ABI applied, 0 if nothing was applied."""
    abi = landlock_abi()
    if abi < 1:
        return 0
    attr = _RulesetAttr(fs=(1 << _FS_BITS_BY_ABI.get(abi, 16)) - 1)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 4 else 8
    if abi >= 4:
        attr.net = _NET_BIND_TCP | _NET_CONNECT_TCP
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX | _SCOPE_SIGNAL
    ruleset = _libc.syscall(_SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        return 0
    try:
        fd = os.open(scratch, os.O_PATH | os.O_DIRECTORY)
        rule = _PathBeneath(allowed_access=_SCRATCH_FS_RIGHTS & attr.fs, parent_fd=fd)
        added = _libc.syscall(_SYS_LANDLOCK_ADD_RULE, ruleset, _LANDLOCK_RULE_PATH_BENEATH, ctypes.byref(rule), 0)
        os.close(fd)
        if added != 0 or _libc.syscall(_SYS_LANDLOCK_RESTRICT_SELF, ruleset, 0) != 0:
            return 0
        return abi
    finally:
        os.close(ruleset)


def become(run_id: int) -> bool:
    """setgroups/setgid/setuid to the run's own id (uid = gid) when running as root."""
    if os.geteuid() != 0:
        return False
    os.setgroups([])
    os.setgid(run_id)
    os.setuid(run_id)
    return os.getuid() == run_id and os.getgid() == run_id


# --- namespaces ----------------------------------------------------------------


def _check(result: int, what: str) -> None:
    if result != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"{what}: {os.strerror(code)}")


def next_child_in_new_pid_namespace() -> bool:
    """Make the next fork of this process the first process of a new PID namespace.

    Call ``restore_pid_namespace`` in the parent right after the fork, so that
    every run gets a namespace of its own. Root only; False when refused.
    """
    return _libc.unshare(CLONE_NEWPID) == 0


def restore_pid_namespace(own_namespace_fd: int) -> None:
    """Put this process's future children back into its own PID namespace. Raises OSError."""
    _check(_libc.setns(own_namespace_fd, CLONE_NEWPID), "setns(pid)")


def jail_zygote(scratch_root: str, python_dirs: list[str]) -> None:
    """Move the zygote, once, into a mount namespace whose root holds only what it
    needs after its imports: ``python_dirs`` (read-only), four devices, ``/proc`` (to
    check each run's layers) and ``scratch_root`` (read-write, at the same path).
    The project directory and the rest of the host's filesystem are unmounted from
    it. Root only; raises OSError.
    """
    mount_point = os.path.join(scratch_root, ".zygote-root")
    os.makedirs(mount_point, mode=0o700, exist_ok=True)
    _check(_libc.unshare(CLONE_NEWNS), "unshare(mount)")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount("tmpfs", mount_point, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=256k,mode=0755")
    _populate(mount_point, python_dirs)
    _bind(scratch_root, mount_point + scratch_root, _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    os.mkdir(mount_point + "/proc")
    _mount("proc", mount_point + "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    _pivot(mount_point)
    os.chdir("/")


def _populate(mount_point: str, python_dirs: list[str]) -> None:
    for path in python_dirs:
        _bind(path, mount_point + path, _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    os.mkdir(mount_point + "/dev")
    for device in _DEVICES:
        _bind(f"/dev/{device}", f"{mount_point}/dev/{device}", _MS_RDONLY | _MS_NOSUID | _MS_NOEXEC, file=True)


def _pivot(mount_point: str) -> None:
    """Make ``mount_point`` (read-only from now on) this namespace's root."""
    _mount(None, mount_point, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)
    os.chdir(mount_point)
    # pivot_root(".", ".") stacks the old root under the new one; detaching it
    # leaves nothing of the old filesystem reachable from this namespace.
    _check(_libc.syscall(_SYS_PIVOT_ROOT, b".", b"."), "pivot_root")
    _check(_libc.umount2(b".", _MNT_DETACH), "umount(old root)")


def enter_minimal_root(scratch: str, mount_point: str, python_dirs: list[str]) -> None:
    """Move this process into a mount namespace whose root holds only ``python_dirs``
    (read-only), four harmless devices and ``scratch`` at ``RUN_SCRATCH``; the host's
    filesystem is unmounted from it, not merely unreadable. Root only; raises OSError.

    ``mount_point`` is an empty directory; every run mounts its own tmpfs over it in
    its own namespace, so runs never share one.
    """
    _check(_libc.unshare(CLONE_NEWNS), "unshare(mount)")
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE)
    _mount("tmpfs", mount_point, "tmpfs", _MS_NOSUID | _MS_NODEV, "size=256k,mode=0755")
    _populate(mount_point, python_dirs)
    _bind(scratch, mount_point + RUN_SCRATCH, _MS_NOSUID | _MS_NODEV | _MS_NOEXEC)
    _pivot(mount_point)
    os.chdir(RUN_SCRATCH)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    encode = lambda text: text.encode() if text is not None else None  # noqa: E731
    _check(_libc.mount(encode(source), target.encode(), encode(fstype), flags, encode(data)), f"mount {target}")


def _bind(source: str, target: str, flags: int, *, file: bool = False) -> None:
    """Bind ``source`` at ``target`` (created), then remount it with ``flags``."""
    if file:
        os.close(os.open(target, os.O_CREAT | os.O_WRONLY, 0o600))
    else:
        os.makedirs(target, exist_ok=True)
    _mount(source, target, None, _MS_BIND)
    _mount(None, target, None, _MS_BIND | _MS_REMOUNT | flags)


# --- seccomp ---------------------------------------------------------------

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_MASKED_EQ = 7
_CLONE_THREAD = 0x00010000
# Refused with EPERM: new programs and processes, sockets, debugging other
# processes, namespaces, kernel attack surface nobody's pandas code needs.
_DENIED_SYSCALLS = (
    "execve",
    "execveat",
    "fork",
    "vfork",
    "socket",
    "socketpair",
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "kill",
    "tkill",
    "pidfd_open",
    "pidfd_send_signal",
    "pidfd_getfd",
    "unshare",
    "setns",
    "mount",
    "umount2",
    "pivot_root",
    "chroot",
    "bpf",
    "perf_event_open",
    "keyctl",
    "add_key",
    "request_key",
    "userfaultfd",
    "io_uring_setup",
    "personality",
    "mknod",
    "mknodat",
    "memfd_create",
    "init_module",
    "finit_module",
    "kexec_load",
)


class _ArgCmp(ctypes.Structure):
    _fields_ = [
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    ]


def _errno_action(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


def seccomp_confine() -> bool:
    """Install the syscall filter; clone is allowed only for threads, clone3 says ENOSYS."""
    lib = _seccomp
    if lib is None:
        return False
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        return False
    deny = _errno_action(errno.EPERM)
    for name in _DENIED_SYSCALLS:
        number = lib.seccomp_syscall_resolve_name(name.encode())
        if number >= 0 and lib.seccomp_rule_add_array(ctx, deny, number, 0, None) != 0:
            return False
    clone3 = lib.seccomp_syscall_resolve_name(b"clone3")
    if clone3 >= 0:
        lib.seccomp_rule_add_array(ctx, _errno_action(errno.ENOSYS), clone3, 0, None)
    clone = lib.seccomp_syscall_resolve_name(b"clone")
    not_thread = _ArgCmp(0, _SCMP_CMP_MASKED_EQ, _CLONE_THREAD, 0)
    if lib.seccomp_rule_add_array(ctx, deny, clone, 1, ctypes.byref(not_thread)) != 0:
        return False
    return lib.seccomp_load(ctx) == 0


def _declare(lib: ctypes.CDLL) -> ctypes.CDLL:
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    ]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    return lib
