"""Make a tiny random-weight GGUF chat model for the conformance lane.

No model can be downloaded on the machines this project runs on, so the lane
makes its own: a two-layer Llama with 64-wide embeddings, a SentencePiece-style
vocabulary (whole words and their prefixes, taken from text the lane will send,
plus the 256 byte tokens, so that any text tokenizes), ChatML control tokens
and a ChatML chat template in its metadata. Real server software loads it,
tokenizes, samples under grammars and reports real log-probabilities.

Its weights are random, so what it writes is gibberish. Two of the 64
embedding channels are set by hand so that its answers behave like a chat
model's in shape: the output layer reads them as a bias per next token, which
makes answers end after a few words (and not before the first), makes JSON
strings and objects close soon under a grammar, and ranks one-token answers
(Yes, No, a letter, a digit) high right after the assistant's header, where a
one-token evaluation reads its log-probabilities. Everything else is noise.

Runs under the server's Python (3.10 or later) with the ``gguf`` package:

    python conformance/tiny_model.py OUT.gguf [--corpus FILE ...]
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Iterable, Sequence
import math
from pathlib import Path
import re

import gguf
import numpy as np

EMBEDDING = 64
LAYERS = 2
HEADS = 4
KV_HEADS = 2
FEED_FORWARD = 192
TRAINED_CONTEXT = 32768
VOCABULARY = 4096
SEED = 20261129

SPACE = "\u2581"  # SentencePiece's visible space
# Marker tokens (see the attention heads below).
TOOL_MARKER = f"{SPACE}tool\n"
FUNCTIONS_MARKER = "<function_name>"
SPECIAL = ("<unk>", "<s>", "</s>", "<|im_start|>", "<|im_end|>")
UNKNOWN, BEGIN, END, IM_START, IM_END = range(len(SPECIAL))

# The usual ChatML template, as many GGUF files carry it.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# Pieces every corpus needs: one-token answers, chat roles, JSON punctuation.
BUILT_IN_PIECES = (
    "Yes",
    "No",
    "yes",
    "no",
    "message",
    "functions",
    "assistant",
    "user",
    "system",
    "tool",
    TOOL_MARKER,
    FUNCTIONS_MARKER,
    '"',
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    '":',
    '",',
    *"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
    *"!#$%&'()*+-./;<=>?@\\^_`|~",
    SPACE,
    "\n",
)

# Words, camel-case parts, digits and punctuation runs, with their space.
_PIECE = re.compile(r" ?[A-Z]?[a-z]+| ?[A-Z]+(?![a-z])| ?[0-9]| ?[^\sA-Za-z0-9]{1,3}")

# Next-token biases (log-odds): (always, added after a word and taken away
# after a newline or control token). Unlisted tokens get ORDINARY. Servers
# sample with min_p and top_k by default, so only tokens within about 3 of the
# best compete: these values keep a few words in play after each word.
ORDINARY = (0.0, 0.0)
# One-token answers, ranked so that those an evaluation reads (Yes, No, the
# letters of up to 8 choices, the digits of scores) are the top 20 after the
# assistant's header, in a fixed order.
LABELS = {
    **dict.fromkeys(("Yes", "No"), (0.0, -5.5)),
    **{letter: (-0.2 - 0.05 * rank, -5.0) for rank, letter in enumerate("ABCDEFGH")},
    **{digit: (1.9 - 0.05 * rank, -2.5) for rank, digit in enumerate("0123456789")},
}
BIASES = {
    "<|im_end|>": (0.0, 4.0),  # ends an answer after a word, not at its start
    '"': (3.0, 0.0),  # JSON strings close soon
    "}": (3.0, 0.0),
    "]": (3.0, 0.0),
    **LABELS,
    # The first word of a llama-cpp-python function-calling answer, chosen
    # greedily between a message and a call (see WITH_FUNCTION_CALLING).
    "message": (-4.0, -4.0),
    "functions": (-4.0, -4.0),
}
# Tokens whose bias alone decides, so that the choices above are certain.
EVEN = ("message", "functions", "<|im_end|>", *LABELS)

# Two attention heads of the first layer look for a marker token anywhere
# before: a tool result (the role line "<|im_start|>tool") and llama-cpp-python's
# function-calling instructions ("functions.<function_name>:"). What they find
# shifts the next-token biases, so that the model calls a tool first, answers
# once a tool result is there, and after a call's arguments ends the answer as
# often as it calls again (otherwise the server would ask for calls forever).
# Log-odds added when a tool result is seen, or the instructions are.
AFTER_TOOL_RESULT = {"functions": -2.0}
WITH_FUNCTION_CALLING = {"<|im_end|>": 9.2, "message": 5.0, "functions": 5.1}
# Embedding channels: 0 a constant, 1 start (-1) or word (+1), 2 and 3 the
# markers, 4 and 5 what the heads found; the rest is noise.
BIAS, POSITION, TOOL_SEEN_MARK, FUNCTIONS_MARK, TOOL_SEEN, FUNCTIONS_SEEN = range(6)
NOISY = 6
ROPE_BASE = 1e6  # the heads use the slowest rotary pair: near still over 32k

# After these the model is at the start of something (an answer, a value).
STARTS = ("\n", ":", SPACE, *SPECIAL)

EMBEDDING_NOISE = 0.15
OUTPUT_NOISE = 0.2
LAYER_NOISE = 0.02


def corpus_pieces(texts: Iterable[str]) -> Counter[str]:
    """Count the word pieces of some texts, spaces written as SentencePiece does."""
    counts: Counter[str] = Counter()
    for text in texts:
        for match in _PIECE.finditer(text):
            counts[match[0].replace(" ", SPACE)] += 1
    return counts


def vocabulary(texts: Iterable[str], size: int = VOCABULARY) -> list[tuple[str, float]]:
    """Return the normal pieces with their scores, most useful first.

    Each frequent piece comes with all its prefixes, so that the tokenizer's
    pairwise merges can reach it; longer pieces score higher.
    """
    room = size - len(SPECIAL) - 256
    pieces: dict[str, float] = {}
    for piece in BUILT_IN_PIECES:
        for end in range(1, len(piece) + 1):
            pieces.setdefault(piece[:end], 0.0)
    for piece, count in corpus_pieces(texts).most_common():
        for end in range(1, len(piece) + 1):
            prefix = piece[:end]
            if prefix not in pieces:
                if len(pieces) >= room:
                    break
                pieces[prefix] = 0.0
        if len(pieces) >= room:
            break
        pieces[piece] = max(pieces[piece], math.log(count))
    return [(piece, len(piece) + score / 100) for piece, score in pieces.items()]


def tokens(texts: Iterable[str]) -> tuple[list[str], list[float], list[int]]:
    """Return the token list, scores and types: special, bytes, then pieces."""
    names = list(SPECIAL)
    scores = [0.0] * len(SPECIAL)
    types = [gguf.TokenType.UNKNOWN] + [gguf.TokenType.CONTROL] * (len(SPECIAL) - 1)
    for byte in range(256):
        names.append(f"<0x{byte:02X}>")
        scores.append(0.0)
        types.append(gguf.TokenType.BYTE)
    for piece, score in vocabulary(texts):
        names.append(piece)
        scores.append(score)
        types.append(gguf.TokenType.NORMAL)
    return names, scores, [int(kind) for kind in types]


def weights(names: Sequence[str], rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Return the tensors: random, but for the hand-set channels and heads."""
    count = len(names)
    index = {name: position for position, name in enumerate(names)}
    embedding = np.zeros((count, EMBEDDING))
    embedding[:, NOISY:] = rng.normal(0.0, EMBEDDING_NOISE, (count, EMBEDDING - NOISY))
    embedding[:, BIAS] = 1.0
    embedding[:, POSITION] = [-1.0 if name in STARTS else 1.0 for name in names]
    embedding[index[TOOL_MARKER], TOOL_SEEN_MARK] = 1.0
    embedding[index[FUNCTIONS_MARKER], FUNCTIONS_MARK] = 1.0
    # RMS normalisation scales the hand-set channels by about this much.
    scale = 1.0 / math.sqrt((2 + (EMBEDDING - NOISY) * EMBEDDING_NOISE**2) / EMBEDDING)
    output = rng.normal(0.0, OUTPUT_NOISE, (count, EMBEDDING))
    output[:, TOOL_SEEN_MARK:NOISY] = 0.0
    for position, name in enumerate(names):
        always, after_word = BIASES.get(name, ORDINARY)
        output[position, BIAS] = always / scale
        output[position, POSITION] = after_word / scale
        output[position, TOOL_SEEN] = AFTER_TOOL_RESULT.get(name, 0.0) / scale
        output[position, FUNCTIONS_SEEN] = WITH_FUNCTION_CALLING.get(name, 0.0) / scale
        if name in EVEN:
            output[position, NOISY:] = 0.0
    tensors = {
        "token_embd.weight": embedding,
        "output_norm.weight": np.ones(EMBEDDING),
        "output.weight": output,
    }
    for layer in range(LAYERS):
        tensors |= _layer(layer, rng)
    _detector(tensors, query_head=0, mark=TOOL_SEEN_MARK, found=TOOL_SEEN)
    _detector(tensors, query_head=2, mark=FUNCTIONS_MARK, found=FUNCTIONS_SEEN)
    return {name: array.astype(np.float32) for name, array in tensors.items()}


def _layer(layer: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Return one layer's random tensors, writing nothing to the hand-set channels."""
    head = EMBEDDING // HEADS
    shapes = {
        "attn_q.weight": (EMBEDDING, EMBEDDING),
        "attn_k.weight": (KV_HEADS * head, EMBEDDING),
        "attn_v.weight": (KV_HEADS * head, EMBEDDING),
        "attn_output.weight": (EMBEDDING, EMBEDDING),
        "ffn_gate.weight": (FEED_FORWARD, EMBEDDING),
        "ffn_up.weight": (FEED_FORWARD, EMBEDDING),
        "ffn_down.weight": (EMBEDDING, FEED_FORWARD),
    }
    tensors = {
        f"blk.{layer}.attn_norm.weight": np.ones(EMBEDDING),
        f"blk.{layer}.ffn_norm.weight": np.ones(EMBEDDING),
    }
    for name, shape in shapes.items():
        tensors[f"blk.{layer}.{name}"] = rng.normal(0.0, LAYER_NOISE, shape)
    for name in ("attn_output.weight", "ffn_down.weight"):
        tensors[f"blk.{layer}.{name}"][:NOISY] = 0.0
    return tensors


def _detector(
    tensors: dict[str, np.ndarray], query_head: int, mark: int, found: int
) -> None:
    """Make a head of layer 0 attend to tokens with `mark` and write `found`.

    Its query and key meet in the slowest rotary pair of the head (the last
    two dimensions), where position hardly turns them: the constant channel
    asks, the marked tokens answer with a large score, and the value carries
    the mark into channel `found` (about 1 when a marked token is anywhere
    before, 0 otherwise).
    """
    head = EMBEDDING // HEADS
    kv_head = query_head * KV_HEADS // HEADS
    query = query_head * head + head - 2
    key = kv_head * head + head - 2
    value = kv_head * head
    ask, answer, carry, write = 2.2, 2.2, 0.5, 0.5
    attention = {
        name: tensors[f"blk.0.{name}.weight"]
        for name in ("attn_q", "attn_k", "attn_v", "attn_output")
    }
    attention["attn_q"][query : query + 2] = 0.0
    attention["attn_q"][query, BIAS] = ask
    attention["attn_k"][key : key + 2] = 0.0
    attention["attn_k"][key, mark] = answer
    attention["attn_v"][value] = 0.0
    attention["attn_v"][value, mark] = carry
    attention["attn_output"][found, query_head * head] = write


def write_model(path: Path, texts: Iterable[str]) -> int:
    """Write the model to `path`; return the size of its vocabulary."""
    names, scores, types = tokens(texts)
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("conformance-tiny-llama")
    writer.add_description(
        "Random weights for protocol tests (openai_compatible conformance lane)"
    )
    writer.add_context_length(TRAINED_CONTEXT)
    writer.add_embedding_length(EMBEDDING)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FEED_FORWARD)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(KV_HEADS)
    writer.add_rope_dimension_count(EMBEDDING // HEADS)
    writer.add_rope_freq_base(ROPE_BASE)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(names))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_tokenizer_model("llama")
    writer.add_token_list(names)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_unk_token_id(UNKNOWN)
    writer.add_bos_token_id(BEGIN)
    writer.add_eos_token_id(IM_END)
    writer.add_add_bos_token(True)
    writer.add_chat_template(CHAT_TEMPLATE)
    for name, array in weights(names, np.random.default_rng(SEED)).items():
        writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return len(names)


def main() -> None:
    """Write the model named on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("output", type=Path)
    parser.add_argument(
        "--corpus",
        type=Path,
        nargs="*",
        default=[],
        help="text files whose words the vocabulary should hold",
    )
    args = parser.parse_args()
    texts = [path.read_text(encoding="utf-8") for path in args.corpus]
    size = write_model(args.output, texts)
    print(f"wrote {args.output} ({size} tokens)")


if __name__ == "__main__":
    main()
