"""Public LLM configurations (GPT-2 to Kimi K2): the shapes memory and cost formulas need.

Read from ``lab_utils/data/llm_configs.toml``, with the source and date of each. No torch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from lab_utils import catalogs, lookup

_DATA_FILE = "llm_configs.toml"


@dataclass(frozen=True)
class LLMConfig:
    """One model's published shape. Counts are plain integers; None where unpublished."""

    name: str
    aliases: tuple[str, ...]
    n_layers: int
    hidden: int
    n_params: int
    source: str
    source_date: str
    n_heads: int | None = None
    n_kv_heads: int | None = None
    ffn_hidden: int | None = None
    vocab_size: int | None = None
    n_active_params: int | None = None  # mixture of experts: parameters used per token
    note: str | None = None

    @property
    def head_dim(self) -> int | None:
        """Features per attention head: hidden / n_heads (128 for Llama and Mistral)."""
        return self.hidden // self.n_heads if self.n_heads else None

    @property
    def params_per_token(self) -> int:
        """Parameters that compute each token: the active ones for a mixture of experts."""
        return self.n_active_params or self.n_params


@functools.cache
def _load() -> tuple[tuple[LLMConfig, ...], dict]:
    records = catalogs.load(_DATA_FILE, "model")
    configs = tuple(LLMConfig(**dict(table, aliases=tuple(table.get("aliases", ())))) for table in records)
    return configs, catalogs.index(configs, f"lab_utils/data/{_DATA_FILE}")


def get(name: str) -> LLMConfig:
    """One model by name or alias, forgiving case and separators: 'llama-3.1-8b', 'Llama 3.1 8B'."""
    configs, index = _load()
    return lookup.find(name, index, "LLM configurations", [c.name for c in configs])


def catalog() -> tuple[LLMConfig, ...]:
    """Every model configuration, smallest first."""
    return _load()[0]
