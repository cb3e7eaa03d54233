/* llama.cpp's CPU GELU: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in
 * F32 at every F16 value, rounded to F16 and looked up by the F16 bits of
 * the (rounded) input. The table is built once on first use. */
#include <math.h>
#include <pthread.h>

#include "ops_internal.h"

float sl_gelu_f16_entry(sl_f16 h)
{
    const float x = sl_f16_to_f32(h);
    /* the formula's own evaluation order: S*x*(1 + A*x*x) */
    const float g = 0.5f * x * (1.0f + tanhf(0.79788456080286535587989211986876f * x *
                                             (1.0f + 0.044715f * x * x)));
    return sl_f16_to_f32(sl_f32_to_f16(g));
}

static sl_f16 table[1 << 16];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
    for (uint32_t i = 0; i < (1u << 16); i++)
        table[i] = sl_f32_to_f16(sl_gelu_f16_entry((sl_f16)i));
}

const sl_f16 *sl_gelu_table(void)
{
    pthread_once(&once, build);
    return table;
}
