/* A small strict JSON reader for cluster.json and profile.json: the whole
 * document into one flat node array (no recursion on the caller's side).
 * Hostile input is bounded: size, depth and node count are limited and every
 * error names the byte offset. */
#ifndef SL_RING_JSON_H
#define SL_RING_JSON_H

#include <stddef.h>

enum sl_json_kind { SL_JSON_NULL, SL_JSON_BOOL, SL_JSON_NUM, SL_JSON_STR, SL_JSON_ARR, SL_JSON_OBJ };

#define SL_JSON_MAX_BYTES (1u << 20)
#define SL_JSON_MAX_DEPTH 16
#define SL_JSON_MAX_NODES 20000

typedef struct sl_json_node {
    int kind;
    int key;        /* offset of this member's key in the string pool, -1 outside objects */
    int str;        /* SL_JSON_STR: offset in the string pool */
    int first;      /* ARR/OBJ: first child index, -1 if empty */
    int next;       /* next sibling, -1 at the end */
    int n;          /* ARR/OBJ: number of children */
    double num;     /* NUM; BOOL as 0/1 */
} sl_json_node;

typedef struct sl_json {
    sl_json_node *nodes;
    int n_nodes;
    char *pool;     /* NUL-terminated keys and strings */
} sl_json;

/* Parses text[0..len). 0 or SL_EFORMAT/SL_ENOMEM/SL_ERANGE with "what: json: ... at byte N". */
int sl_json_parse(sl_json *j, const char *text, size_t len, const char *what);
void sl_json_free(sl_json *j);

/* Member `key` of object node `obj` (index), or -1. */
int sl_json_get(const sl_json *j, int obj, const char *key);
const char *sl_json_key(const sl_json *j, int node);
const char *sl_json_str(const sl_json *j, int node);

#endif
