"""Makes a tiny Llama model and its tokenizer on the spot: no download, the same bytes on every run.

Run by the serving image's own interpreter (it has torch, transformers and tokenizers), usually as an init
container writing into the pod's emptyDir, so the profile works on any cluster without a model registry:

    python3 tinymodel.py OUT_DIR

What it makes: a 4-layer Llama (hidden 256, 4 heads, 2.8 M parameters, fp32) with weights drawn from seed 0, and
a byte-level BPE tokenizer trained on a fixed text; it prints one JSON line with the SHA-256 of the weights and
of the tokenizer, so the report can show that every rank of a group loaded the same model. Random weights write
nonsense, but greedy decoding makes the nonsense deterministic: the same prompt gives the same completion on one
process and across a pipeline-parallel group, which is what the profile compares.

Stdlib plus what the image provides; nothing from lwsconf (the file is shipped to the pod in a ConfigMap).
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

CORPUS = ("LeaderWorkerSet runs one leader and size minus one workers as a group. "
          "A model too big for one node is split across the group: tensor parallel inside a node, pipeline "
          "parallel across nodes. The leader serves the API; the workers hold the later stages. ") * 20
"""The tokenizer's training text: fixed, so its vocabulary (and the model's embedding size) never changes."""
LAYERS, HIDDEN, HEADS, INTERMEDIATE, CONTEXT = 4, 256, 4, 512, 512
SEED = 0


def make(out: Path) -> dict[str, str]:
    """Write the model and tokenizer into `out`; their checksums."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    bpe.train_from_iterator([CORPUS], trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token="<s>", eos_token="</s>")
    tokenizer.save_pretrained(out)
    torch.manual_seed(SEED)
    config = LlamaConfig(vocab_size=bpe.get_vocab_size(), hidden_size=HIDDEN, intermediate_size=INTERMEDIATE,
                         num_hidden_layers=LAYERS, num_attention_heads=HEADS, num_key_value_heads=HEADS,
                         max_position_embeddings=CONTEXT, bos_token_id=bpe.token_to_id("<s>"),
                         eos_token_id=bpe.token_to_id("</s>"), torch_dtype="float32", tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)
    return {"weights_sha256": _sha256(sorted(out.glob("*.safetensors"))),
            "tokenizer_sha256": _sha256([out / "tokenizer.json"]),
            "parameters": str(sum(p.numel() for p in model.parameters()))}


def _sha256(files: list[Path]) -> str:
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.read_bytes())
    return digest.hexdigest()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 tinymodel.py OUT_DIR")
    print(json.dumps({"tiny_model": str(sys.argv[1]), **make(Path(sys.argv[1]))}), flush=True)
