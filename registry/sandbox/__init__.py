"""The custom-tool sandbox: a language layer (RestrictedPython, guards, facades), an OS
layer (fresh forked process in its own PID and mount namespaces with a minimal root,
rlimits, no_new_privs, Landlock, its own uid, seccomp, network namespace) and the
host, which enforces every limit itself (see docs/sandbox.md). Modules here other than
``service`` and ``bridge`` never import Django.
"""
