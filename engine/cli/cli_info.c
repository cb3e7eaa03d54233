/* `sluice info FILE [--json]`: what is in a GGUF file — header, metadata
 * (arrays summarized), tensor table, per-layer byte extents. Uses gguf/ only. */
#include "cli.h"
#include "../../gguf/gguf.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define TEXT_STR_MAX 64     /* bytes of a string shown in text mode */
#define ARR_HEAD 4          /* array items shown */
#define ARR_ITEM_STR_MAX 24

typedef unsigned long long ull;

/* ---- text mode ---------------------------------------------------------- */

/* Bytes of a UTF-8 sequence starting at s[i] if it is well-formed, else 0. */
static size_t utf8_len(const unsigned char *s, uint64_t n, uint64_t i)
{
    unsigned char c = s[i];
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (!len || (len == 2 && c < 0xc2) || (len == 4 && c > 0xf4) || i + len > n) return 0;
    for (size_t k = 1; k < len; k++)
        if ((s[i + k] & 0xc0) != 0x80) return 0;
    if (len == 3 && ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] >= 0xa0))) return 0;
    if (len == 4 && ((c == 0xf0 && s[i + 1] < 0x90) || (c == 0xf4 && s[i + 1] >= 0x90))) return 0;
    return len;
}

/* Quoted, escaped, cut after max bytes at a character boundary. JSON: valid
 * whatever the bytes (well-formed UTF-8 passes through, anything else, such
 * as control bytes and stray high bytes, becomes a \u escape); text: \x. */
static void quoted(FILE *f, const char *str, uint64_t n, uint64_t max, bool json)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', f);
    uint64_t i = 0;
    while (i < n && i < max) {
        unsigned char c = s[i];
        size_t l = utf8_len(s, n, i);
        if (l > 1) {
            if (i + l > max) break;
            fwrite(s + i, 1, l, f);
            i += l;
            continue;
        }
        if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
        else if (c == '\n') fputs("\\n", f);
        else if (c == '\t') fputs("\\t", f);
        else if (c == '\r' && json) fputs("\\r", f);
        else if (c < 0x20 || c >= 0x7f) fprintf(f, json ? "\\u%04x" : "\\x%02x", c);
        else fputc(c, f);
        i++;
    }
    fputc('"', f);
    if (i < n) fprintf(f, "... (%llu bytes)", (ull)n);
}

static void text_str(FILE *f, const char *str, uint64_t n, uint64_t max) { quoted(f, str, n, max, false); }
static void json_str(FILE *f, const char *str, uint64_t n) { quoted(f, str, n, UINT64_MAX, true); }

/* One scalar, in either format: integers and bools print alike; JSON writes a
 * non-finite float as null and escapes strings its own way (no truncation). */
static void print_scalar(FILE *f, const sl_gguf_value *v, bool json, uint64_t str_max)
{
    uint64_t len;
    uint32_t type = sl_gguf_value_type(v);
    switch (type) {
    case SL_GGUF_U8: case SL_GGUF_U16: case SL_GGUF_U32: case SL_GGUF_U64:
        fprintf(f, "%llu", (ull)sl_gguf_value_u64(v)); break;
    case SL_GGUF_I8: case SL_GGUF_I16: case SL_GGUF_I32: case SL_GGUF_I64:
        fprintf(f, "%lld", (long long)sl_gguf_value_i64(v)); break;
    case SL_GGUF_F32: case SL_GGUF_F64: {
        double d = sl_gguf_value_f64(v);
        if (json && !isfinite(d)) fputs("null", f);
        else fprintf(f, type == SL_GGUF_F32 ? "%.9g" : "%.17g", d);
        break;
    }
    case SL_GGUF_BOOL: fputs(sl_gguf_value_u64(v) ? "true" : "false", f); break;
    case SL_GGUF_STRING: {
        const char *s = sl_gguf_value_str(v, &len);
        if (json) json_str(f, s, len);
        else text_str(f, s, len, str_max);
        break;
    }
    default: if (json) fputs("null", f); break;
    }
}

static void text_value(FILE *f, const sl_gguf_value *v, int depth)
{
    if (sl_gguf_value_type(v) != SL_GGUF_ARRAY) {
        print_scalar(f, v, false, depth ? ARR_ITEM_STR_MAX : TEXT_STR_MAX);
        return;
    }
    uint64_t n = sl_gguf_value_arr_len(v);
    fprintf(f, "array[%s, %llu]", sl_gguf_vtype_name(sl_gguf_value_arr_type(v)), (ull)n);
    if (n == 0) return;
    fputs(depth ? " [" : " = [", f);
    for (uint64_t i = 0; i < n && i < ARR_HEAD; i++) {
        sl_gguf_value tmp;
        const sl_gguf_value *e;
        if (sl_gguf_value_arr_at(v, i, &tmp, &e)) break;
        if (i) fputs(", ", f);
        text_value(f, e, depth + 1);
    }
    fputs(n > ARR_HEAD ? ", ...]" : "]", f);
}

static void shape_str(char *buf, size_t n, const sl_gguf_tensor *t)
{
    size_t w = (size_t)snprintf(buf, n, "[");
    for (uint32_t d = 0; d < t->n_dims && w < n; d++)
        w += (size_t)snprintf(buf + w, n - w, "%s%llu", d ? ", " : "", (ull)t->ne[d]);
    if (w < n) snprintf(buf + w, n - w, "]");
}

static const char *human(char *buf, size_t n, uint64_t b)
{
    static const char *u[] = { "B", "KiB", "MiB", "GiB", "TiB" };
    double x = (double)b;
    int k = 0;
    while (x >= 1024 && k < 4) { x /= 1024; k++; }
    snprintf(buf, n, k ? "%.2f %s" : "%.0f %s", x, u[k]);
    return buf;
}

/* Printable ASCII without spaces or quotes: shown as is. */
static int plain(const char *s)
{
    for (; *s; s++)
        if (*s <= 0x20 || *s >= 0x7f || *s == '"') return 0;
    return 1;
}

/* Bytes of all the model's files (a split model's span has gaps). */
static uint64_t files_bytes(const sl_gguf *g)
{
    uint64_t b = 0;
    for (uint32_t i = 0; i < sl_gguf_n_shards(g); i++) b += sl_gguf_shard_at(g, i)->file_size;
    return b;
}

static void print_text(FILE *f, const sl_gguf *g)
{
    char h[32];
    uint32_t ns = sl_gguf_n_shards(g);
    fprintf(f, "file:         %s\n", sl_gguf_name(g));
    fprintf(f, "version:      %u\n", sl_gguf_version(g));
    fprintf(f, "size:         %llu bytes (%s)%s\n", (ull)files_bytes(g), human(h, sizeof h, files_bytes(g)),
            ns > 1 ? " in all files" : "");
    fprintf(f, "alignment:    %llu\n", (ull)sl_gguf_alignment(g));
    fprintf(f, "data offset:  %llu (0x%llx)\n", (ull)sl_gguf_data_offset(g), (ull)sl_gguf_data_offset(g));
    if (ns > 1) fprintf(f, "\nsplit: %u files\n", ns);
    for (uint32_t i = 0; ns > 1 && i < ns; i++) {
        const sl_gguf_shard *sh = sl_gguf_shard_at(g, i);
        fprintf(f, "  %u  %s: %lld tensors, %llu bytes (%s)\n", i + 1, sh->path, (long long)sh->n_tensors,
                (ull)sh->file_size, human(h, sizeof h, sh->file_size));
    }
    fprintf(f, "\nmetadata: %lld keys\n", (long long)sl_gguf_n_kv(g));
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) {
        const sl_gguf_value *v = sl_gguf_kv_value(g, i);
        const char *key = sl_gguf_kv_key(g, i);
        fputs("  ", f);
        if (plain(key)) fputs(key, f);
        else text_str(f, key, strlen(key), 200);
        if (sl_gguf_value_type(v) == SL_GGUF_ARRAY) fputs(": ", f);
        else fprintf(f, ": %s = ", sl_gguf_vtype_name(sl_gguf_value_type(v)));
        text_value(f, v, 0);
        fputc('\n', f);
    }
    int64_t nt = sl_gguf_n_tensors(g);
    fprintf(f, "\ntensors: %lld\n", (long long)nt);
    if (nt) fprintf(f, "  %5s  %-32s %-5s %-22s %12s %12s\n", "#", "name", "type", "shape", "file offset", "bytes");
    for (int64_t i = 0; i < nt; i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        char shape[96];
        shape_str(shape, sizeof shape, t);
        fprintf(f, "  %5lld  ", (long long)i);
        if (plain(t->name)) fprintf(f, "%-32s", t->name);
        else text_str(f, t->name, strlen(t->name), 200);   /* no raw control bytes on a tty */
        fprintf(f, " %-5s %-22s %#12llx %12llu\n", sl_gguf_type_name(t->type), shape,
                (ull)t->file_offset, (ull)t->nbytes);
    }
    int32_t nl = sl_gguf_n_layers(g);
    sl_gguf_extent e;
    if (nt) {
        fprintf(f, "\nlayers: %d\n", nl);
        fprintf(f, "  %-10s %7s %14s %14s %14s %12s\n", "layer", "tensors", "begin", "end", "bytes", "");
        for (int32_t l = 0; l < nl; l++) {
            if (sl_gguf_layer_extent(g, l, &e)) continue;
            char name[24];
            snprintf(name, sizeof name, "blk.%d", l);
            fprintf(f, "  %-10s %7u %#14llx %#14llx %14llu %12s\n", name, e.n_tensors, (ull)e.begin,
                    (ull)e.end, (ull)e.bytes, human(h, sizeof h, e.bytes));
        }
        sl_gguf_nonlayer_extent(g, &e);
        fprintf(f, "  %-10s %7u %#14llx %#14llx %14llu %12s\n", "non-layer", e.n_tensors, (ull)e.begin,
                (ull)e.end, (ull)e.bytes, human(h, sizeof h, e.bytes));
    }
    fprintf(f, "\ntotal tensor bytes: %llu (%s)\n", (ull)sl_gguf_total_tensor_bytes(g),
            human(h, sizeof h, sl_gguf_total_tensor_bytes(g)));
}

/* ---- JSON mode ---------------------------------------------------------- */

static void json_value(FILE *f, const sl_gguf_value *v, int top)
{
    if (sl_gguf_value_type(v) != SL_GGUF_ARRAY) {
        print_scalar(f, v, true, 0);
        return;
    }
    uint64_t n = sl_gguf_value_arr_len(v);
    fprintf(f, "%s\"elem_type\": \"%s\", \"length\": %llu, \"head\": [", top ? "" : "{",
            sl_gguf_vtype_name(sl_gguf_value_arr_type(v)), (ull)n);
    for (uint64_t i = 0; i < n && i < 8; i++) {
        sl_gguf_value tmp;
        const sl_gguf_value *e;
        if (sl_gguf_value_arr_at(v, i, &tmp, &e)) break;
        if (i) fputs(", ", f);
        json_value(f, e, 0);
    }
    fputs(top ? "]" : "]}", f);
}

static void json_extent(FILE *f, const sl_gguf_extent *e)
{
    fprintf(f, "\"tensors\": %u, \"begin\": %llu, \"end\": %llu, \"bytes\": %llu", e->n_tensors,
            (ull)e->begin, (ull)e->end, (ull)e->bytes);
}

static void print_json(FILE *f, const sl_gguf *g)
{
    fputs("{\n  \"file\": ", f);
    json_str(f, sl_gguf_name(g), strlen(sl_gguf_name(g)));
    fprintf(f, ",\n  \"version\": %u,\n  \"file_size\": %llu,\n  \"alignment\": %llu,\n"
               "  \"data_offset\": %llu,\n",
            sl_gguf_version(g), (ull)files_bytes(g), (ull)sl_gguf_alignment(g), (ull)sl_gguf_data_offset(g));
    for (uint32_t i = 0; sl_gguf_n_shards(g) > 1 && i < sl_gguf_n_shards(g); i++) {
        const sl_gguf_shard *sh = sl_gguf_shard_at(g, i);
        fputs(i ? ",\n    {\"file\": " : "  \"shards\": [\n    {\"file\": ", f);
        json_str(f, sh->path, strlen(sh->path));
        fprintf(f, ", \"tensors\": %lld, \"bytes\": %llu}%s", (long long)sh->n_tensors, (ull)sh->file_size,
                i + 1 == sl_gguf_n_shards(g) ? "\n  ],\n" : "");
    }
    fputs("  \"metadata\": [", f);
    for (int64_t i = 0; i < sl_gguf_n_kv(g); i++) {
        const sl_gguf_value *v = sl_gguf_kv_value(g, i);
        fputs(i ? ",\n    {\"key\": " : "\n    {\"key\": ", f);
        json_str(f, sl_gguf_kv_key(g, i), strlen(sl_gguf_kv_key(g, i)));
        fprintf(f, ", \"type\": \"%s\", ", sl_gguf_vtype_name(sl_gguf_value_type(v)));
        if (sl_gguf_value_type(v) != SL_GGUF_ARRAY) fputs("\"value\": ", f);
        json_value(f, v, 1);
        fputc('}', f);
    }
    fputs("\n  ],\n  \"tensors\": [", f);
    for (int64_t i = 0; i < sl_gguf_n_tensors(g); i++) {
        const sl_gguf_tensor *t = sl_gguf_tensor_at(g, i);
        fputs(i ? ",\n    {\"name\": " : "\n    {\"name\": ", f);
        json_str(f, t->name, strlen(t->name));
        fprintf(f, ", \"type\": \"%s\", \"type_id\": %u, \"shape\": [", sl_gguf_type_name(t->type), t->type);
        for (uint32_t d = 0; d < t->n_dims; d++) fprintf(f, "%s%llu", d ? ", " : "", (ull)t->ne[d]);
        fprintf(f, "], \"offset\": %llu, \"file_offset\": %llu, \"bytes\": %llu, \"layer\": %d}",
                (ull)t->offset, (ull)t->file_offset, (ull)t->nbytes, t->layer);
    }
    fputs("\n  ],\n  \"layers\": [", f);
    sl_gguf_extent e;
    for (int32_t l = 0; l < sl_gguf_n_layers(g); l++) {
        if (sl_gguf_layer_extent(g, l, &e)) continue;
        fprintf(f, "%s\n    {\"layer\": %d, ", l ? "," : "", l);
        json_extent(f, &e);
        fputc('}', f);
    }
    sl_gguf_nonlayer_extent(g, &e);
    fputs("\n  ],\n  \"nonlayer\": {", f);
    json_extent(f, &e);
    fprintf(f, "},\n  \"total_tensor_bytes\": %llu\n}\n", (ull)sl_gguf_total_tensor_bytes(g));
}

static void usage(FILE *f)
{
    fputs("usage: sluice info FILE [--json]    (or -m/--model FILE, as the other commands)\n"
          "  Prints a GGUF file's header, metadata (arrays summarized), tensor table,\n"
          "  per-layer byte extents and total. --json: the same as one JSON object.\n", f);
}

static int info_main(int argc, char **argv)
{
    const char *path = NULL;
    int json = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) { usage(stdout); return 0; }
        else {
            const char *file = argv[i];   /* a bare FILE, or -m/--model FILE as the other commands */
            if (!strcmp(file, "-m") || !strcmp(file, "--model")) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "sluice info: %s needs a FILE\n", file);
                    return 2;
                }
                file = argv[++i];
            } else if (file[0] == '-' && file[1]) {
                fprintf(stderr, "sluice info: unknown option '%s'\n", file);
                usage(stderr);
                return 2;
            }
            if (path) {
                fprintf(stderr, "sluice info: one FILE only\n");
                return 2;
            }
            path = file;
        }
    }
    if (!path) { usage(stderr); return 2; }
    sl_gguf *g;
    int st = sl_gguf_open_path(&g, path);
    if (st) {
        fprintf(stderr, "sluice info: %s (%s)\n", sl_gguf_errmsg(NULL), sl_strerror(st));
        return 1;
    }
    if (json) print_json(stdout, g);
    else print_text(stdout, g);
    sl_gguf_close(g);
    if (fflush(stdout) || ferror(stdout)) {
        fprintf(stderr, "sluice info: write error on stdout\n");
        return 1;
    }
    return 0;
}

SL_CLI_COMMAND(sl_cli_info, "info", "show a GGUF file's metadata, tensors and layer sizes", info_main)
