"""Write an offline WordLevel tokenizer whose vocabulary matches config.json's vocab_size."""

import json
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers

folder = Path(sys.argv[1])
config = json.loads((folder / "config.json").read_text())
size = int(config["vocab_size"])
special = {0: "<unk>", config["bos_token_id"]: "<s>", config["eos_token_id"]: "</s>"}
vocab = {special.get(i, f"w{i}"): i for i in range(size)}
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with one space
tok.add_special_tokens(["<unk>", "<s>", "</s>"])
tok.save(str(folder / "tokenizer.json"))
(folder / "tokenizer_config.json").write_text(
    json.dumps(
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "bos_token": "<s>",
            "eos_token": "</s>",
            "unk_token": "<unk>",
            "add_bos_token": False,
            "add_eos_token": False,
            "model_max_length": 4096,
            "clean_up_tokenization_spaces": False,
        },
        indent=1,
    )
)
print("wrote", folder, size)
