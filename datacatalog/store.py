"""The conversation catalog: named datasets scoped to one conversation of one tenant.

Frames are stored as Parquet under the tenant's directory and described by a
CatalogDataset row. Every lookup filters on tenant *and* conversation, so a
name can never reach another tenant's data.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from datacatalog.models import CatalogDataset
from eunice.bounded_read import InputTooLarge, check_frame, read_parquet_file
from eunice.tenant_files import catalog_dir
from registry.context import ToolContext
from registry.conversation_records import conversation_records

if TYPE_CHECKING:
    import pandas as pd

NAME_RULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
SAVED_MARK = "eunice_catalog_saved"


class CatalogError(Exception):
    """A catalog request that cannot be met; the message is safe to show."""


class UnknownDataset(CatalogError):
    """No dataset of that name; ``alternatives`` are the closest names, best first."""

    def __init__(self, name: str, alternatives: list[str]) -> None:
        known = ", ".join(alternatives) if alternatives else "none yet (upload a file or run a query with save_as)"
        super().__init__(f"no dataset named {name!r} in this conversation; closest: {known}")
        self.name = name
        self.alternatives = alternatives


class NoConversation(CatalogError):
    """The call has no conversation of the caller's tenant to hold datasets."""


@dataclass(frozen=True)
class ConversationCatalog:
    tenant_id: str
    conversation_id: str

    @classmethod
    def for_context(cls, context: ToolContext) -> ConversationCatalog:
        """The catalog of the context's conversation. Raises NoConversation."""
        found = context.catalog
        if isinstance(found, ConversationCatalog):
            return found
        tenant_id, conversation_id = context.tenant_id, context.conversation_id
        if not tenant_id or not conversation_id:
            raise NoConversation("data tools need a conversation (call_tool --conversation ID)")
        if not conversation_records().exists(tenant_id, str(conversation_id)):
            raise NoConversation("the conversation does not belong to this tenant")
        return cls(tenant_id, str(conversation_id))

    def entries(self) -> list[CatalogDataset]:
        return list(CatalogDataset.objects.in_conversation(self.tenant_id, self.conversation_id))

    def names(self) -> list[str]:
        return list(
            CatalogDataset.objects.in_conversation(self.tenant_id, self.conversation_id).values_list("name", flat=True)
        )

    def entry(self, name: str) -> CatalogDataset:
        """The row for ``name``. Raises UnknownDataset with the closest names."""
        found = CatalogDataset.objects.in_conversation(self.tenant_id, self.conversation_id).filter(name=name).first()
        if found is None:
            raise UnknownDataset(name, closest(name, self.names()))
        return found

    def default_dataset(self) -> str | None:
        """The most recently saved dataset's name, or None for an empty catalog."""
        return (
            CatalogDataset.objects.in_conversation(self.tenant_id, self.conversation_id)
            .order_by("-updated_at", "-id")
            .values_list("name", flat=True)
            .first()
        )

    def resolve(self, name: str | None) -> str:
        """``name``, or the default dataset when it is empty. Raises UnknownDataset."""
        if name:
            return name
        default = self.default_dataset()
        if default is None:
            raise UnknownDataset("(default)", [])
        return default

    def load(self, name: str | None = None) -> pd.DataFrame:
        """The dataset as a DataFrame (the default one without a name). Raises UnknownDataset."""
        entry = self.entry(self.resolve(name))
        frame = read_parquet_file(entry.path)
        frame.attrs[SAVED_MARK] = True
        return frame

    def load_all(self, names: list[str] | None = None) -> dict[str, pd.DataFrame]:
        rows = CatalogDataset.objects.in_conversation(self.tenant_id, self.conversation_id)
        if names is not None:
            rows = rows.filter(name__in=names)
        return {row.name: read_parquet_file(row.path) for row in rows}

    def save(self, name: str, frame: pd.DataFrame, *, source: str, source_detail: str = "") -> CatalogDataset:
        """Store ``frame`` as ``name`` (replacing one of that name). Raises CatalogError for a bad name
        or a frame past the dataset limits (so every stored dataset can be loaded again)."""
        check_name(name)
        try:
            check_frame(frame, f"dataset {name!r}")
        except InputTooLarge as exc:
            raise CatalogError(str(exc)) from None
        frame = _parquet_ready(frame)
        path = catalog_dir(self.tenant_id, "datasets", self.conversation_id) / f"{name}.parquet"
        frame.to_parquet(path, index=False)
        entry, _ = CatalogDataset.objects.update_or_create(
            conversation_id=self.conversation_id,
            name=name,
            defaults={
                "tenant_id": self.tenant_id,
                "path": str(path),
                "rows": len(frame),
                "columns": column_profiles(frame),
                "size_bytes": path.stat().st_size,
                "source": source,
                "source_detail": source_detail[:255],
            },
        )
        frame.attrs[SAVED_MARK] = True
        return entry

    def promote(self, name: str, frame: Any, *, source_tool: str) -> None:
        """Persist a dataset a tool returned, unless the tool already saved it here."""
        import pandas as pd

        if isinstance(frame, pd.DataFrame) and not frame.attrs.get(SAVED_MARK) and NAME_RULE.match(name):
            self.save(name, frame, source="tool", source_detail=source_tool)


# A column's profile reads at most this many rows: enough to name its common values
# and its range, cheap at save time whatever the dataset's size.
PROFILE_ROWS = 20_000
PROFILE_VALUES = 3
PROFILE_CHARS = 24


def column_profiles(frame: pd.DataFrame) -> list[dict]:
    """Each column's name and type, and what it holds in a few words: the range of a
    number or date column, the most common values of a text one.

    The catalog is searched by meaning (``search_catalog``); column names alone are often
    abbreviations (``temp_c``, ``amt``) that say little, while "-12 to 24" or "oslo, bergen"
    say what the data is about.
    """
    import pandas as pd

    sample = frame.head(PROFILE_ROWS)
    profiles: list[dict[str, Any]] = []
    for position, (column, dtype) in enumerate(frame.dtypes.items()):
        profile: dict[str, Any] = {"name": str(column), "dtype": str(dtype)}
        profiles.append(profile)
        values = sample.iloc[:, position].dropna()
        if values.empty or pd.api.types.is_bool_dtype(dtype):
            continue
        try:
            if pd.api.types.is_numeric_dtype(dtype) or pd.api.types.is_datetime64_any_dtype(dtype):
                profile["range"] = f"{_short(values.min())} to {_short(values.max())}"
            elif pd.api.types.is_object_dtype(dtype) or isinstance(dtype, pd.StringDtype | pd.CategoricalDtype):
                common = values.astype(str).value_counts().head(PROFILE_VALUES).index
                profile["values"] = [text[:PROFILE_CHARS] for text in common]
        except (TypeError, ValueError):  # mixed types a column may hold: no profile, nothing lost
            pass
    return profiles


def _short(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)[:PROFILE_CHARS]


def check_name(name: str) -> None:
    if not NAME_RULE.match(name or ""):
        raise CatalogError(
            f"dataset name {name!r} is invalid: use a letter or underscore, then letters, digits "
            "or underscores (at most 64), e.g. 'sales_2024'"
        )


def closest(name: str, names: list[str], limit: int = 3) -> list[str]:
    """Up to ``limit`` names nearest to ``name``; every name when there are few."""
    near = difflib.get_close_matches(name, names, n=limit, cutoff=0.3)
    return near or names[:limit]


def _parquet_ready(frame: pd.DataFrame) -> pd.DataFrame:
    """Parquet needs string column names, a plain index, and one type per column: a column
    holding values of several types (numbers and text in one spreadsheet column) is kept as
    text, its missing values still missing."""
    import pandas as pd

    frame = frame.copy()
    if not isinstance(frame.index, pd.RangeIndex):
        frame = frame.reset_index()
    frame.columns = [str(column) for column in frame.columns]
    object_columns = (frame.dtypes == object).to_numpy()  # noqa: E721 (dtypes compared by value, as pandas wants)
    for column in frame.columns[object_columns]:
        values = frame[column]
        if len({type(value) for value in values.dropna()}) > 1:
            frame[column] = values.astype(str).where(values.notna(), None)
    return frame
