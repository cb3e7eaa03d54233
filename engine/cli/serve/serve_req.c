/* Request bodies of /v1/completions and /v1/chat/completions: every field we
 * use is type- and range-checked before anything reaches the engine. */
#include "serve.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sl_srv_gen_free(sl_srv_gen *g)
{
    free(g->prompt);
    free(g->plain);
    for (int i = 0; i < g->n_stop; i++) free(g->stop[i]);
    memset(g, 0, sizeof *g);
}

char *sl_srv_error_json(const char *msg, const char *type, const char *param, const char *code)
{
    cJSON *root = cJSON_CreateObject(), *e = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(e, "message", msg);
    cJSON_AddStringToObject(e, "type", type);
    if (param) cJSON_AddStringToObject(e, "param", param); else cJSON_AddNullToObject(e, "param");
    if (code) cJSON_AddStringToObject(e, "code", code); else cJSON_AddNullToObject(e, "code");
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

typedef struct pctx { char *err; size_t cap; const char **param; } pctx;

static int bad(pctx *c, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(pctx *c, const char *param, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, c->cap, fmt, ap);
    va_end(ap);
    *c->param = param;
    return 400;
}

/* Optional number in [lo, hi]; integral if want_int. 0, or the status. */
static int num(pctx *c, const cJSON *o, const char *key, double lo, double hi, bool want_int, double *out,
               bool *present)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (present) *present = false;
    if (!v || cJSON_IsNull(v)) return 0;
    if (!cJSON_IsNumber(v)) return bad(c, key, "'%s' must be a number", key);
    double d = v->valuedouble;
    if (!isfinite(d) || d < lo || d > hi)
        return bad(c, key, "'%s' is %g, outside [%g, %g]", key, d, lo, hi);
    if (want_int && d != floor(d)) return bad(c, key, "'%s' must be an integer", key);
    *out = d;
    if (present) *present = true;
    return 0;
}

static int get_stop(pctx *c, const cJSON *o, sl_srv_gen *g)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "stop");
    if (!v || cJSON_IsNull(v)) return 0;
    const cJSON *one[1] = { v };
    int n = 1;
    if (cJSON_IsArray(v)) {
        n = cJSON_GetArraySize(v);
        if (n > SL_SRV_MAX_STOP) return bad(c, "stop", "'stop' has %d entries (at most %d)", n, SL_SRV_MAX_STOP);
    } else if (!cJSON_IsString(v)) {
        return bad(c, "stop", "'stop' must be a string or an array of strings");
    }
    for (int i = 0; i < n; i++) {
        const cJSON *s = cJSON_IsArray(v) ? cJSON_GetArrayItem(v, i) : one[0];
        if (!cJSON_IsString(s)) return bad(c, "stop", "'stop' entries must be strings");
        size_t len = strlen(s->valuestring);
        if (len == 0 || len > SL_SRV_STOP_BYTES)
            return bad(c, "stop", "'stop' entries must be 1..%d bytes", SL_SRV_STOP_BYTES);
        if (!(g->stop[g->n_stop] = strdup(s->valuestring))) return 500;
        g->n_stop++;
    }
    return 0;
}

static int get_prompt(pctx *c, const cJSON *o, sl_srv_gen *g)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "prompt");
    if (!v) return bad(c, "prompt", "'prompt' is required");
    if (cJSON_IsArray(v)) {   /* a batch of prompts: we take exactly one */
        if (cJSON_GetArraySize(v) != 1) return bad(c, "prompt", "'prompt' arrays must hold exactly one string");
        v = cJSON_GetArrayItem(v, 0);
    }
    if (!cJSON_IsString(v)) return bad(c, "prompt", "'prompt' must be a string");
    return (g->prompt = strdup(v->valuestring)) ? 0 : 500;
}

/* A message's content: a string, or OpenAI's array of parts of which only
 * {"type": "text", "text": ...} are taken (joined; *own keeps them). */
static int get_content(pctx *c, const cJSON *content, int i, const char **out, char **own)
{
    if (cJSON_IsString(content)) { *out = content->valuestring; return 0; }
    if (!cJSON_IsArray(content))
        return bad(c, "messages", "messages[%d].content must be a string or an array of text parts", i);
    size_t len = 0;
    int n = cJSON_GetArraySize(content);
    for (int k = 0; k < n; k++) {
        const cJSON *part = cJSON_GetArrayItem(content, k);
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(part, "type");
        const cJSON *text = cJSON_GetObjectItemCaseSensitive(part, "text");
        if (!cJSON_IsString(type) || strcmp(type->valuestring, "text") || !cJSON_IsString(text))
            return bad(c, "messages", "messages[%d].content[%d]: only text parts are supported (type %s)", i, k,
                       cJSON_IsString(type) ? type->valuestring : "missing");
        len += strlen(text->valuestring);
    }
    if (!(*own = malloc(len + 1))) return 500;
    len = 0;
    for (int k = 0; k < n; k++) {
        const char *t = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(content, k), "text")->valuestring;
        memcpy(*own + len, t, strlen(t));
        len += strlen(t);
    }
    (*own)[len] = 0;
    *out = *own;
    return 0;
}

static int get_messages(pctx *c, const cJSON *o, const sl_srv_limits *lim, enum sl_chat_tmpl tmpl,
                        const char *bos, const char *eos, sl_srv_gen *g)
{
    /* llama-server's per-request template argument */
    const cJSON *re = cJSON_GetObjectItemCaseSensitive(o, "reasoning_effort");
    if (re && !cJSON_IsNull(re) && (!cJSON_IsString(re) || (strcmp(re->valuestring, "low") &&
        strcmp(re->valuestring, "medium") && strcmp(re->valuestring, "high"))))
        return bad(c, "reasoning_effort", "'reasoning_effort' must be \"low\", \"medium\" or \"high\"");
    const cJSON *sic = cJSON_GetObjectItemCaseSensitive(o, "special_in_content");
    if (sic && !cJSON_IsNull(sic) && !cJSON_IsBool(sic))
        return bad(c, "special_in_content", "'special_in_content' must be a boolean");
    g->special_in_content = sic && cJSON_IsTrue(sic);
    g->channels = sl_chat_has_channels(tmpl);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, "messages");
    if (!v) return bad(c, "messages", "'messages' is required");
    if (!cJSON_IsArray(v)) return bad(c, "messages", "'messages' must be an array");
    int n = cJSON_GetArraySize(v);
    if (n < 1 || n > lim->max_messages)
        return bad(c, "messages", "'messages' must hold 1..%d messages", lim->max_messages);
    sl_chat_msg *ms = calloc((size_t)n, sizeof *ms);
    char **own = calloc((size_t)n, sizeof *own);
    if (!ms || !own) { free(ms); free(own); return 500; }
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const cJSON *m = cJSON_GetArrayItem(v, i);
        const cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        const cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (!cJSON_IsObject(m)) rc = bad(c, "messages", "messages[%d] must be an object", i);
        else if (!cJSON_IsString(role) || (strcmp(role->valuestring, "system") &&
                 strcmp(role->valuestring, "user") && strcmp(role->valuestring, "assistant")))
            rc = bad(c, "messages", "messages[%d].role must be \"system\", \"user\" or \"assistant\"", i);
        else if (!(rc = get_content(c, content, i, &ms[i].content, &own[i]))) ms[i].role = role->valuestring;
    }
    if (!rc) {
        sl_chat_spans sp = { NULL, 0, 0 };
        sl_chat_opts co = { .add_generation_prompt = true, .bos = bos, .eos = eos, .spans = &sp,
                            .reasoning_effort = cJSON_IsString(re) ? re->valuestring : NULL };
        int64_t len = sl_chat_render_opts(tmpl, ms, (size_t)n, &co, NULL, 0);
        if (len < 0) rc = bad(c, "messages", "cannot render the chat template: %s", sl_last_error());
        else if (!(g->prompt = malloc((size_t)len + 1)) || !(g->plain = malloc((sp.n + 1) * 2 * sizeof *g->plain)))
            rc = 500;
        else {
            sp.v = g->plain;
            sp.cap = sp.n;
            sl_chat_render_opts(tmpl, ms, (size_t)n, &co, g->prompt, (size_t)len + 1);
            g->n_plain = sp.n;
        }
    }
    for (int i = 0; i < n; i++) free(own[i]);
    free(own);
    free(ms);
    return rc;
}

/* completions: "logprobs": N (top N); chat: "logprobs": true with "top_logprobs": N. */
static int get_logprobs(pctx *c, const cJSON *o, bool chat, sl_srv_gen *g)
{
    double d;
    bool p;
    g->logprobs = -1;
    if (!chat) {
        int rc = num(c, o, "logprobs", 0, SL_SRV_MAX_TOP, true, &d, &p);
        if (!rc && p) g->logprobs = (int32_t)d;
        return rc;
    }
    const cJSON *on = cJSON_GetObjectItemCaseSensitive(o, "logprobs");
    if (on && !cJSON_IsNull(on) && !cJSON_IsBool(on)) return bad(c, "logprobs", "'logprobs' must be a boolean");
    int rc = num(c, o, "top_logprobs", 0, SL_SRV_MAX_TOP, true, &d, &p);
    if (rc) return rc;
    if (p && !cJSON_IsTrue(on)) return bad(c, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
    if (cJSON_IsTrue(on)) g->logprobs = p ? (int32_t)d : 0;
    return 0;
}

int sl_srv_parse(const char *body, size_t len, bool chat, const sl_srv_limits *lim,
                 enum sl_chat_tmpl tmpl, const char *bos, const char *eos, sl_srv_gen *g,
                 char *err, size_t cap, const char **param)
{
    pctx c = { err, cap, param };
    memset(g, 0, sizeof *g);
    *param = NULL;
    cJSON *o = cJSON_ParseWithLength(body, len);
    if (!o) return bad(&c, NULL, "the body is not valid JSON");
    int rc = 0;
    if (!cJSON_IsObject(o)) { rc = bad(&c, NULL, "the body must be a JSON object"); goto out; }
    g->chat = chat;
    /* OpenAI's defaults: temperature 1, top_p 1, nothing else filters */
    sl_sampling_init(&g->sp);
    g->sp.temp = 1.0f; g->sp.top_p = 1.0f; g->sp.top_k = 0; g->sp.min_p = 0.0f;
    g->sp.repeat_penalty = 1.0f;
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(o, "model");
    if (model && !cJSON_IsString(model)) { rc = bad(&c, "model", "'model' must be a string"); goto out; }
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(o, "stream");
    if (st && !cJSON_IsNull(st) && !cJSON_IsBool(st)) { rc = bad(&c, "stream", "'stream' must be a boolean"); goto out; }
    g->stream = st && cJSON_IsTrue(st);
    /* llama.cpp's per-request switch: false = prefill the whole prompt */
    const cJSON *cp = cJSON_GetObjectItemCaseSensitive(o, "cache_prompt");
    if (cp && !cJSON_IsNull(cp) && !cJSON_IsBool(cp)) {
        rc = bad(&c, "cache_prompt", "'cache_prompt' must be a boolean");
        goto out;
    }
    g->no_cache = cp && cJSON_IsFalse(cp);
    double d, seed = 0, mt = 0, mct = 0, nn = 1;
    bool have_seed = false, have_mt = false, have_mct = false;
    bool p;
    if ((rc = num(&c, o, "temperature", 0, 2, false, &d, &p))) goto out;
    if (p) g->sp.temp = (float)d;
    if ((rc = num(&c, o, "top_p", 0, 1, false, &d, &p))) goto out;
    if (p) g->sp.top_p = (float)d;
    if ((rc = num(&c, o, "top_k", 0, lim->n_vocab, true, &d, &p))) goto out;
    if (p) g->sp.top_k = (int32_t)d;
    if ((rc = num(&c, o, "min_p", 0, 1, false, &d, &p))) goto out;
    if (p) g->sp.min_p = (float)d;
    if ((rc = num(&c, o, "seed", -9007199254740991.0, 9007199254740991.0, true, &seed, &have_seed))) goto out;
    g->sp.seed = have_seed ? (uint64_t)(int64_t)seed : 0;
    g->seeded = have_seed;
    if ((rc = num(&c, o, "max_tokens", 1, lim->max_tokens, true, &mt, &have_mt))) goto out;
    if ((rc = num(&c, o, "max_completion_tokens", 1, lim->max_tokens, true, &mct, &have_mct))) goto out;
    g->max_tokens = have_mct ? (int32_t)mct : have_mt ? (int32_t)mt : (chat ? 0 : 16);   /* OpenAI: 16 */
    bool have_n;
    if ((rc = num(&c, o, "n", 1, 128, true, &nn, &have_n))) goto out;
    if (have_n && nn != 1) {
        rc = bad(&c, "n", "'n' is %g: sluice serve returns one choice per request (send n requests, or n = 1)", nn);
        goto out;
    }
    if ((rc = get_logprobs(&c, o, chat, g))) goto out;
    const cJSON *echo = cJSON_GetObjectItemCaseSensitive(o, "echo");
    if (echo && !cJSON_IsNull(echo) && (chat || !cJSON_IsBool(echo))) {
        rc = bad(&c, "echo", chat ? "'echo' is a field of completions, not of chat completions"
                                  : "'echo' must be a boolean");
        goto out;
    }
    g->echo = echo && cJSON_IsTrue(echo);
    /* accepted and range-checked, not implemented: they must not change the result */
    if ((rc = num(&c, o, "presence_penalty", 0, 0, false, &d, NULL)) ||
        (rc = num(&c, o, "frequency_penalty", 0, 0, false, &d, NULL)))
        goto out;
    if ((rc = get_stop(&c, o, g))) goto out;
    rc = chat ? get_messages(&c, o, lim, tmpl, bos, eos, g) : get_prompt(&c, o, g);
out:
    cJSON_Delete(o);
    if (rc) sl_srv_gen_free(g);
    if (rc == 500) snprintf(err, cap, "out of memory");
    return rc;
}

char *sl_srv_result_json(bool chat, bool chunk, uint64_t id, const char *model, long long created,
                         const char *text, size_t text_len, const char *finish, bool role,
                         int32_t n_prompt, int32_t n_cached, int32_t n_gen, cJSON *logprobs)
{
    return sl_srv_result_json_r(chat, chunk, id, model, created, text, text_len, NULL, 0, finish, role,
                                n_prompt, n_cached, n_gen, logprobs);
}

char *sl_srv_result_json_r(bool chat, bool chunk, uint64_t id, const char *model, long long created,
                           const char *text, size_t text_len, const char *reasoning, size_t reasoning_len,
                           const char *finish, bool role, int32_t n_prompt, int32_t n_cached, int32_t n_gen,
                           cJSON *logprobs)
{
    char idbuf[64], *t = NULL, *rt = NULL;
    snprintf(idbuf, sizeof idbuf, "%s-%llu", chat ? "chatcmpl" : "cmpl", (unsigned long long)id);
    if (text && !(t = strndup(text, text_len))) return NULL;
    if (reasoning && !(rt = strndup(reasoning, reasoning_len))) { free(t); return NULL; }
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "id", idbuf);
    cJSON_AddStringToObject(r, "object", chat ? (chunk ? "chat.completion.chunk" : "chat.completion")
                                              : "text_completion");
    cJSON_AddNumberToObject(r, "created", (double)created);
    cJSON_AddStringToObject(r, "model", model);
    cJSON *choices = cJSON_AddArrayToObject(r, "choices"), *c = cJSON_CreateObject();
    cJSON_AddItemToArray(choices, c);
    cJSON_AddNumberToObject(c, "index", 0);
    if (chat) {
        cJSON *m = cJSON_AddObjectToObject(c, chunk ? "delta" : "message");
        if (role || !chunk) cJSON_AddStringToObject(m, "role", "assistant");
        if (t) cJSON_AddStringToObject(m, "content", t);
        if (rt) cJSON_AddStringToObject(m, "reasoning_content", rt);
    } else {
        cJSON_AddStringToObject(c, "text", t ? t : "");
    }
    if (logprobs) cJSON_AddItemToObject(c, "logprobs", logprobs);
    else cJSON_AddNullToObject(c, "logprobs");
    if (finish) cJSON_AddStringToObject(c, "finish_reason", finish);
    else cJSON_AddNullToObject(c, "finish_reason");
    if (!chunk) {
        cJSON *u = cJSON_AddObjectToObject(r, "usage");
        cJSON_AddNumberToObject(u, "prompt_tokens", n_prompt);
        cJSON_AddNumberToObject(u, "completion_tokens", n_gen);
        cJSON_AddNumberToObject(u, "total_tokens", n_prompt + n_gen);
        cJSON *d = cJSON_AddObjectToObject(u, "prompt_tokens_details");
        cJSON_AddNumberToObject(d, "cached_tokens", n_cached);
    }
    char *s = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    free(t);
    free(rt);
    return s;
}

/* A token's text as the client sees it (bytes that are not UTF-8 alone kept as they are). */
static void token_text(const sl_model *m, int32_t id, char *buf, size_t cap)
{
    int n = sl_model_token_piece(m, id, buf, cap - 1);   /* not NUL-terminated */
    buf[n < 0 ? 0 : n] = 0;
}

static cJSON *chat_lp(const sl_model *m, int32_t id, float lp)
{
    char t[256];
    token_text(m, id, t, sizeof t);
    cJSON *e = cJSON_CreateObject(), *b = cJSON_CreateArray();
    cJSON_AddStringToObject(e, "token", t);
    cJSON_AddNumberToObject(e, "logprob", lp);
    for (const unsigned char *q = (const unsigned char *)t; *q; q++) cJSON_AddItemToArray(b, cJSON_CreateNumber(*q));
    cJSON_AddItemToObject(e, "bytes", b);
    return e;
}

cJSON *sl_srv_logprobs_json(const sl_model *m, bool chat, const sl_srv_lp *lps, const size_t *ends, size_t n,
                            size_t base, size_t offset)
{
    cJSON *r = cJSON_CreateObject();
    if (chat) {
        cJSON *content = cJSON_AddArrayToObject(r, "content");
        for (size_t i = 0; i < n; i++) {
            cJSON *e = chat_lp(m, lps[i].id, lps[i].lp), *top = cJSON_AddArrayToObject(e, "top_logprobs");
            for (int32_t k = 0; k < lps[i].n_top; k++) cJSON_AddItemToArray(top, chat_lp(m, lps[i].top[k], lps[i].top_lp[k]));
            cJSON_AddItemToArray(content, e);
        }
        return r;
    }
    cJSON *toks = cJSON_AddArrayToObject(r, "tokens"), *tlp = cJSON_AddArrayToObject(r, "token_logprobs");
    cJSON *top = cJSON_AddArrayToObject(r, "top_logprobs"), *off = cJSON_AddArrayToObject(r, "text_offset");
    char t[256];
    for (size_t i = 0; i < n; i++) {
        token_text(m, lps[i].id, t, sizeof t);
        cJSON_AddItemToArray(toks, cJSON_CreateString(t));
        cJSON_AddItemToArray(tlp, cJSON_CreateNumber(lps[i].lp));
        cJSON *d = cJSON_CreateObject();
        for (int32_t k = 0; k < lps[i].n_top; k++) {
            token_text(m, lps[i].top[k], t, sizeof t);
            if (!cJSON_GetObjectItemCaseSensitive(d, t)) cJSON_AddNumberToObject(d, t, lps[i].top_lp[k]);
        }
        cJSON_AddItemToArray(top, d);
        cJSON_AddItemToArray(off, cJSON_CreateNumber((double)(offset + (i ? ends[i - 1] : base))));
    }
    return r;
}

char *sl_srv_models_json(const char *model, long long created)
{
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "object", "list");
    cJSON *d = cJSON_AddArrayToObject(r, "data"), *m = cJSON_CreateObject();
    cJSON_AddItemToArray(d, m);
    cJSON_AddStringToObject(m, "id", model);
    cJSON_AddStringToObject(m, "object", "model");
    cJSON_AddNumberToObject(m, "created", (double)created);
    cJSON_AddStringToObject(m, "owned_by", "sluice");
    char *s = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return s;
}
