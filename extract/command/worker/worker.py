#!/usr/bin/env python3
# Persistent worker for vertebrae's command extractor (`persistent: true`, docs/command-extractor.md).
import json, sys
import numpy as np

# Load your model once, here. For example:
#   from sentence_transformers import SentenceTransformer
#   model = SentenceTransformer("intfloat/e5-base-v2")

def encode(texts):  # ---- REPLACE ME: one vector per text, e.g. `return model.encode(texts)` ----
    # Placeholder: [characters, count of "a", words]. Image rows send absolute file paths instead of texts.
    return [[len(t), t.count("a"), len(t.split())] for t in texts]

out, sys.stdout = sys.stdout, sys.stderr  # stray print()s go to stderr, not into the replies
for line in sys.stdin.buffer:  # one request per batch: {"batch": n, "rows": [{"value": ...}, ...]}
    req = json.loads(line)
    try:
        vecs = np.asarray(encode([row["value"] for row in req["rows"]]), dtype=np.float32)
        reply = json.dumps({"batch": req["batch"], "embeddings": vecs.tolist()}, allow_nan=False)
    except Exception as exc:  # fails this batch (and the run) with the message
        reply = json.dumps({"batch": req["batch"], "error": f"{type(exc).__name__}: {exc}"})
    out.write(reply + "\n")
    out.flush()
