#!/usr/bin/python3
"""spmref.py - dev-time generator of the SentencePiece reference data used by
the Go tests of package extract/onnx/tokenize (spm_test.go). Not part of the build.

It trains two tiny SentencePiece Unigram models on a small deterministic
corpus that it writes itself, converts each to a Hugging Face tokenizer.json
the way transformers' convert_slow_tokenizer.T5Converter (SpmConverter) does,
and records, for a list of tricky strings, SentencePiece's own IDs and
normalized text. hfref.mjs then adds the IDs of the official Hugging Face
`tokenizers` library (Rust, via its Node binding) for the same files.

Files written under ../../testdata/ (gzipped with mtime 0, so reruns are
byte-identical; each charsmap alone is ~330 KB of base64):
  spm_tiny/tokenizer.json.gz     normalization_rule_name=nmt_nfkc (the default;
                                 what google/siglip-*, T5, XLM-R use)
  spm_tiny_cf/tokenizer.json.gz  normalization_rule_name=nmt_nfkc_cf (+ case folding)
  spm_expected.json              the reference rows

Regenerate (from the repository root; Debian 12 packages):

    apt-get install -y python3-sentencepiece python3-protobuf   # 0.1.97-3, 3.21.12
    /usr/bin/python3 extract/onnx/tokenize/internal/spmref/spmref.py
    cd extract/onnx/tokenize/internal/spmref
    npm ci --ignore-scripts      # tokenizers 0.23.2 (prebuilt binding inside the package)
    node hfref.mjs               # adds hf_ids, hf_pretokenized, precompiled_sweep
    cd ../../../../.. && go test ./extract/onnx/tokenize/

Versions used for the committed files: sentencepiece 0.1.97 (Debian
python3-sentencepiece 0.1.97-3+b1), protobuf 3.21.12, Python 3.11,
tokenizers (npm) 0.23.2, Node 20.

Training is deterministic: fixed corpus, set_random_generator_seed(1),
num_threads=1, input_sentence_size=0 (no sampling), shuffle off. The script
trains each model twice and fails if the two serialized models differ.

The converter behaviour mirrored here (SpmConverter in transformers' current
convert_slow_tokenizer.py; older releases wrote Sequence[Precompiled,
Replace(Regex " {2,}" -> " ")], without the Strip, so that trailing spaces
gave an extra "▁" token):
  normalizer     Sequence[Precompiled(charsmap), Strip(left=false, right=true),
                 Replace(Regex " {2,}" -> "\u2581")]
  pre_tokenizer  Metaspace(replacement "\u2581", prepend_scheme "always", split true)
  decoder        Metaspace (same)
  model          Unigram(pieces + scores, unk_id = trainer_spec.unk_id)
  added_tokens   control pieces (<pad>, </s>) as special, normalized=false; like
                 the tokenizer.json of real T5/SigLIP exports, <unk> too
  post_processor T5Converter: TemplateProcessing "$A </s>" / "$A </s> $B </s>"
Generated data, no third-party text: CC0.
"""

import base64
import gzip
import json
import os
import sys
import tempfile

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2 as model_pb2

HERE = os.path.dirname(os.path.abspath(__file__))
TESTDATA = os.path.normpath(os.path.join(HERE, "..", "..", "testdata"))

# ---------------------------------------------------------------- corpus ----

ENGLISH = (
    "a photo of a cat", "a photo of a dog", "the quick brown fox jumps over the lazy dog",
    "two people walking on the beach at sunset", "a red car parked in front of a house",
    "an aerial view of the city at night", "a bowl of fresh fruit on a wooden table",
    "children playing football in the park", "a man riding a bicycle down the street",
    "the mountains are covered with snow", "a close up photo of a flower",
    "Hello World", "This is a Test of the Tokenizer", "New York City", "United Nations",
    "It's 1,000,000 dollars!", "call me at 555-1234", "the year 2024", "version 3.14",
)
ACCENTED = (
    "café naïve résumé", "déjà vu", "crème brûlée", "Ångström", "Zürich über Straße",
    "señor niño mañana", "São Paulo", "Łódź", "Dvořák", "Fußgänger", "Ça va très bien",
    "Tiếng Việt", "garçon", "élève", "façade", "coöperate",
)
CJK = (
    "東京は日本の首都です", "猫の写真", "中文测试", "我爱北京天安门", "今日はいい天気ですね",
    "日本語のテキスト", "カタカナとひらがな", "漢字",
)
FULLWIDTH = ("ＡＢＣ　ａｂｃ　１２３", "Ｈｅｌｌｏ，ｗｏｒｌｄ！", "ｶﾀｶﾅ")
LIGATURES = ("ﬁnd the ﬂag", "oﬃce", "ﬀ", "①②③", "x² y³", "½ cup", "№ 5", "™ ©")
OTHER = ("Привет мир", "Москва", "Ελληνικά", "ΣΑΣ σας", "مرحبا بالعالم", "שלום",
         "नमस्ते", "ภาษาไทย", "한국어")
DIGITS = tuple(str(n) for n in (0, 1, 7, 12, 42, 99, 100, 365, 1000, 2023, 31415))


def corpus_lines():
    """A few thousand deterministic lines mixing all groups (LCG-driven)."""
    groups = (ENGLISH, ENGLISH, ACCENTED, CJK, FULLWIDTH, LIGATURES, OTHER, DIGITS)
    state = 12345
    out = []
    for _ in range(3000):
        words = []
        for _ in range(3):
            state = (state * 1103515245 + 12345) % (1 << 31)
            g = groups[state % len(groups)]
            state = (state * 1103515245 + 12345) % (1 << 31)
            words.append(g[(state >> 8) % len(g)])
        out.append(" ".join(words))
    for g in groups:
        out.extend(g)
    return out


# ---------------------------------------------------------- test strings ----

CASES = [
    ("simple", "a photo of a cat"),
    ("mixed_case", "HeLLo WoRLD, This is A TEST"),
    ("accents_precomposed", "Café naïve résumé Ångström"),
    ("accents_combining", "Cafe\u0301 nai\u0308ve re\u0301sume\u0301"),
    ("double_combining", "e\u0301\u0301 a\u0308\u0304"),
    ("A_ring_forms", "\u00c5 \u212b A\u030a"),
    ("fullwidth", "ＡＢＣ１２３"),
    ("fullwidth_sentence", "Ｈｅｌｌｏ，ｗｏｒｌｄ！"),
    ("halfwidth_katakana", "ｶﾀｶﾅ ｶﾞｷﾞ ﾊﾟ"),
    ("ligatures", "ﬁ ﬂ ﬃ oﬃce ﬁnd"),
    ("ligature_combining", "\ufb01\u0301 x"),
    ("circled", "①②⑩ ⑴"),
    ("compat", "x²³ ½ ㎏ ㍿ № ™ Ǆ ǅ"),
    ("spacing_diacritics", "¨a a ´ b ˜"),
    ("nbsp", "a\u00a0b\u00a0\u00a0c"),
    ("unicode_spaces", "a\u2003b\u2009c\u3000d\u202fe\u205ff"),
    ("zero_width", "a\u200bb\u200cc\u200dd\ufeffe"),
    ("line_separators", "a\u2028b\u2029c\u0085d"),
    ("tabs_newlines", "a\tb\nc\r\nd\t\te"),
    ("multiple_spaces", "a    b  c"),
    ("leading_spaces", "   leading"),
    ("trailing_spaces", "trailing   "),
    ("both_spaces", " \t both \n "),
    ("whitespace_only", " \t\n\u3000 "),
    ("empty", ""),
    ("leading_nbsp", "\u00a0\u00a0x"),
    ("trailing_nel", "abc\u0085"),
    ("control_chars", "a\x01b\x7fc\x1fd"),
    ("nul", "a\x00b"),
    ("bom_start", "\ufeffstart"),
    ("replacement_char", "a\ufffdb"),
    ("metaspace_literal", "▁abc ▁▁ d▁"),
    ("cjk", "東京は日本の首都です"),
    ("cjk_mixed", "我爱北京 Tokyo 東京 2024年"),
    ("hangul", "한국어"),
    ("hangul_jamo", "\u1112\u1161\u11ab\u1100\u1173\u11af"),
    ("emoji", "👍🏽 😀😀 1️⃣ 👨‍👩‍👧"),
    ("cyrillic", "Привет, мир! Москва"),
    ("greek_sigma", "ΣΑΣ σας ς"),
    ("casefold_specials", "Straße İstanbul ǅ ß ẞ"),
    ("arabic", "مرحبا بالعالم"),
    ("hebrew", "שלום"),
    ("devanagari", "नमस्ते"),
    ("thai", "ภาษาไทย"),
    ("digits", "0123456789 3.14 1,000,000"),
    ("special_eos", "hello </s> world"),
    ("special_unk", "<unk> and <pad>"),
    ("punctuation", "Hello!!! What?? (yes) [no] {maybe} \"quoted\" 'single'"),
    ("long", " ".join(ENGLISH + ACCENTED + CJK + FULLWIDTH + LIGATURES + OTHER) * 2),
]

# ---------------------------------------------------------------- model ----

MODELS = [
    ("nmt_nfkc", "spm_tiny"),
    ("nmt_nfkc_cf", "spm_tiny_cf"),
]


def train(rule, workdir, corpus_path, tag):
    prefix = os.path.join(workdir, f"{rule}_{tag}")
    spm.set_random_generator_seed(1)
    spm.SentencePieceTrainer.train(
        input=corpus_path,
        model_prefix=prefix,
        model_type="unigram",
        vocab_size=600,
        hard_vocab_limit=False,
        character_coverage=1.0,
        normalization_rule_name=rule,
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1,  # T5 / SigLIP layout
        num_threads=1,
        input_sentence_size=0,
        shuffle_input_sentence=False,
        minloglevel=2,
    )
    with open(prefix + ".model", "rb") as f:
        proto = model_pb2.ModelProto()
        proto.ParseFromString(f.read())
    # The temporary paths are recorded in the spec; keep the output stable.
    proto.trainer_spec.model_prefix = ""
    del proto.trainer_spec.input[:]
    return proto.SerializeToString()


def to_hf(proto):
    """tokenizer.json as SpmConverter/T5Converter would write it."""
    ts = proto.trainer_spec
    assert ts.model_type == 1, "expected a Unigram model"
    vocab = [[p.piece, p.score] for p in proto.pieces]
    charsmap = base64.b64encode(proto.normalizer_spec.precompiled_charsmap).decode("ascii")
    added = []
    for i, p in enumerate(proto.pieces):
        # CONTROL (3) pieces are special added tokens; real T5/SigLIP exports
        # also list <unk> (UNKNOWN, 2), added by transformers as a special token.
        if p.type in (2, 3):
            added.append({"id": i, "content": p.piece, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True})
    eos = proto.pieces[ts.eos_id].piece
    metaspace = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": charsmap},
            {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"},
        ]},
        "pre_tokenizer": metaspace,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": eos, "type_id": 0}}],
            "special_tokens": {eos: {"id": eos, "ids": [ts.eos_id], "tokens": [eos]}},
        },
        "decoder": metaspace,
        "model": {"type": "Unigram", "unk_id": ts.unk_id, "vocab": vocab, "byte_fallback": False},
    }


def dump(out):
    """One case per line (hfref.mjs rewrites the file the same way)."""
    j = lambda v: json.dumps(v, ensure_ascii=False, separators=(",", ":"))
    kv = lambda ind, o: "".join(f"{ind}{j(k)}: {j(v)},\n" for k, v in o.items())
    models = []
    for m in out["models"]:
        rest = {k: v for k, v in m.items() if k != "cases"}
        cases = ",\n".join("    " + j(c) for c in m["cases"])
        models.append("  {\n" + kv("   ", rest) + '   "cases": [\n' + cases + "\n   ]\n  }")
    top = {k: v for k, v in out.items() if k != "models"}
    return "{\n" + kv(" ", top) + ' "models": [\n' + ",\n".join(models) + "\n ]\n}\n"


def main():
    rows = []
    with tempfile.TemporaryDirectory() as work:
        corpus_path = os.path.join(work, "corpus.txt")
        with open(corpus_path, "w", encoding="utf-8") as f:
            f.write("\n".join(corpus_lines()) + "\n")
        for rule, dirname in MODELS:
            blob = train(rule, work, corpus_path, "a")
            if train(rule, work, corpus_path, "b") != blob:
                sys.exit(f"training {rule} is not deterministic")
            proto = model_pb2.ModelProto()
            proto.ParseFromString(blob)
            sp = spm.SentencePieceProcessor(model_proto=blob)
            out_dir = os.path.join(TESTDATA, dirname)
            os.makedirs(out_dir, exist_ok=True)
            path = os.path.join(out_dir, "tokenizer.json.gz")
            data = json.dumps(to_hf(proto), ensure_ascii=False, separators=(",", ":")) + "\n"
            with open(path, "wb") as f:
                # mtime=0 and no file name: byte-identical on regeneration.
                f.write(gzip.compress(data.encode("utf-8"), compresslevel=9, mtime=0))
            cases = []
            for name, text in CASES:
                ids = sp.encode(text, out_type=int, add_eos=True)
                pieces = sp.encode(text, out_type=str)
                cases.append({
                    "name": name,
                    "text": text,
                    "spm_ids": ids,
                    # sentencepiece 0.1.97 has no normalize(); for Unigram the
                    # pieces (unknown ones as their surface) spell it.
                    "spm_normalized": "".join(pieces),
                })
            rows.append({"name": rule, "file": f"testdata/{dirname}/tokenizer.json.gz",
                         "vocab_size": sp.get_piece_size(), "cases": cases})
            print(f"{rule}: {sp.get_piece_size()} pieces, {os.path.getsize(path)} bytes -> {path}")
    out = {
        "generator": "internal/spmref/spmref.py (+ hfref.mjs for hf_ids)",
        "sentencepiece_version": spm.__version__,
        "models": rows,
    }
    path = os.path.join(TESTDATA, "spm_expected.json")
    with open(path, "w", encoding="utf-8") as f:
        f.write(dump(out))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
