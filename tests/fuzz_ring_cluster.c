/* libFuzzer target for the ring planner's cluster JSON (engine/cli/ring/
 * ring_json.c + ring_cluster.c): text -> sl_ring_cluster, then the check the
 * planner makes next. A "profile" a device names is looked for under a
 * directory that does not exist (refused, never read). */
#include "../engine/cli/ring/ring_plan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../gguf/base/sl_status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size ? size : 1);   /* exactly the input: ASan sees a read past it */
    memcpy(text, data, size);
    sl_ring_cluster *c = calloc(1, sizeof *c);
    int rc = sl_ring_cluster_parse(c, text, size, "fuzz", "/nonexistent-fuzz-dir", NULL, 0);
    if (rc == 0) {
        int dev, type;
        volatile bool miss = sl_ring_cluster_missing_rate(c, &dev, &type);
        (void)miss;
    } else if (!sl_last_error()[0]) {
        __builtin_trap();
    }
    free(c);
    free(text);
    return 0;
}
