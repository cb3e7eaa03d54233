import json
import sys

import sluice

path = sys.argv[1] if len(sys.argv) > 1 else "stories260K.gguf"
messages = [{"role": "system", "content": "You tell stories."},
            {"role": "user", "content": [{"type": "text", "text": "Tell me about a cat."}]}]
with sluice.Model(path, n_ctx=256) as llm:
    r = llm.create_chat_completion(messages=messages, max_tokens=24, temperature=0)
    print(json.dumps(r, indent=1))
    for chunk in llm.create_chat_completion(messages=messages, max_tokens=24, temperature=0, stream=True):
        print(chunk["choices"][0]["delta"].get("content", ""), end="|", flush=True)
    print()
