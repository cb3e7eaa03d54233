"""The calls an application writes first, as llama-cpp-python names them: a completion from a
prompt, a chat completion from messages, each as the OpenAI-shaped dict (or an iterator of
chunks with stream=True), with stop strings, a seed, log probabilities and echo. Mixed into
Model; the loop is `sluice run`'s (sample, end-of-generation check, detokenize, accept), so a
greedy completion is the text `sluice run --temp 0` prints.

A model without a chat template is rendered as ChatML, with a warning on the "sluice" logger
(as `sluice serve` does)."""
import ctypes
import itertools
import logging
import os
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from ._lib import SluiceError, lib, check, text, SL_EINVAL

log = logging.getLogger("sluice")
_ids = itertools.count(1)

Prompt = Union[str, bytes, Sequence[int]]
Message = Dict[str, Any]
Result = Dict[str, Any]


def message_text(content: Any, where: str = "content") -> str:
    """A message's content as text: a string, or OpenAI's array of parts of which only
    {"type": "text", "text": ...} are accepted (anything else: SluiceError naming it)."""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        out = []
        for i, part in enumerate(content):
            kind = part.get("type") if isinstance(part, dict) else None
            if kind != "text" or not isinstance(part.get("text"), str):
                raise SluiceError(SL_EINVAL, "%s[%d]: only text parts are supported (got type %r)" % (where, i, kind))
            out.append(part["text"])
        return "".join(out)
    raise SluiceError(SL_EINVAL, "%s must be a string or an array of text parts" % where)


class _Run:
    """One generation on a fresh session: yields (text, [token entries]) as text becomes final
    (text that may begin a stop string is held back); finish is "stop" or "length" at the end."""

    def __init__(self, model: Any, ids: List[int], sampling: Dict[str, Any], max_tokens: Optional[int],
                 stop: Optional[Union[str, Sequence[str]]], n_top: Optional[int]):
        self.model, self.n_top = model, n_top
        self.stop = [stop] if isinstance(stop, str) else [s for s in (stop or []) if s]
        self.max_tokens = max_tokens if max_tokens and max_tokens > 0 else None
        self.finish: Optional[str] = None
        self.n_prompt, self.n_gen = len(ids), 0
        self.session = model.session(**sampling)
        try:
            self.session.feed(ids)
        except BaseException:
            self.session.close()
            raise

    def _logprobs(self, tok: int) -> Dict[str, Any]:
        k = max(self.n_top or 0, 0)
        ids, lps, lp = (ctypes.c_int32 * max(k, 1))(), (ctypes.c_float * max(k, 1))(), ctypes.c_float()
        with self.model._lock:
            n = check(lib.sl_session_logprobs(self.session._handle(), tok, k, ids, lps, ctypes.byref(lp)),
                      lib.sl_last_error)
        return {"id": tok, "logprob": lp.value, "top": [(ids[i], lps[i]) for i in range(n)]}

    def __iter__(self) -> Iterator[Tuple[str, List[Dict[str, Any]]]]:
        s, longest = self.session, max((len(x) for x in self.stop), default=0)
        out, sent, pending = "", 0, []   # pending: entries of tokens whose text is not sent yet
        try:
            while True:
                if self.max_tokens is not None and self.n_gen >= self.max_tokens:
                    self.finish = "length"
                    break
                with self.model._lock:
                    if s.n_past >= s.n_ctx:
                        self.finish = "length"
                        break
                    tok = s.sample()
                    if self.model.is_eog(tok):
                        self.finish = "stop"
                        break
                    entry = self._logprobs(tok) if self.n_top is not None else {"id": tok}
                    piece = s.detok(tok)
                    s.accept(tok)
                self.n_gen += 1
                before = len(out)
                out += piece.decode("utf-8", "replace")
                entry["start"] = before
                pending.append(entry)
                start = max(before - longest + 1, 0)
                hits = [i for i in (out.find(x, start) for x in self.stop) if i >= 0]
                if hits:
                    out = out[:min(hits)]
                    self.finish = "stop"
                    break
                safe = len(out) - longest + 1 if longest else len(out)
                if safe > sent:
                    done = [e for e in pending if e["start"] < safe]
                    pending = pending[len(done):]
                    yield out[sent:safe], done
                    sent = safe
            rest = [e for e in pending if e["start"] < len(out)]
            if len(out) > sent or rest:
                yield out[sent:], rest
        finally:
            s.close()


class CompletionMixin:
    """create_completion / __call__ / create_chat_completion for Model."""

    chat_format: Optional[str] = None

    def _token_text(self, tok: int) -> str:
        return self.token_bytes(tok).decode("utf-8", "replace")

    def _sampling(self, temperature: float, top_p: float, top_k: int, min_p: float, repeat_penalty: float,
                  seed: Optional[int]) -> Dict[str, Any]:
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little")
        return dict(temp=temperature, top_p=top_p, top_k=top_k, min_p=min_p, repeat_penalty=repeat_penalty,
                    seed=seed & (2 ** 64 - 1))

    def _prompt_ids(self, prompt: Prompt) -> List[int]:
        if isinstance(prompt, (str, bytes)):
            return self.tokenize(prompt)   # as feeding it to an empty session: BOS as the model asks
        return [int(t) for t in prompt]

    def _envelope(self, chat: bool, chunk: bool, rid: str, created: int) -> Result:
        kind = ("chat.completion.chunk" if chunk else "chat.completion") if chat else "text_completion"
        return {"id": rid, "object": kind, "created": created, "model": self.model_path}

    def _completion_logprobs(self, entries: List[Dict[str, Any]], offset: int) -> Dict[str, Any]:
        """OpenAI's legacy completions form: tokens, token_logprobs, top_logprobs, text_offset."""
        toks = [self._token_text(e["id"]) for e in entries]
        return {"tokens": toks, "token_logprobs": [e["logprob"] for e in entries],
                "top_logprobs": [{self._token_text(i): lp for i, lp in e["top"]} for e in entries],
                "text_offset": [offset + e["start"] for e in entries]}

    def _chat_logprobs(self, entries: List[Dict[str, Any]]) -> Dict[str, Any]:
        """OpenAI's chat form: content = [{token, logprob, bytes, top_logprobs}]."""
        def one(tok: int, lp: float) -> Dict[str, Any]:
            b = self.token_bytes(tok)
            return {"token": b.decode("utf-8", "replace"), "logprob": lp, "bytes": list(b)}
        return {"content": [dict(one(e["id"], e["logprob"]), top_logprobs=[one(i, lp) for i, lp in e["top"]])
                            for e in entries]}

    def _run(self, chat: bool, ids: List[int], sampling: Dict[str, Any], max_tokens: Optional[int], stop: Any,
             n_top: Optional[int], stream: bool, echo: str) -> Union[Result, Iterator[Result]]:
        run = _Run(self, ids, sampling, max_tokens, stop, n_top)
        rid, created = "%s-%d" % ("chatcmpl" if chat else "cmpl", next(_ids)), int(time.time())

        def lp(entries: List[Dict[str, Any]]) -> Optional[Dict[str, Any]]:
            if n_top is None:
                return None
            return self._chat_logprobs(entries) if chat else self._completion_logprobs(entries, len(echo))

        def usage() -> Dict[str, int]:
            return {"prompt_tokens": run.n_prompt, "completion_tokens": run.n_gen,
                    "total_tokens": run.n_prompt + run.n_gen}

        if not stream:
            pieces, entries = [], []
            for t, e in run:
                pieces.append(t)
                entries += e
            body = "".join(pieces)
            r = self._envelope(chat, False, rid, created)
            if chat:
                choice = {"index": 0, "message": {"role": "assistant", "content": body}}
            else:
                choice = {"text": echo + body, "index": 0}
            choice.update(logprobs=lp(entries), finish_reason=run.finish)
            r.update(choices=[choice], usage=usage())
            return r

        def chunks() -> Iterator[Result]:
            def chunk(delta: Optional[Dict[str, Any]], t: str, entries: Any, finish: Optional[str]) -> Result:
                r = self._envelope(chat, True, rid, created)
                c: Dict[str, Any] = {"index": 0, "delta": delta} if chat else {"text": t, "index": 0}
                c.update(logprobs=lp(entries) if entries is not None else None, finish_reason=finish)
                r["choices"] = [c]
                return r
            if chat:
                yield chunk({"role": "assistant", "content": ""}, "", None, None)
            elif echo:
                yield chunk(None, echo, None, None)
            for t, e in run:
                yield chunk({"content": t}, t, e, None)
            yield chunk({}, "", None, run.finish)
        return chunks()

    def create_completion(self, prompt: Prompt, max_tokens: Optional[int] = 16, temperature: float = 0.8,
                          top_p: float = 0.95, top_k: int = 40, min_p: float = 0.05, repeat_penalty: float = 1.0,
                          stop: Optional[Union[str, List[str]]] = None, seed: Optional[int] = None,
                          stream: bool = False, echo: bool = False,
                          logprobs: Optional[int] = None) -> Union[Result, Iterator[Result]]:
        """A completion of prompt (text, or token ids): the "text_completion" dict, or with
        stream=True an iterator of its chunks. max_tokens None or <= 0: until the context is
        full. temperature 0 is greedy. logprobs=N: each token's log probability and the N most
        likely (the sampler's distribution after these settings). echo: the prompt first."""
        ids = self._prompt_ids(prompt)
        shown = ""
        if echo:
            shown = prompt if isinstance(prompt, str) else self.detokenize(ids).decode("utf-8", "replace")
        return self._run(False, ids, self._sampling(temperature, top_p, top_k, min_p, repeat_penalty, seed),
                         max_tokens, stop, logprobs, stream, shown)

    def __call__(self, prompt: Prompt, **kw: Any) -> Union[Result, Iterator[Result]]:
        """create_completion(prompt, ...)."""
        return self.create_completion(prompt, **kw)

    def chat_template(self) -> str:
        """The chat template family used: Model(chat_format=...), else the model's own, else
        "chatml" (logged once as a warning)."""
        if self.chat_format:
            return self.chat_format
        with self._lock:
            own = lib.sl_model_chat_template(self._handle())
        if own:
            return text(own)
        log.warning("%s has no chat template sluice recognises: using ChatML", self.model_path)
        self.chat_format = "chatml"
        return self.chat_format

    def _chat_args(self, messages: Sequence[Message]):
        roles, contents = [], []
        for i, m in enumerate(messages):
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                raise SluiceError(SL_EINVAL, "messages[%d] must be a dict with a role" % i)
            roles.append(m["role"].encode())
            contents.append(message_text(m.get("content"), "messages[%d].content" % i).encode("utf-8"))
        n, tmpl = len(roles), self.chat_template().encode()
        return tmpl, (ctypes.c_char_p * max(n, 1))(*roles), (ctypes.c_char_p * max(n, 1))(*contents), n

    def apply_chat_template(self, messages: Sequence[Message], add_generation_prompt: bool = True) -> str:
        """The conversation as the template renders it (special tokens as text). Its tokens are
        chat_tokens(messages), not tokenize(text, parse_special=True), which would read
        control-token texts inside the messages as control tokens too."""
        tmpl, r, c, n = self._chat_args(messages)
        with self._lock:
            size = check(lib.sl_model_chat_render(self._handle(), tmpl, r, c, n, add_generation_prompt, None, 0),
                         lib.sl_last_error)
            buf = ctypes.create_string_buffer(size + 1)
            check(lib.sl_model_chat_render(self._handle(), tmpl, r, c, n, add_generation_prompt, buf, size + 1),
                  lib.sl_last_error)
        return buf.raw[:size].decode("utf-8", "replace")

    def chat_tokens(self, messages: Sequence[Message], add_generation_prompt: bool = True,
                    special_in_content: bool = False) -> List[int]:
        """Token ids of the rendered conversation: the template's markers are control tokens, the
        messages' text is text (a message cannot fake a turn), unless special_in_content
        (llama.cpp's default: control-token texts in messages become control tokens too)."""
        tmpl, r, c, n = self._chat_args(messages)
        cap = 0
        ids = (ctypes.c_int32 * 1)()
        with self._lock:
            for _ in range(2):   # the count first, then the ids
                k = check(lib.sl_model_chat_tokenize(self._handle(), tmpl, r, c, n, add_generation_prompt,
                                                     special_in_content, ids, cap), lib.sl_last_error)
                if k <= cap:
                    return list(ids[:k])
                cap = k
                ids = (ctypes.c_int32 * cap)()
        raise SluiceError(SL_EINVAL, "chat tokenize: the count changed")

    def create_chat_completion(self, messages: Sequence[Message], max_tokens: Optional[int] = None,
                               temperature: float = 0.2, top_p: float = 0.95, top_k: int = 40,
                               min_p: float = 0.05, repeat_penalty: float = 1.0,
                               stop: Optional[Union[str, List[str]]] = None, seed: Optional[int] = None,
                               stream: bool = False, logprobs: bool = False,
                               top_logprobs: Optional[int] = None,
                               special_in_content: bool = False) -> Union[Result, Iterator[Result]]:
        """A chat completion of messages ({"role", "content"}; content a string or text parts):
        the "chat.completion" dict, or with stream=True an iterator of "chat.completion.chunk"
        dicts (the first names the role, the last carries finish_reason). Control tokens come
        only from the template unless special_in_content (see chat_tokens)."""
        ids = self.chat_tokens(messages, True, special_in_content)
        n_top = (top_logprobs or 0) if logprobs else None
        return self._run(True, ids, self._sampling(temperature, top_p, top_k, min_p, repeat_penalty, seed),
                         max_tokens, stop, n_top, stream, "")
