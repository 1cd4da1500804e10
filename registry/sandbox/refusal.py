"""The language layer's refusal, apart from the layer itself.

The host side (the sandbox service, the dataset ports) raises and catches it without
importing the guards, which need pandas; the guards live in ``policy``.
"""


class SandboxRefusal(Exception):
    """The language layer refused an operation; the message names what and why."""
