"""Embeddings: the vectors of one ``client.embed`` call, kept compact, and the response around them.

``Embeddings`` holds every vector of a call in one flat ``array('f')`` (float32, row-major): a
10,000 x 1,536 batch is 61 MB of floats, not 15 million Python ``float`` objects in 10,000 lists
(about 500 MB). ``to_numpy()`` wraps that buffer without a copy, a row is an ``array('f')`` of its
own (6 KB for 1,536 floats), and ``tolist()`` is there for code that wants lists.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast, get_args, overload

import msgspec

from .attempt import Attempt
from .errors import InvalidRequestError
from .notices import RequestWarning
from .usage import Usage

if TYPE_CHECKING:
    from .cost import Cost

__all__ = ["INPUT_TYPES", "EmbeddingResponse", "Embeddings", "InputType", "check_inputs"]

InputType = Literal["query", "document", "classification", "clustering", "similarity"]
"""What the vectors are for: a search ``query``, a ``document`` to be searched, ``classification``,
``clustering`` or symmetric ``similarity``. Each route sends its provider's word for it (Gemini
``RETRIEVAL_QUERY``, Cohere ``search_query``, Voyage ``query``); a route with no such option warns."""
INPUT_TYPES: tuple[str, ...] = get_args(InputType)

_LITTLE = sys.byteorder == "little"


class Embeddings(Sequence["array[float]"]):
    """``len(vectors)`` float32 vectors of ``dimensions`` each, in input order, in one buffer.

    ``vectors[i]`` is row ``i`` as an ``array('f')`` (a copy of 4 bytes a float: index it,
    ``.tolist()`` it, hand it to anything that reads buffers); ``vectors.data`` the flat
    ``array('f')`` itself; ``vectors.to_numpy()`` an ``(n, dimensions)`` ``numpy.float32`` array
    over the same memory, no copy (numpy is not a dependency).
    """

    __slots__ = ("_data", "_dimensions", "_view")

    def __init__(self, data: array[float], dimensions: int) -> None:
        if data.typecode != "f":
            raise TypeError(f"Embeddings holds array('f'), got array({data.typecode!r})")
        if dimensions < 0 or (dimensions == 0 and len(data)) or (dimensions and len(data) % dimensions):
            raise ValueError(f"{len(data)} floats are not whole vectors of {dimensions} dimensions")
        self._data = data
        self._dimensions = dimensions
        self._view = memoryview(data)  # held: the buffer cannot be resized (the shape stays whole)

    @property
    def dimensions(self) -> int:
        """Floats per vector (0 when there are no vectors)."""
        return self._dimensions

    @property
    def data(self) -> array[float]:
        """Every vector, one after another, as one ``array('f')`` (native byte order)."""
        return self._data

    @property
    def nbytes(self) -> int:
        """The size of the vectors in memory (4 bytes a float)."""
        return len(self._data) * 4

    def __len__(self) -> int:
        return len(self._data) // self._dimensions if self._dimensions else 0

    @overload
    def __getitem__(self, index: int) -> array[float]: ...
    @overload
    def __getitem__(self, index: slice) -> Embeddings: ...
    def __getitem__(self, index: int | slice) -> array[float] | Embeddings:
        d, data = self._dimensions, self._data
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step == 1:
                return Embeddings(data[start * d : max(start, stop) * d], d)
            return Embeddings(
                array("f", b"".join(data[i * d : (i + 1) * d].tobytes() for i in range(start, stop, step))), d
            )
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"vector index {index} out of range ({n} vectors)")
        return data[i * d : (i + 1) * d]

    def __iter__(self) -> Iterator[array[float]]:
        d, data = self._dimensions, self._data
        for i in range(len(self)):
            yield data[i * d : (i + 1) * d]

    def tolist(self) -> list[list[float]]:
        """The vectors as lists of Python floats (what the vendor SDKs return; 8x the memory)."""
        flat = self._data.tolist()
        d = self._dimensions
        return [flat[i : i + d] for i in range(0, len(flat), d)]

    def tobytes(self) -> bytes:
        """The vectors as little-endian float32 bytes (OpenAI's base64 ``encoding_format``)."""
        if _LITTLE:
            return self._data.tobytes()
        swapped = array("f", self._data)
        swapped.byteswap()
        return swapped.tobytes()

    def to_numpy(self) -> Any:
        """An ``(n, dimensions)`` ``numpy.float32`` array sharing this buffer (no copy)."""
        try:
            import numpy as np
        except ModuleNotFoundError:
            raise ModuleNotFoundError(
                "Embeddings.to_numpy() needs numpy (pip install numpy); vectors.data is an "
                "array('f') any buffer-aware library can read without it",
                name="numpy",
            ) from None
        return np.frombuffer(self._data, dtype=np.float32).reshape(len(self), self._dimensions)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Embeddings):
            return NotImplemented
        return self._dimensions == other._dimensions and self._data == other._data

    __hash__ = None  # type: ignore[assignment]  # the buffer is mutable

    def __repr__(self) -> str:
        return f"Embeddings({len(self)} x {self._dimensions} float32)"


class EmbeddingResponse(msgspec.Struct, frozen=True, kw_only=True):
    """What ``client.embed`` returns: the vectors in input order, the usage they cost, and what was
    not sent (``warnings``)."""

    vectors: Embeddings
    """One vector per input, in input order."""
    model: str
    """The model id the vectors came from (a router's: the target that answered)."""
    provider: str
    """That model's provider (prices and telemetry key on it)."""
    usage: Usage | None = None
    """Input tokens of every request summed; ``None`` when the provider reports none (the Gemini
    API's embedding endpoints)."""
    response_model: str | None = None
    """The model the provider says answered, when it says."""
    warnings: tuple[RequestWarning, ...] = ()
    """Options the route did not send (``input_type`` where the API has none)."""
    requests: int = 1
    """HTTP requests the call took (the inputs were split to each provider's per-request limit)."""
    target: str | None = None
    """Through a ``Router``: the target that answered."""
    attempts: tuple[Attempt, ...] = ()
    """Through a ``Router``: the targets that failed before it."""

    @property
    def dimensions(self) -> int:
        """Floats per vector."""
        return self.vectors.dimensions

    @property
    def cost(self) -> Cost | None:
        """What the call cost at the catalog's prices (``None`` when usage or the price is unknown)."""
        if self.usage is None:
            return None
        from ..catalog import cost  # the catalog loads on first use

        return cost(self.provider, self.model, self.usage)


def check_inputs(inputs: object) -> tuple[str, ...]:
    """``inputs`` as a tuple of non-empty strings (one string is one input), else an
    ``InvalidRequestError`` naming the first bad one (``inputs[3]``)."""
    if isinstance(inputs, str):
        return check_inputs((inputs,))
    if isinstance(inputs, bytes | bytearray | memoryview) or not isinstance(inputs, Sequence):
        kind = type(cast(object, inputs)).__name__
        raise InvalidRequestError(
            f"inputs: expected a string or a list of strings, got {kind}", param="inputs"
        )
    items = tuple(cast(Sequence[object], inputs))
    if not items:
        raise InvalidRequestError("inputs: nothing to embed (an empty list)", param="inputs")
    for i, item in enumerate(items):
        if not isinstance(item, str):
            raise InvalidRequestError(
                f"inputs[{i}]: expected a string, got {type(item).__name__}", param=f"inputs[{i}]"
            )
        if not item:  # every provider answers 400 for it: refused before anything is sent
            raise InvalidRequestError(f"inputs[{i}]: an empty string has no embedding", param=f"inputs[{i}]")
    return cast(tuple[str, ...], items)
