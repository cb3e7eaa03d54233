/* libFuzzer target for the server's request parser (engine/cli/serve/
 * serve_req.c): a request body -> the validated sl_srv_gen, every field, for
 * completions and for chat rendered with each template. Byte 0 picks the
 * endpoint and template; the rest is the body, NUL-terminated as the HTTP
 * side hands it over. Every refusal is a 4xx with a message; every accepted
 * request is within the limits. */
#include "../engine/cli/serve/serve.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!size) return 0;
    bool chat = data[0] & 1;
    enum sl_chat_tmpl t = (enum sl_chat_tmpl)(1 + (data[0] >> 1) % SL_CHAT_GEMMA);
    char *body = malloc(size);
    memcpy(body, data + 1, size - 1);
    body[size - 1] = 0;
    const sl_srv_limits lim = { .max_tokens = 256, .n_vocab = 512, .max_messages = 16 };
    sl_srv_gen g;
    memset(&g, 0, sizeof g);
    char err[256] = "";
    const char *param = NULL;
    int st = sl_srv_parse(body, size - 1, chat, &lim, t, "<s>", "</s>", &g, err, sizeof err, &param);
    if (st) {
        if (st < 400 || st > 499 || !err[0] || strlen(err) >= sizeof err) __builtin_trap();
    } else {
        if (!g.prompt || g.chat != chat) __builtin_trap();
        if (g.max_tokens < 0 || g.max_tokens > lim.max_tokens) __builtin_trap();
        if (g.n_stop < 0 || g.n_stop > SL_SRV_MAX_STOP) __builtin_trap();
        for (int i = 0; i < g.n_stop; i++)
            if (!g.stop[i] || strlen(g.stop[i]) > SL_SRV_STOP_BYTES) __builtin_trap();
        if (g.logprobs < -1 || g.logprobs > SL_SRV_MAX_TOP) __builtin_trap();
        if (g.sp.top_k < 0 || g.sp.top_k > lim.n_vocab) __builtin_trap();
        volatile size_t n = strlen(g.prompt);
        (void)n;
        sl_srv_gen_free(&g);
    }
    free(body);
    return 0;
}
