import sys

import sluice

path = sys.argv[1] if len(sys.argv) > 1 else "stories260K.gguf"
with sluice.Model(path, n_ctx=256, threads=1) as llm:
    out = llm("Once upon a time", max_tokens=32, temperature=0)   # greedy
    print(out["choices"][0]["text"])
