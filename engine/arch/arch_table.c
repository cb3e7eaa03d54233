/* The architecture table: a family is one row here and its own file. */
#include "arch.h"

#include <stdio.h>
#include <string.h>

#define SL_ARCH_EACH(X) X(llama) X(qwen2) X(qwen3) X(phi3) X(gemma3) X(gemma4) X(qwen2moe) X(qwen3moe) X(gptoss) \
    X(glm4moe) X(deepseek2) X(qwen35) X(qwen35moe) X(qwen3next)

#define SL_ARCH_DECL(n) extern const sl_arch sl_arch_##n;
SL_ARCH_EACH(SL_ARCH_DECL)
#define SL_ARCH_ROW(n) &sl_arch_##n,
static const sl_arch *const table[] = { SL_ARCH_EACH(SL_ARCH_ROW) };

const sl_arch *sl_arch_find(const char *name)
{
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (!strcmp(table[i]->name, name)) return table[i];
    return NULL;
}

void sl_arch_names(char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (size_t i = 0; i < sizeof table / sizeof table[0] && o < n; i++) {
        int w = snprintf(buf + o, n - o, "%s%s", i ? ", " : "", table[i]->name);
        if (w < 0) break;
        o += (size_t)w;
    }
}
