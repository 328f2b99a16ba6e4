"""Reference WordPiece tokenization (Hugging Face fast BERT tokenizer,
bert-base-uncased vocabulary) of hard strings and of every code point.

Writes into $HPCBENCH_REF_DIR:
  tokenize_cases.json: [{"text", "ids", "offsets": [[b, e], ...]}] for the
    hand-picked strings below (no special tokens; offsets in code points).
  tokenize_codepoints.bin: for each block of code points (surrogates
    skipped), the text " ".join("a" + chr(c) + "b") is tokenized; int32
    little-endian records: first_cp, end_cp (exclusive), n_tokens, then
    n_tokens * (id, begin, end). The C++ test rebuilds the same texts.
"""
import json
import os
import struct
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from transformers import BertTokenizerFast
from transformers.models.bert.tokenization_bert import load_vocab

SHARED = os.environ["HPCBENCH_TEST_DATA"]
OUT = os.environ["HPCBENCH_REF_DIR"]

CASES = [
    "", " ", "   \t\n\r  ", "\u3000\u00a0\u2028\u2029",
    "Hello, world!", "Don't stop--now...", "a.b,c;d:e!f?g", "$100 + 5% = <tag> ^_^ `x` |y| ~z~ @me #1 &amp;",
    "naïve café résumé Ångström Œuvre ß ẞ", "İstanbul ŞEHİR ǅemal Σίσυφος ΐ",
    "e\u0301 a\u0300\u0301\u0302 o\u0308\u0304 \u0345x", "\u1d165\u1d166 \U0001D165\U0001D16D",
    "中文字符测试 日本語のテキスト 한국어 텍스트 \u4e00\u9fff\u3400\U00020000\U0002A6DF\uF900\U0002F800",
    "emoji 😀👍🏽 👨‍👩‍👧 🇫🇷 ❤️ ✓ ™ © ® € £ ¥ ° ± × ÷ …",
    "ctrl\x00a\x01b\x07c\x1fd\x7fe\x85f\ufffdg\u200bh\u200ci\u200dj\u2060k\ufeffl\u00adm",
    "zero\u200bwidth\u200b \u200b", "\ue000private\U000F0000 \U000E0041tag",
    "a" * 100, "b" * 101, "supercalifragilisticexpialidocious" * 3, "x" + "é" * 99, "y" + "é" * 100,
    "unbelievableness antidisestablishmentarianism", "«quoted» „german“ ‘single’ “double” ¿qué? ¡sí!",
    "hyphen-ated em—dash en–dash a/b\\c", "1,234.56 3.14159 10^6 1e-5 0x1F",
    "tab\tseparated\nnew line\r\ncarriage", "ﬁ ﬂ ﬀ ½ ² ㎞ Ⅻ ℌ", "Ｆｕｌｌｗｉｄｔｈ　ＡＢＣ１２３",
    "ア゙ か\u3099 ﾊﾟ", "\u0e01\u0e34\u0e19 ข้าว देवनागरी العربية עברית", "\u0000\u0000", "\ufffd",
    " leading and trailing  ", "MiXeD CaSe WORDS", "[CLS] [SEP] [UNK] [PAD] ##ing", "a\u0300" * 60,
]


def main():
    vocab = load_vocab(os.path.join(SHARED, "bert-base-uncased", "vocab.txt"))
    tok = BertTokenizerFast(vocab=vocab, do_lower_case=True)
    assert len(tok) == 30522, len(tok)
    backend = tok.backend_tokenizer
    cases = []
    for text in CASES:
        enc = backend.encode(text, add_special_tokens=False)
        cases.append({"text": text, "ids": enc.ids, "offsets": [list(o) for o in enc.offsets]})
    with open(os.path.join(OUT, "tokenize_cases.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=True)

    blocks = []
    for lo, hi in [(0, 0x40000), (0xE0000, 0xE1000), (0xF0000, 0xF0100), (0x10FF00, 0x110000)]:
        for start in range(lo, hi, 256):
            cps = [c for c in range(start, min(start + 256, hi)) if not 0xD800 <= c < 0xE000]
            if cps:
                blocks.append((start, min(start + 256, hi), " ".join("a" + chr(c) + "b" for c in cps)))
    encs = backend.encode_batch([b[2] for b in blocks], add_special_tokens=False)
    path = os.path.join(OUT, "tokenize_codepoints.bin")
    with open(path + ".tmp", "wb") as f:
        for (start, end, _), enc in zip(blocks, encs):
            f.write(struct.pack("<3i", start, end, len(enc.ids)))
            flat = [v for i, (b, e) in zip(enc.ids, enc.offsets) for v in (i, b, e)]
            f.write(struct.pack(f"<{len(flat)}i", *flat))
    os.replace(path + ".tmp", path)
    print(f"{len(cases)} cases, {len(blocks)} code point blocks")


if __name__ == "__main__":
    sys.exit(main())
