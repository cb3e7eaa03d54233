/* Chat templates: family detection by distinctive substrings of the Jinja
 * source, and rendering that reproduces what each family's published
 * template writes (the Jinja is never executed). */
#include "chat.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../gguf/base/sl_internal.h"

static const struct { const char *name; enum sl_chat_tmpl t; } names[] = {
    {"llama3", SL_CHAT_LLAMA3}, {"chatml", SL_CHAT_CHATML}, {"qwen2", SL_CHAT_QWEN2}, {"qwen", SL_CHAT_QWEN2},
    {"qwen2.5", SL_CHAT_QWEN25}, {"qwen25", SL_CHAT_QWEN25}, {"llama2", SL_CHAT_LLAMA2},
    {"mistral", SL_CHAT_MISTRAL}, {"phi3", SL_CHAT_PHI3}, {"qwen3", SL_CHAT_CHATML},
    {"gemma", SL_CHAT_GEMMA}, {"gemma3", SL_CHAT_GEMMA}, {"harmony", SL_CHAT_HARMONY}, {"gpt-oss", SL_CHAT_HARMONY},
    {"harmony-trim", SL_CHAT_HARMONY_TRIM}, {"gemma4", SL_CHAT_GEMMA4},
};

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

#define QWEN2_SYSTEM "You are a helpful assistant."
#define QWEN25_SYSTEM "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

/* gpt-oss's first template writes "\n\n" after the developer text; a later
 * revision writes it only before a tools section. */
static bool harmony_blank_after_developer(const char *j)
{
    for (const char *p = strstr(j, "{{- developer_message }}"); p; p = strstr(p + 1, "{{- developer_message }}")) {
        const char *q = p + strlen("{{- developer_message }}");
        while (is_space(*q)) q++;
        static const char blank[] = "{{- \"\\n\\n\" }}";
        if (!strncmp(q, blank, sizeof blank - 1)) return true;
    }
    return false;
}

int sl_chat_detect(const char *j, enum sl_chat_tmpl *out)
{
    if (!j || !out) return sl_err_set(SL_EINVAL, "sl_chat_detect: NULL argument");
    *out = SL_CHAT_NONE;
    if (strstr(j, "<|start|>") && strstr(j, "<|channel|>") && strstr(j, "<|message|>"))
        *out = harmony_blank_after_developer(j) ? SL_CHAT_HARMONY : SL_CHAT_HARMONY_TRIM;
    else if (strstr(j, "<|start_header_id|>") && strstr(j, "<|eot_id|>")) *out = SL_CHAT_LLAMA3;
    else if (strstr(j, "<|im_start|>")) {
        if (strstr(j, QWEN25_SYSTEM)) *out = SL_CHAT_QWEN25;
        else if (strstr(j, "<|im_start|>system\\n" QWEN2_SYSTEM "<|im_end|>")) *out = SL_CHAT_QWEN2;
        else *out = SL_CHAT_CHATML;
    } else if (strstr(j, "<|user|>") && strstr(j, "<|end|>") && strstr(j, "<|assistant|>") &&
               !strstr(j, "<|system|>")) {
        /* Phi-3-mini; the later Phi templates (system turn, no newline after
         * the tags) render differently and stay unrecognised */
        *out = SL_CHAT_PHI3;
    } else if (strstr(j, "<|turn>") && strstr(j, "<turn|>")) {
        *out = SL_CHAT_GEMMA4;
    } else if (strstr(j, "<start_of_turn>") && strstr(j, "<end_of_turn>")) {
        *out = SL_CHAT_GEMMA;
    } else if (strstr(j, "[INST]")) {
        *out = strstr(j, "<<SYS>>") ? SL_CHAT_LLAMA2 : SL_CHAT_MISTRAL;
    }
    if (*out == SL_CHAT_NONE)
        return sl_err_set(SL_EUNSUPPORTED, "chat template not recognised (supported: llama3, chatml/qwen, "
                          "llama2, mistral, phi3, gemma, gemma4, harmony; force one with --chat-template NAME)");
    return 0;
}

int sl_chat_from_name(const char *name, enum sl_chat_tmpl *out)
{
    if (!name || !out) return sl_err_set(SL_EINVAL, "sl_chat_from_name: NULL argument");
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(name, names[i].name)) { *out = names[i].t; return 0; }
    return sl_err_set(SL_EUNSUPPORTED, "chat template '%s' unknown (known: llama3, chatml, qwen2, qwen2.5, "
                      "qwen3, llama2, mistral, phi3, gemma, gemma3, gemma4, harmony, gpt-oss, harmony-trim)", name);
}

const char *sl_chat_name(enum sl_chat_tmpl t)
{
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (names[i].t == t) return names[i].name;
    return "none";
}

typedef struct wr { char *out; size_t cap, n; sl_chat_spans *sp; } wr;

static void put(wr *w, const char *s, size_t len)
{
    if (w->n < w->cap) {
        size_t room = w->cap - w->n;
        memcpy(w->out + w->n, s, len < room ? len : room);
    }
    w->n += len;
}

static void puts_(wr *w, const char *s) { if (s) put(w, s, strlen(s)); }

/* Message text: written like any text, and its place noted. */
static void put_msg(wr *w, const char *s, size_t len)
{
    sl_chat_spans *sp = w->sp;
    if (sp && len > 0) {
        if (sp->n < sp->cap) {
            sp->v[2 * sp->n] = w->n;
            sp->v[2 * sp->n + 1] = len;
        }
        sp->n++;
    }
    put(w, s, len);
}

static void puts_msg(wr *w, const char *s) { put_msg(w, s, strlen(s)); }


/* Jinja trim / Python strip */
static void put_trim(wr *w, const char *s)
{
    size_t a = 0, b = strlen(s);
    while (a < b && is_space(s[a])) a++;
    while (b > a && is_space(s[b - 1])) b--;
    put_msg(w, s + a, b - a);
}

/* Gemma 4's strip_thinking of a model turn: of each part (split at
 * <channel|>) the text before its <|channel>, joined, then trimmed. */
static int put_strip_thinking(wr *w, const char *s)
{
    static const char open[] = "<|channel>", close[] = "<channel|>";
    const size_t end = strlen(s);
    char *kept = malloc(end + 1);
    if (!kept) return sl_err_set(SL_ENOMEM, "sl_chat_render: out of memory");
    size_t k = 0;
    for (size_t p = 0; p <= end;) {
        const char *c = strstr(s + p, close);
        const size_t pe = c ? (size_t)(c - s) : end;
        const char *o = strstr(s + p, open);
        const size_t ke = o && (size_t)(o - s) < pe ? (size_t)(o - s) : pe;
        memcpy(kept + k, s + p, ke - p);
        k += ke - p;
        p = pe + sizeof close - 1;   /* past the end when there is no close */
    }
    kept[k] = 0;
    put_trim(w, kept);
    free(kept);
    return 0;
}

/* pre role mid content post; trim: the content Jinja-trimmed. */
static void turn(wr *w, const char *pre, const sl_chat_msg *m, const char *mid, bool trim, const char *post)
{
    puts_(w, pre);
    puts_(w, m->role);
    puts_(w, mid);
    if (trim) put_trim(w, m->content);
    else puts_msg(w, m->content);
    puts_(w, post);
}

static int role_of(const char *r)
{
    if (!r) return -1;
    if (!strcmp(r, "system")) return 0;
    if (!strcmp(r, "user")) return 1;
    if (!strcmp(r, "assistant")) return 2;
    return -1;
}

/* gpt-oss's template: the system message, then the first system message as
 * the developer message, then user turns and past assistant turns as their
 * final channel. */
static int render_harmony(wr *w, const sl_chat_msg *msgs, size_t n, const sl_chat_opts *o, bool blank_after_dev)
{
    const char *effort = o->reasoning_effort ? o->reasoning_effort : "medium";
    if (strcmp(effort, "low") && strcmp(effort, "medium") && strcmp(effort, "high"))
        return sl_err_set(SL_EINVAL, "reasoning effort '%.32s' (expected low, medium or high)", effort);
    char today[16];
    const char *date = o->date;
    if (!date) {
        time_t now = time(NULL);
        struct tm tm;
        if (!localtime_r(&now, &tm) || !strftime(today, sizeof today, "%Y-%m-%d", &tm))
            return sl_err_set(SL_EINVAL, "chat template: cannot read today's date");
        date = today;
    }
    puts_(w, "<|start|>system<|message|>You are ChatGPT, a large language model trained by OpenAI.\n"
             "Knowledge cutoff: 2024-06\nCurrent date: ");
    puts_(w, date);
    puts_(w, "\n\nReasoning: ");
    puts_(w, effort);
    puts_(w, "\n\n# Valid channels: analysis, commentary, final. Channel must be included for every message."
             "<|end|>");
    size_t first = n > 0 && role_of(msgs[0].role) == 0 ? 1 : 0;
    if (first && msgs[0].content[0]) {   /* Jinja: an empty developer message is falsy */
        puts_(w, "<|start|>developer<|message|># Instructions\n\n");
        puts_msg(w, msgs[0].content);
        if (blank_after_dev) puts_(w, "\n\n");
        puts_(w, "<|end|>");
    }
    for (size_t i = first; i < n; i++) {
        int r = role_of(msgs[i].role);
        if (r == 1) {
            puts_(w, "<|start|>user<|message|>");
            puts_msg(w, msgs[i].content);
            puts_(w, "<|end|>");
        } else if (r == 2) {
            puts_(w, "<|start|>assistant<|channel|>final<|message|>");
            puts_msg(w, msgs[i].content);
            puts_(w, i + 1 == n && !o->add_generation_prompt ? "<|return|>" : "<|end|>");
        }
    }
    if (o->add_generation_prompt) puts_(w, "<|start|>assistant");
    return 0;
}

bool sl_chat_has_channels(enum sl_chat_tmpl t)
{
    return t == SL_CHAT_HARMONY || t == SL_CHAT_HARMONY_TRIM;
}

int64_t sl_chat_render(enum sl_chat_tmpl t, const sl_chat_msg *msgs, size_t n,
                       bool add_generation_prompt, const char *bos, const char *eos,
                       char *out, size_t cap)
{
    sl_chat_opts o = { .add_generation_prompt = add_generation_prompt, .bos = bos, .eos = eos };
    return sl_chat_render_opts(t, msgs, n, &o, out, cap);
}

int64_t sl_chat_render_opts(enum sl_chat_tmpl t, const sl_chat_msg *msgs, size_t n,
                            const sl_chat_opts *o, char *out, size_t cap)
{
    if ((!msgs && n) || (!out && cap) || !o || (o->spans && o->spans->cap && !o->spans->v))
        return sl_err_set(SL_EINVAL, "sl_chat_render: bad arguments");
    bool add_generation_prompt = o->add_generation_prompt;
    const char *bos = o->bos, *eos = o->eos;
    for (size_t i = 0; i < n; i++) {
        if (role_of(msgs[i].role) < 0)
            return sl_err_set(SL_EINVAL, "chat message %zu: role '%s' (expected system, user or assistant)",
                              i, msgs[i].role ? msgs[i].role : "(null)");
        if (!msgs[i].content) return sl_err_set(SL_EINVAL, "chat message %zu: no content", i);
    }
    wr w = { out, cap, 0, o->spans };
    if (o->spans) o->spans->n = 0;
    switch (t) {
    case SL_CHAT_HARMONY: case SL_CHAT_HARMONY_TRIM: {
        int rc = render_harmony(&w, msgs, n, o, t == SL_CHAT_HARMONY);
        if (rc) return rc;
        break;
    }
    case SL_CHAT_LLAMA3:
        /* bos + per message: <|start_header_id|>role<|end_header_id|>\n\n trim(content) <|eot_id|> */
        for (size_t i = 0; i < n; i++) {
            if (i == 0) puts_(&w, bos);
            turn(&w, "<|start_header_id|>", &msgs[i], "<|end_header_id|>\n\n", true, "<|eot_id|>");
        }
        if (add_generation_prompt) puts_(&w, "<|start_header_id|>assistant<|end_header_id|>\n\n");
        break;
    case SL_CHAT_CHATML: case SL_CHAT_QWEN2: case SL_CHAT_QWEN25:
        /* <|im_start|>role\ncontent<|im_end|>\n ; Qwen adds a default system turn */
        if (t != SL_CHAT_CHATML && n > 0 && role_of(msgs[0].role) != 0) {
            puts_(&w, "<|im_start|>system\n");
            puts_(&w, t == SL_CHAT_QWEN2 ? QWEN2_SYSTEM : QWEN25_SYSTEM);
            puts_(&w, "<|im_end|>\n");
        }
        for (size_t i = 0; i < n; i++) turn(&w, "<|im_start|>", &msgs[i], "\n", false, "<|im_end|>\n");
        if (add_generation_prompt) puts_(&w, "<|im_start|>assistant\n");
        break;
    case SL_CHAT_LLAMA2: {
        /* first system message folds into the first turn as <<SYS>>...<</SYS>>;
         * user: bos [INST] strip(content) [/INST]; assistant: ' ' strip(content) ' ' eos */
        size_t start = 0;
        const char *sys = NULL;
        if (n > 0 && role_of(msgs[0].role) == 0) { sys = msgs[0].content; start = 1; }
        for (size_t i = start; i < n; i++) {
            int r = role_of(msgs[i].role);
            bool first = i == start;
            if (r == 1) { puts_(&w, bos); puts_(&w, "[INST] "); }
            else if (r == 2) puts_(&w, " ");
            else continue;   /* later system messages: the template ignores them */
            if (first && sys) {
                /* strip() of '<<SYS>>\n' + sys + ...: only the end can be trimmed */
                puts_(&w, "<<SYS>>\n");
                puts_msg(&w, sys);
                puts_(&w, "\n<</SYS>>\n\n");
                const char *c = msgs[i].content;
                size_t b = strlen(c);
                while (b > 0 && is_space(c[b - 1])) b--;
                put_msg(&w, c, b);
            } else {
                put_trim(&w, msgs[i].content);
            }
            if (r == 1) puts_(&w, " [/INST]");
            else { puts_(&w, " "); puts_(&w, eos); }
        }
        break;
    }
    case SL_CHAT_MISTRAL: {
        /* bos, then user: [INST] content [/INST]; assistant: content eos */
        puts_(&w, bos);
        const char *pending_sys = NULL;
        for (size_t i = 0; i < n; i++) {
            int r = role_of(msgs[i].role);
            if (r == 0) { pending_sys = msgs[i].content; continue; }
            if (r == 1) {
                puts_(&w, "[INST] ");
                if (pending_sys) { puts_msg(&w, pending_sys); puts_(&w, "\n\n"); pending_sys = NULL; }
                puts_msg(&w, msgs[i].content);
                puts_(&w, " [/INST]");
            } else {
                puts_msg(&w, msgs[i].content);
                puts_(&w, eos);
            }
        }
        break;
    }
    case SL_CHAT_PHI3:
        /* bos; user: <|user|>\n content <|end|>\n<|assistant|>\n; assistant: content <|end|>\n */
        puts_(&w, bos);
        for (size_t i = 0; i < n; i++) {
            int r = role_of(msgs[i].role);
            if (r == 1) {
                puts_(&w, "<|user|>\n");
                puts_msg(&w, msgs[i].content);
                puts_(&w, "<|end|>\n<|assistant|>\n");
            } else if (r == 2) {
                puts_msg(&w, msgs[i].content);
                puts_(&w, "<|end|>\n");
            }
        }
        break;
    case SL_CHAT_GEMMA: {
        /* Gemma 3: bos; a leading system message becomes a prefix (content +
         * "\n\n", untrimmed) of the first remaining turn; per turn
         * <start_of_turn>role\n trim(content) <end_of_turn>\n, assistant as
         * "model"; generation opens <start_of_turn>model\n */
        puts_(&w, bos);
        size_t first = n > 0 && role_of(msgs[0].role) == 0 ? 1 : 0;
        for (size_t i = first; i < n; i++) {
            puts_(&w, "<start_of_turn>");
            puts_(&w, role_of(msgs[i].role) == 2 ? "model" : msgs[i].role);
            puts_(&w, "\n");
            if (first && i == first) {
                puts_msg(&w, msgs[0].content);
                puts_(&w, "\n\n");
            }
            put_trim(&w, msgs[i].content);
            puts_(&w, "<end_of_turn>\n");
        }
        if (add_generation_prompt) puts_(&w, "<start_of_turn>model\n");
        break;
    }
    case SL_CHAT_GEMMA4: {
        /* Gemma 4 without tools, thinking off: bos; a leading system message
         * as <|turn>system\n trim(content) <turn|>\n; per turn <|turn>role\n
         * content <turn|>\n, user content trimmed, assistant as "model" with
         * its thought channels stripped (a model turn right after another
         * model turn does not open a new one); generation opens
         * <|turn>model\n and the empty thought channel */
        puts_(&w, bos);
        size_t first = 0;
        if (n > 0 && role_of(msgs[0].role) == 0) {
            puts_(&w, "<|turn>system\n");
            put_trim(&w, msgs[0].content);
            puts_(&w, "<turn|>\n");
            first = 1;
        }
        for (size_t i = first; i < n; i++) {
            const bool model = role_of(msgs[i].role) == 2;
            if (!(model && i > first && role_of(msgs[i - 1].role) == 2)) {
                puts_(&w, "<|turn>");
                puts_(&w, model ? "model" : msgs[i].role);
                puts_(&w, "\n");
            }
            if (!model) put_trim(&w, msgs[i].content);
            else if (put_strip_thinking(&w, msgs[i].content)) return SL_ENOMEM;
            puts_(&w, "<turn|>\n");
        }
        if (add_generation_prompt) puts_(&w, "<|turn>model\n<|channel>thought\n<channel|>");
        break;
    }
    default:
        return sl_err_set(SL_EUNSUPPORTED, "sl_chat_render: template %d unknown", (int)t);
    }
    if (w.n < cap) out[w.n] = 0;
    return (int64_t)w.n;
}

int sl_chat_render_alloc(enum sl_chat_tmpl t, const sl_chat_msg *msgs, size_t n, const sl_chat_opts *o,
                         sl_chat_rendered *r)
{
    memset(r, 0, sizeof *r);
    if (!o) return sl_err_set(SL_EINVAL, "sl_chat_render: bad arguments");
    sl_chat_spans sp = { NULL, 0, 0 };
    sl_chat_opts co = *o;
    co.spans = &sp;
    int64_t len = sl_chat_render_opts(t, msgs, n, &co, NULL, 0);
    if (len < 0) return (int)len;
    r->text = malloc((size_t)len + 1);
    sp.cap = sp.n;
    sp.v = malloc((sp.cap ? sp.cap : 1) * 2 * sizeof *sp.v);
    r->spans = sp.v;
    if (!r->text || !sp.v || sl_chat_render_opts(t, msgs, n, &co, r->text, (size_t)len + 1) != len) {
        sl_chat_rendered_free(r);
        return sl_err_set(SL_ENOMEM, "chat render: out of memory");
    }
    r->len = (size_t)len;
    r->n_spans = sp.n;
    return 0;
}

void sl_chat_rendered_free(sl_chat_rendered *r)
{
    free(r->text);
    free(r->spans);
    memset(r, 0, sizeof *r);
}
