/* libFuzzer target for chat templates: family detection from a Jinja source
 * (the whole input) and rendering of messages cut from the input. Byte 0:
 * template and add_generation_prompt; byte 1: the output capacity of a second,
 * truncated render; then messages separated by 0x1e, each a role byte
 * (system / user / assistant / an unknown role) and its content. The render
 * must report one length whatever the capacity and never write past it. */
#include "../engine/chat.h"

#include <stdlib.h>
#include <string.h>

#define MAX_MSGS 32

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = 0;
    enum sl_chat_tmpl t;
    if (sl_chat_detect(text, &t) == 0 && !sl_chat_name(t)) __builtin_trap();
    if (size < 2) { free(text); return 0; }
    t = (enum sl_chat_tmpl)(1 + (data[0] >> 1) % SL_CHAT_GEMMA);
    bool gen = data[0] & 1;
    size_t small = data[1];
    static const char *const roles[] = { "system", "user", "assistant", "tool" };
    sl_chat_msg m[MAX_MSGS];
    size_t n = 0;
    char *p = text + 2, *end = text + size;
    while (p < end && n < MAX_MSGS) {
        char *sep = memchr(p, 0x1e, (size_t)(end - p));
        if (!sep) sep = end;
        *sep = 0;
        m[n].role = roles[(unsigned char)*p % 4];
        m[n].content = p + (p < sep);
        n++;
        p = sep + 1;
    }
    int64_t len = sl_chat_render(t, m, n, gen, "<s>", "</s>", NULL, 0);
    if (len >= 0) {
        char *full = malloc((size_t)len + 1);
        if (sl_chat_render(t, m, n, gen, "<s>", "</s>", full, (size_t)len + 1) != len) __builtin_trap();
        if (strlen(full) != (size_t)len) __builtin_trap();
        char *part = malloc(small ? small : 1);   /* exactly the capacity: ASan sees any write past it */
        if (sl_chat_render(t, m, n, gen, "<s>", "</s>", part, small) != len) __builtin_trap();
        if (small && memcmp(part, full, small - 1 < (size_t)len ? small - 1 : (size_t)len)) __builtin_trap();
        free(part);
        free(full);
    }
    free(text);
    return 0;
}
