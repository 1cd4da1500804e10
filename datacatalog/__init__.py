"""The data catalog: a conversation's datasets, the tenant's uploads and exported files, its datasources.

A Django app below ``tools`` and ``conversations`` and above ``registry``: both
import it, it imports neither (docs/architecture.md). The API tools use:
``ConversationCatalog.for_context(context)`` (``datacatalog.store``) then ``load(name)``,
``default_dataset()``, ``save(name, frame, source=…)``; ``register_export(...)``
(``datacatalog.files``) for files a tool writes; who may read what in
``datacatalog.access``.
"""
