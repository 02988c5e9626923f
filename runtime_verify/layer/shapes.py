"""Layer shapes: the tiny CI shape and Kimi-K3's real MoE dimensions."""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Shape:
    """Dimensions of the K3-style MoE layer and of the inputs fed through it.

    ``block_rows`` is the unit in which expert weights are generated along the intermediate
    dimension; a TP rank's slice must be a whole number of blocks, so ``intermediate //
    world_size`` must be a multiple of it.
    """

    name: str
    hidden: int
    experts: int
    top_k: int
    intermediate: int
    shared_intermediate: int
    vocab: int
    dtype: str
    scoring: str
    prompt_lengths: tuple[int, ...]
    block_rows: int
    latent: int = 0  # a latent MoE's expert space (the routed experts' hidden size)

    @property
    def tokens(self) -> int:
        """Total tokens over all prompts."""
        return sum(self.prompt_lengths)

    def with_experts(self, experts: int) -> Shape:
        """The same shape with a different routed-expert count."""
        return replace(self, experts=experts)

    def check(self, world_size: int) -> None:
        """Raise ``ValueError`` when the shape cannot be laid out over ``world_size`` ranks."""
        if world_size < 2:
            raise ValueError("world_size must be at least 2 to observe a cross-rank reduce")
        problems = []
        if self.experts % world_size:
            problems.append(f"experts={self.experts} is not divisible by {world_size}")
        if self.top_k > self.experts:
            problems.append(f"top_k={self.top_k} exceeds experts={self.experts}")
        for label, size in (
            ("intermediate", self.intermediate),
            ("shared", self.shared_intermediate),
        ):
            if size % world_size or (size // world_size) % self.block_rows:
                problems.append(
                    f"{label} intermediate {size} does not split over {world_size} ranks "
                    f"in blocks of {self.block_rows} rows"
                )
        if self.tokens < world_size:
            problems.append(f"{self.tokens} tokens cannot give each of {world_size} ranks one")
        if problems:
            raise ValueError(f"shape {self.name!r}: " + "; ".join(problems))


SHAPES: dict[str, Shape] = {
    "tiny": Shape(
        name="tiny",
        hidden=64,
        experts=8,
        top_k=2,
        intermediate=32,
        shared_intermediate=32,
        vocab=1024,
        dtype="float32",
        scoring="softmax",
        prompt_lengths=(7, 5, 8),
        block_rows=4,
        latent=32,
    ),
    "tiny-bf16": Shape(
        name="tiny-bf16",
        hidden=64,
        experts=8,
        top_k=2,
        intermediate=32,
        shared_intermediate=32,
        vocab=1024,
        dtype="bfloat16",
        scoring="sigmoid",
        prompt_lengths=(7, 5, 8),
        block_rows=4,
        latent=32,
    ),
    # Kimi-K3 (DeepSeek-V3 lineage): sigmoid scoring, 384 routed experts, top-8, one shared
    # expert, routed experts in a latent space of half the hidden size.
    "k3": Shape(
        name="k3",
        hidden=7168,
        experts=384,
        top_k=8,
        intermediate=2048,
        shared_intermediate=2048,
        vocab=4096,
        dtype="bfloat16",
        scoring="sigmoid",
        prompt_lengths=(48, 64, 80),
        block_rows=64,
        latent=3584,
    ),
}


def get_shape(name: str) -> Shape:
    """Look a shape up by name; ``ValueError`` names the known ones."""
    try:
        return SHAPES[name]
    except KeyError:
        raise ValueError(f"unknown shape {name!r}; known: {', '.join(SHAPES)}") from None
