"""A request's prompt as llama-cpp-python's chat handler builds it: the tokens, stop rules and sampling
parameters ``Llama.create_chat_completion`` would use (intercepted, see ``PromptCapture``), its token count, and the
answer to a prompt the context cannot hold; and :class:`GgufBackend`, what both backends know of the model file
before its weights are loaded. Shared by the sequential and the batched llama.cpp backends.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bridge.core.errors import BridgeError
from bridge.llm.base import TOO_LONG, LLMRequest, LLMResponse
from bridge.llm.models import file_digest, library_version, resolve_gguf


class _Captured(Exception):
    """Carries the arguments of the intercepted ``create_completion`` call out of the chat handler."""

    def __init__(self, kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.kwargs = kwargs


class PromptTooLong(Exception):
    """A prompt that the context window cannot hold: answered with a ``too-long`` response, never a crash."""

    def __init__(self, tokens: int) -> None:
        super().__init__(f"{tokens} prompt tokens do not fit the context")
        self.tokens = tokens


def too_long_response(tokens: int) -> LLMResponse:
    """What a backend answers for a prompt its context cannot hold: no text, nothing spent on the model."""
    return LLMResponse(text="", prompt_tokens=tokens, finish_reason=TOO_LONG)


def count_prompt_tokens(vocab: Any, request: LLMRequest) -> int:
    """Prompt tokens of ``request`` as ``create_chat_completion`` builds them (chat template included), plus the
    longest continuation to score; ``vocab`` is a ``Llama`` (a ``vocab_only`` one will do)."""
    kwargs = PromptCapture(vocab).completion_kwargs(
        messages=request.as_openai_messages(), max_tokens=request.max_tokens, temperature=0.0
    )
    scored = [len(vocab.tokenize(c.encode("utf-8"), add_bos=False, special=False)) for c in request.continuations]
    return len(kwargs["prompt"]) + max(scored, default=0)


def load_vocab(model_path: Path) -> Any:
    """The model's tokenizer and chat template without its weights (cheap: a cached run never loads the model)."""
    from llama_cpp import Llama

    return Llama(model_path=str(model_path), vocab_only=True, verbose=False)


class GgufBackend:
    """A llama.cpp backend's model file: resolved, named by its digest (``kind`` first, so two backends' responses
    are cached apart), its tokenizer loaded alone to count prompt tokens. ``config`` has ``model``, ``n_ctx`` and
    ``cache_dir``."""

    def __init__(self, config: Any, kind: str) -> None:
        self.config = config
        self.model_path = resolve_gguf(config.model, config.cache_dir)
        self._model_id = f"{kind}:{self.model_path.name}:{file_digest(self.model_path, config.cache_dir)}"
        self._vocab: Any = None

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def cache_id(self) -> str:
        """The response cache's identity: the model file's whole digest, the context size and the library build."""
        return f"{self._model_id}:n_ctx={self.config.n_ctx}:llama-cpp-python={library_version('llama_cpp_python')}"

    @property
    def n_ctx(self) -> int:
        return self.config.n_ctx

    def prompt_tokens(self, request: LLMRequest) -> int:
        """Tokens ``request``'s prompt takes, chat template included, in one context (see
        :func:`count_prompt_tokens`; the model's weights are not loaded)."""
        if self._vocab is None:
            self._vocab = load_vocab(self.model_path)
        return count_prompt_tokens(self._vocab, request)


class PromptCapture:
    """Stands in for ``Llama`` in ``Llama.create_chat_completion``: the model's chat handler renders the
    template, tokenizes it and calls ``create_completion`` with its sampling defaults; that call is
    intercepted, so the batched engine gets exactly the prompt tokens, stop rules and parameters the
    sequential backend's call would use (create_chat_completion's defaults differ from the handler's:
    its repeat_penalty is 1.0, the handler's 1.1)."""

    def __init__(self, llm: Any) -> None:
        self._llm = llm
        self.verbose = False

    def completion_kwargs(self, **kwargs: Any) -> dict[str, Any]:
        from llama_cpp import Llama

        try:
            Llama.create_chat_completion(self, **kwargs)  # type: ignore[arg-type]
        except _Captured as captured:
            return captured.kwargs
        raise BridgeError("the chat handler did not call create_completion")  # pragma: no cover

    def tokenize(self, text: bytes, add_bos: bool = True, special: bool = False) -> list[int]:
        return self._llm.tokenize(text, add_bos=add_bos, special=special)

    def create_completion(self, **kwargs: Any) -> Any:
        raise _Captured(kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._llm, name)
