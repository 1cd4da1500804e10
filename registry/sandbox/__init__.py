"""The custom-tool sandbox: a language layer (RestrictedPython, guards, facades) and an OS
layer (fresh forked process, rlimits, no_new_privs, Landlock, seccomp, network
namespace, uid 65534). Modules here other than ``service`` never import Django.
"""
