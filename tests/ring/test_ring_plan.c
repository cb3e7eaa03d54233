/* Piped-ring assignment: the GLPK ILPs against the exhaustive search on
 * random small clusters, every device's budget held, a hand-computed case,
 * window layout, profile files, and hostile cluster.json rejected with a
 * message naming the field. SL_HOST_ONLY (GLPK is a host library). */
#include "../sl_test.h"
#include "../../engine/cli/ring/ring_plan.h"
#include "../../engine/sluice.h"
#include "../../gguf/gguf.h"
#include "../../gguf/gguf_type.h"
#include "../../gguf/base/sl_status.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SL_BUILD_DIR
#define SL_BUILD_DIR "build"
#endif

static uint64_t rng_state;
static double rnd(void)   /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) / 9007199254740992.0;
}

/* A random cluster of n devices for an L-layer model: budgets from "cannot hold a
 * window" to "holds everything", so resident, streaming and infeasible all occur. */
static void random_cluster(sl_ring_cluster *c, int n, int L)
{
    memset(c, 0, sizeof *c);
    c->n_dev = n;
    sl_ring_model *m = &c->model;
    m->n_layers = L;
    m->n_embd = 1024 + (int)(rnd() * 7168);
    m->n_ctx = 512;
    m->ctx = 256;
    m->layer_bytes[SL_GGML_Q4_K] = 100e6 + rnd() * 300e6;
    m->layer_bytes[SL_GGML_Q6_K] = rnd() * 60e6;
    m->head_bytes[SL_GGML_Q6_K] = rnd() * 400e6;
    m->kv_bytes_per_token_layer = rnd() * 8192;
    double total = L * (m->layer_bytes[SL_GGML_Q4_K] + m->layer_bytes[SL_GGML_Q6_K]);
    c->link_latency_s = rnd() * 5e-3;
    c->link_bps = 5e6 + rnd() * 1e9;
    for (int d = 0; d < n; d++) {
        sl_ring_device *v = &c->dev[d];
        snprintf(v->name, sizeof v->name, "r%d", d);
        v->budget = rnd() * total * 1.2;
        v->reserve = rnd() * 200e6;
        v->disk_bps = 0.3e9 + rnd() * 3e9;
        v->mem_bps = 2e9 + rnd() * 50e9;
        v->matvec_bps[SL_GGML_Q4_K] = 1e9 + rnd() * 40e9;
        v->matvec_bps[SL_GGML_Q6_K] = 1e9 + rnd() * 40e9;
    }
}

static void check_plan_respects_budgets(const sl_ring_cluster *c, const sl_ring_plan *p)
{
    int sum = 0;
    for (int m = 0; m < c->n_dev; m++) { cr_assert_geq(p->w[m], 1); sum += p->w[m]; }
    cr_assert_eq(sum * p->k, c->model.n_layers);
    sl_ring_cost cost;
    cr_assert_eq(sl_ring_cost_eval(c, p->k, p->w, &cost), 0, "%s", sl_last_error());
    for (int m = 0; m < c->n_dev; m++)
        cr_assert_leq(cost.dev[m].mem_bytes, c->dev[m].budget * (1 + 1e-12), "device %d holds %.0f of %.0f",
                      m, cost.dev[m].mem_bytes, c->dev[m].budget);
    cr_assert_float_eq(cost.t_s, p->t_s, 1e-12 + 1e-12 * p->t_s);
}

Test(ring_plan, ilp_equals_brute_force, .timeout = 120)
{
    static const int Ls[] = { 4, 6, 8, 12, 16 };
    int solved = 0, infeasible = 0, streaming = 0, multi_round = 0;
    rng_state = 0x5eed;
    for (int it = 0; it < 300; it++) {
        int n = 1 + it % 4, L = Ls[(it / 4) % 5];
        if (L < n) continue;
        sl_ring_cluster c;
        random_cluster(&c, n, L);
        sl_ring_plan pb, pi;
        int rb = sl_ring_plan_brute(&c, &pb);
        int ri = sl_ring_plan_solve(&c, &pi);
        cr_assert_eq(ri, rb, "instance %d: ilp %d (%s), brute %d", it, ri, sl_last_error(), rb);
        if (rb) { infeasible++; continue; }
        solved++;
        cr_assert_float_eq(pi.t_s, pb.t_s, 1e-9 * pb.t_s, "instance %d: ilp %.9g s, brute %.9g s (k %d vs %d)",
                           it, pi.t_s, pb.t_s, pi.k, pb.k);
        /* every k the search examined: the same verdict and optimum per round count */
        cr_assert_eq(pi.n_tried, pb.n_tried);
        for (int t = 0; t < pi.n_tried; t++) {
            cr_assert_eq(pi.tried_k[t], pb.tried_k[t]);
            cr_assert_eq(pi.tried_t[t] < 0, pb.tried_t[t] < 0, "instance %d k %d", it, pi.tried_k[t]);
            if (pb.tried_t[t] >= 0) cr_assert_float_eq(pi.tried_t[t], pb.tried_t[t], 1e-9 * pb.tried_t[t]);
        }
        check_plan_respects_budgets(&c, &pi);
        check_plan_respects_budgets(&c, &pb);
        sl_ring_cost cost;
        sl_ring_cost_eval(&c, pi.k, pi.w, &cost);
        for (int m = 0; m < n; m++) streaming += cost.dev[m].streams;
        multi_round += pi.k > 1;
    }
    /* the instances cover every branch of the model */
    cr_assert_gt(solved, 100);
    cr_assert_gt(infeasible, 5);
    cr_assert_gt(streaming, 20);
    cr_assert_gt(multi_round, 5);
}

/* Two equal devices, everything resident: one round (more rounds only add
 * hops), and T = all layers' compute + 2 hops, by hand, whatever the split
 * (a decode token visits every layer in turn). */
Test(ring_plan, hand_computed)
{
    sl_ring_cluster c;
    memset(&c, 0, sizeof c);
    c.n_dev = 2;
    c.model.n_layers = 8;
    c.model.n_embd = 1000;
    c.model.n_ctx = 100;
    c.model.ctx = 0;
    c.model.layer_bytes[SL_GGML_Q4_K] = 1e8;          /* 0.1 GB per layer */
    c.link_latency_s = 1e-3;
    c.link_bps = 4e6;                                 /* 4000 bytes: +1 ms per hop */
    for (int d = 0; d < 2; d++) {
        c.dev[d].budget = 1e9;
        c.dev[d].disk_bps = 1e9;
        c.dev[d].mem_bps = 1e10;
        c.dev[d].matvec_bps[SL_GGML_Q4_K] = 1e10;     /* 10 ms per layer */
    }
    sl_ring_plan p;
    cr_assert_eq(sl_ring_plan_solve(&c, &p), 0, "%s", sl_last_error());
    cr_assert_eq(p.k, 1);
    cr_assert_eq(p.w[0] + p.w[1], 8);
    cr_assert_float_eq(p.t_s, 8 * 10e-3 + 2 * 2e-3, 1e-12);
    /* device 1 can hold 2 layers only (0.25 GB): it streams; with the window buffer
     * counted it must take small windows, and the solver keeps it within 0.25 GB */
    c.dev[1].budget = 0.25e9;
    cr_assert_eq(sl_ring_plan_solve(&c, &p), 0, "%s", sl_last_error());
    check_plan_respects_budgets(&c, &p);
    sl_ring_plan pb;
    cr_assert_eq(sl_ring_plan_brute(&c, &pb), 0);
    cr_assert_float_eq(p.t_s, pb.t_s, 1e-12);
    /* a budget that cannot hold one layer: device 1 cannot take part; said so */
    c.dev[1].budget = 0.05e9;
    cr_assert_eq(sl_ring_plan_solve(&c, &p), SL_ERANGE);
    cr_assert_not_null(strstr(sl_last_error(), "budget"), "%s", sl_last_error());
    int w[2] = { 4, 4 };
    sl_ring_cost cost;
    cr_assert_eq(sl_ring_cost_eval(&c, 1, w, &cost), SL_ERANGE);
    cr_assert_not_null(strstr(sl_last_error(), "device 1"), "%s", sl_last_error());
}

/* A gathered cluster (`run --ring auto`) skips the file parser: a device whose
 * profile lacks a type the model uses is refused by name, before GLPK (which
 * would stop on the infinite cost: glpk_error_returned). */
Test(ring_plan, missing_rate_refused)
{
    sl_ring_cluster c;
    random_cluster(&c, 3, 12);
    c.model.layer_bytes[SL_GGML_Q4_0] = 50e6;
    for (int d = 0; d < 3; d++) c.dev[d].matvec_bps[SL_GGML_Q4_0] = d == 1 ? 0 : 5e9;
    sl_ring_plan p;
    cr_assert_eq(sl_ring_plan_solve(&c, &p), SL_EINVAL);
    cr_assert_not_null(strstr(sl_last_error(), "device 1 (r1) has no matvec rate for q4_0"), "%s", sl_last_error());
    int m, t;
    cr_assert(sl_ring_cluster_missing_rate(&c, &m, &t));
    cr_assert_eq(m, 1);
    cr_assert_eq(t, SL_GGML_Q4_0);
    c.dev[1].matvec_bps[SL_GGML_Q4_0] = 5e9;
    cr_assert_not(sl_ring_cluster_missing_rate(&c, &m, &t));
    int rc = sl_ring_plan_solve(&c, &p);
    cr_assert(rc == 0 || rc == SL_ERANGE, "%d %s", rc, sl_last_error());
}

/* Figures no file parser passes (a zero memory rate, a NaN budget, an
 * infinite latency) make GLPK stop on an internal error, after which it
 * calls abort(). The planner returns it as an error carrying GLPK's text,
 * prints nothing, and plans again afterwards. */
Test(ring_plan, glpk_error_returned)
{
    sl_ring_cluster c;
    sl_ring_plan p;
    for (int v = 0; v < 3; v++) {
        random_cluster(&c, 3, 12);
        for (int d = 0; d < 3; d++) c.dev[d].budget = 1e12;
        if (v == 0) c.dev[1].mem_bps = 0;
        else if (v == 1) c.dev[1].budget = NAN;
        else c.link_latency_s = INFINITY;
        int rc = sl_ring_plan_solve(&c, &p);
        cr_assert_eq(rc, SL_ERANGE, "variant %d: %d %s", v, rc, sl_last_error());
        cr_assert_not_null(strstr(sl_last_error(), "GLPK stopped on an internal error ("), "%s", sl_last_error());
        cr_assert_not_null(strstr(sl_last_error(), "Error detected in file"), "GLPK's own text: %s", sl_last_error());
        random_cluster(&c, 3, 12);
        for (int d = 0; d < 3; d++) c.dev[d].budget = 1e12;     /* everything fits */
        cr_assert_eq(sl_ring_plan_solve(&c, &p), 0, "after variant %d: %s", v, sl_last_error());
        cr_assert_gt(p.k, 0);
    }
}

Test(ring_plan, windows_layout)
{
    sl_ring_plan p;
    memset(&p, 0, sizeof p);
    p.n_dev = 3;
    p.k = 2;
    p.w[0] = 1; p.w[1] = 3; p.w[2] = 2;
    int f;
    sl_ring_plan_window(&p, 0, 0, &f); cr_assert_eq(f, 0);
    sl_ring_plan_window(&p, 1, 0, &f); cr_assert_eq(f, 1);
    sl_ring_plan_window(&p, 2, 0, &f); cr_assert_eq(f, 4);
    sl_ring_plan_window(&p, 0, 1, &f); cr_assert_eq(f, 6);
    sl_ring_plan_window(&p, 2, 1, &f); cr_assert_eq(f, 10);
}

#define MODEL_OK "\"model\": {\"n_layers\": 8, \"n_embd\": 64, \"layer_bytes\": {\"q4_K\": 1e6}}"
#define LINK_OK "\"link\": {\"latency_s\": 0.001, \"bytes_per_s\": 1e8}"
#define DEV_OK "{\"mem_budget_bytes\": 1e9, \"disk_bytes_per_s\": 1e9, \"mem_bytes_per_s\": 1e10, \"matvec\": {\"q4_K\": 1e10}}"

Test(ring_plan, cluster_json_accepted)
{
    const char *txt = "{" MODEL_OK ", " LINK_OK ", \"_comment\": \"x\", \"devices\": [" DEV_OK ", " DEV_OK "]}";
    sl_ring_cluster c;
    cr_assert_eq(sl_ring_cluster_parse(&c, txt, strlen(txt), "t.json", NULL, NULL, 0), 0, "%s", sl_last_error());
    cr_assert_eq(c.n_dev, 2);
    cr_assert_eq(c.model.n_layers, 8);
    cr_assert_float_eq(c.model.layer_bytes[SL_GGML_Q4_K], 1e6, 1e-9);
    cr_assert_float_eq(c.dev[1].matvec_bps[SL_GGML_Q4_K], 1e10, 1);
    cr_assert_str_eq(c.dev[1].name, "D2");
    cr_assert_eq(c.model.ctx, c.model.n_ctx / 2);
}

/* Found by fuzz_ring_cluster: a model integer that is not a number, or out
 * of range, was cast to int before the refusal (an uninitialized or huge
 * double: undefined behaviour, caught by UBSan). Each is refused and names
 * the field; the model keeps no half-parsed value. */
Test(ring_plan, fuzz_ring_cluster_model_int_refused_before_cast)
{
    static const char *const bad[] = {
        "{\"model\": {\"n_layers\": \"eight\", \"n_embd\": 64, \"layer_bytes\": {\"q4_K\": 1e6}}, \"devices\": [" DEV_OK "]}",
        "{\"model\": {\"n_layers\": 8, \"n_embd\": 1e300, \"layer_bytes\": {\"q4_K\": 1e6}}, \"devices\": [" DEV_OK "]}",
        "{\"model\": {\"n_layers\": 8, \"n_embd\": 64, \"n_ctx\": -1e200, \"layer_bytes\": {\"q4_K\": 1e6}}, \"devices\": [" DEV_OK "]}",
        "{\"model\": {\"n_layers\": 8, \"n_embd\": 64, \"ctx\": [1], \"layer_bytes\": {\"q4_K\": 1e6}}, \"devices\": [" DEV_OK "]}",
    };
    static const char *const field[] = { "model.n_layers", "model.n_embd", "model.n_ctx", "model.ctx" };
    for (int i = 0; i < 4; i++) {
        sl_ring_cluster c;
        cr_assert_eq(sl_ring_cluster_parse(&c, bad[i], strlen(bad[i]), "t.json", NULL, NULL, 0), SL_EFORMAT, "%s", bad[i]);
        cr_assert_not_null(strstr(sl_last_error(), field[i]), "%s", sl_last_error());
    }
}

/* A device's numbers from a `sluice profile` file, relative to the cluster file. */
Test(ring_plan, profile_file)
{
    char dir[128], path[256];
    snprintf(dir, sizeof dir, "/tmp/sl_test_ring_%d", (int)getpid());
    cr_assert_eq(mkdir(dir, 0700), 0);
    snprintf(path, sizeof path, "%s/p.json", dir);
    FILE *f = fopen(path, "w");
    fputs("{\"version\": 1, \"host\": \"h\", \"disk_bytes_per_s\": 2.5e9, \"mem_bytes_per_s\": 2e10,\n"
          " \"disk_sweep\": [{\"req_bytes\": 1}], \"matvec\": {\"q4_K\": 3e10, \"q8_0\": 2e10}}", f);
    fclose(f);
    const char *txt = "{" MODEL_OK ", \"devices\": [{\"mem_budget_bytes\": 1e9, \"profile\": \"p.json\", "
                      "\"disk_bytes_per_s\": 1e9}]}";
    sl_ring_cluster c;
    cr_assert_eq(sl_ring_cluster_parse(&c, txt, strlen(txt), "t.json", dir, NULL, 0), 0, "%s", sl_last_error());
    cr_assert_float_eq(c.dev[0].disk_bps, 1e9, 1);          /* the cluster's own number wins */
    cr_assert_float_eq(c.dev[0].mem_bps, 2e10, 1);
    cr_assert_float_eq(c.dev[0].matvec_bps[SL_GGML_Q4_K], 3e10, 1);
    unlink(path);
    cr_assert_eq(sl_ring_cluster_parse(&c, txt, strlen(txt), "t.json", dir, NULL, 0), SL_EIO);
    cr_assert_not_null(strstr(sl_last_error(), "devices[0]"), "%s", sl_last_error());
    cr_assert_not_null(strstr(sl_last_error(), "p.json"), "%s", sl_last_error());
    rmdir(dir);
}

Test(ring_plan, hostile_cluster_json)
{
    static char deep[200], many[20000];
    memset(deep, '[', 100);
    deep[100] = 0;
    int o = snprintf(many, sizeof many, "{" MODEL_OK ", " LINK_OK ", \"devices\": [");
    for (int i = 0; i < 65; i++) o += snprintf(many + o, sizeof many - (size_t)o, "%s" DEV_OK, i ? "," : "");
    snprintf(many + o, sizeof many - (size_t)o, "]}");
    static const struct { const char *txt; int rc; const char *msg; } cases[] = {
        { "", SL_EFORMAT, "expected a value at byte 0" },
        { "{\"model\": }", SL_EFORMAT, "at byte 10" },
        { "[1, 2]", SL_EFORMAT, "top level: expected an object" },
        { "{" MODEL_OK ", \"devices\": [" DEV_OK "]} x", SL_EFORMAT, "text after the value" },
        { "{\"modle\": 1}", SL_EFORMAT, "modle: unknown key" },
        { "{" MODEL_OK "}", SL_EFORMAT, "devices: missing" },
        { "{" MODEL_OK ", \"devices\": []}", SL_EFORMAT, "1..64 devices" },
        { "{" MODEL_OK ", \"devices\": {}}", SL_EFORMAT, "devices: expected an array" },
        { "{" MODEL_OK ", \"devices\": [" DEV_OK "," DEV_OK "]}", SL_EFORMAT, "link: bytes_per_s is needed" },
        { "{\"model\": {\"n_layers\": 8.5, \"n_embd\": 64, \"layer_bytes\": {\"q4_K\": 1}}, \"devices\": [" DEV_OK "]}",
          SL_EFORMAT, "model.n_layers: not an integer" },
        { "{\"model\": {\"n_layers\": 1e9, \"n_embd\": 64}, \"devices\": [" DEV_OK "]}", SL_EFORMAT,
          "model.n_layers: 1e+09 is outside" },
        { "{\"model\": {\"n_layers\": 8, \"n_embd\": 64, \"layer_bytes\": {\"q9_X\": 1}}, \"devices\": [" DEV_OK "]}",
          SL_EFORMAT, "model.layer_bytes.q9_X: unknown ggml type" },
        { "{\"model\": {\"n_layers\": 8, \"n_embd\": 64, \"layer_bytes\": {\"q4_K\": -5}}, \"devices\": [" DEV_OK "]}",
          SL_EFORMAT, "model.layer_bytes.q4_K: -5 is outside" },
        { "{\"model\": {\"n_layers\": 8, \"n_embd\": 64, \"layer_bytes\": {\"q4_K\": 1e400}}, \"devices\": [" DEV_OK "]}",
          SL_EFORMAT, "model.layer_bytes.q4_K: inf is outside" },
        { "{\"model\": {\"n_layers\": 8, \"n_embd\": 64, \"layer_bytes\": {}}, \"devices\": [" DEV_OK "]}",
          SL_EFORMAT, "a layer has no weights" },
        { "{\"model\": {\"n_layers\": 8, \"n_embd\": 64, \"layer_bytes\": {\"q8_0\": 1e6}}, \"devices\": [" DEV_OK "]}",
          SL_EFORMAT, "devices[0] (D1).matvec: no rate for q8_0" },
        { "{" MODEL_OK ", \"devices\": [{\"mem_budget_bytes\": -1, \"disk_bytes_per_s\": 1e9}]}", SL_EFORMAT,
          "devices[0].mem_budget_bytes: -1 is outside" },
        { "{" MODEL_OK ", \"devices\": [{\"disk_bytes_per_s\": 1e9, \"mem_bytes_per_s\": 1e9}]}", SL_EFORMAT,
          "devices[0]: mem_budget_bytes is missing" },
        { "{" MODEL_OK ", \"devices\": [{\"mem_budget_bytes\": 1e9, \"disk_bytes_per_s\": 0}]}", SL_EFORMAT,
          "devices[0].disk_bytes_per_s: 0 is outside" },
        { "{" MODEL_OK ", \"devices\": [{\"mem_budget_bytes\": \"8G\"}]}", SL_EFORMAT,
          "devices[0].mem_budget_bytes: expected a number" },
        { "{" MODEL_OK ", \"devices\": [{\"name\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}]}",
          SL_EFORMAT, "devices[0].name: longer than 63" },
        { "{" MODEL_OK ", \"devices\": [{\"mem_budget_bytes\": 1e9, \"disk\": 1}]}", SL_EFORMAT,
          "devices[0].disk: unknown key" },
        { "{" MODEL_OK ", \"devices\": [{\"mem_budget_bytes\": 1e9, \"profile\": 7}]}", SL_EFORMAT,
          "devices[0].profile: expected a file name" },
        { "{\"model\": {\"n_layers\": 1, \"n_embd\": 64, \"layer_bytes\": {\"q4_K\": 1}}, " LINK_OK
          ", \"devices\": [" DEV_OK "," DEV_OK "]}", SL_EFORMAT, "more devices than layers" },
        { "{\"a\": \"\\u0000\"}", SL_EFORMAT, "NUL in string" },
        { "{\"a\": \"x\x01\"}", SL_EFORMAT, "control character" },
        { "{\"a\": 01}", SL_EFORMAT, "bad value" },
        { "{\"a\": 1.}", SL_EFORMAT, "bad number" },
        { "{\"a\": tru}", SL_EFORMAT, "bad value" },
        { "{\"a\" 1}", SL_EFORMAT, "expected ':'" },
        { "{\"a\": [1 2]}", SL_EFORMAT, "expected ',' or ']'" },
        { deep, SL_EFORMAT, "nested too deeply" },
        { many, SL_EFORMAT, "1..64 devices" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sl_ring_cluster c;
        int rc = sl_ring_cluster_parse(&c, cases[i].txt, strlen(cases[i].txt), "c.json", NULL, NULL, 0);
        cr_assert_eq(rc, cases[i].rc, "case %zu: rc %d (%s)", i, rc, sl_last_error());
        cr_assert_not_null(strstr(sl_last_error(), cases[i].msg), "case %zu: '%s' lacks '%s'", i, sl_last_error(),
                           cases[i].msg);
        cr_assert_not_null(strstr(sl_last_error(), "c.json"), "case %zu: %s", i, sl_last_error());
        cr_assert_eq(c.n_dev, 0, "case %zu: a rejected cluster is left empty", i);
    }
    /* a file larger than the limit is refused before parsing */
    cr_assert_eq(sl_ring_cluster_parse(&(sl_ring_cluster){ 0 }, "{}", (size_t)(1u << 20) + 1, "big", NULL, NULL, 0),
                 SL_ERANGE);
}

/* The model part from a GGUF: layers x per-layer bytes + lm head + the rest of the
 * globals is the file's tensor total; KV per token and layer is the engine's. */
Test(ring_plan, model_from_gguf)
{
    static const char *models[] = { "synth-tiny-q4_k.gguf", "stories260K.gguf" };
    for (int i = 0; i < 2; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/models/%s", SL_SHARED_DIR, models[i]);
        sl_model_params mp;
        sl_model_params_init(&mp);
        mp.n_ctx = 256;
        sl_ring_model m;
        double reserve = -1;
        cr_assert_eq(sl_ring_model_from_gguf(&m, &reserve, path, &mp), 0, "%s", sl_last_error());
        sl_gguf *g = NULL;
        cr_assert_eq(sl_gguf_open_path(&g, path), 0);
        cr_assert_eq(m.n_layers, sl_gguf_n_layers(g));
        double layers = 0, head = 0, rest = 0;
        for (int t = 0; t < SL_RING_NTYPE; t++) { layers += m.layer_bytes[t] * m.n_layers; head += m.head_bytes[t]; }
        for (int64_t j = 0; j < sl_gguf_n_tensors(g); j++) {
            const sl_gguf_tensor *t = sl_gguf_tensor_at(g, j);
            if (strncmp(t->name, "blk.", 4) && strcmp(t->name, "output.weight") && strcmp(t->name, "output_norm.weight"))
                rest += (double)t->nbytes;
        }
        int tied = !sl_gguf_find_tensor(g, "output.weight");
        if (tied) rest -= (double)sl_gguf_find_tensor(g, "token_embd.weight")->nbytes;   /* counted as the head */
        cr_assert_float_eq(layers + head + rest, (double)sl_gguf_total_tensor_bytes(g), 1e-3, "%s", models[i]);
        cr_assert_eq(m.n_ctx, 256);
        cr_assert_gt(m.kv_bytes_per_token_layer, 0);
        cr_assert_gt(reserve, 0);
        sl_gguf_close(g);
    }
    sl_ring_model m;
    double reserve;
    sl_model_params mp;
    sl_model_params_init(&mp);
    cr_assert_neq(sl_ring_model_from_gguf(&m, &reserve, "/nonexistent.gguf", &mp), 0);
    cr_assert_not_null(strstr(sl_last_error(), "nonexistent"), "%s", sl_last_error());
}

/* What `sluice ring-profile` writes, the parser reads back exactly (names with quotes too). */
Test(ring_plan, write_then_parse)
{
    rng_state = 77;
    for (int it = 0; it < 20; it++) {
        sl_ring_cluster c, back;
        random_cluster(&c, 1 + it % 4, 16);
        snprintf(c.model.name, sizeof c.model.name, "m\"%d\\x", it);
        snprintf(c.dev[0].name, sizeof c.dev[0].name, "host\t%d", it);
        if (it % 2) c.dev[0].reserve = 0;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        cr_assert_eq(sl_ring_cluster_write(f, &c, "test \"source\""), 0);
        fclose(f);
        cr_assert_eq(sl_ring_cluster_parse(&back, text, len, "w.json", NULL, NULL, 0), 0, "%s\n%s", sl_last_error(), text);
        cr_assert_eq(memcmp(&back.model, &c.model, sizeof c.model), 0, "%s", text);
        cr_assert_eq(back.n_dev, c.n_dev);
        for (int d = 0; d < c.n_dev; d++) cr_assert_eq(memcmp(&back.dev[d], &c.dev[d], sizeof c.dev[d]), 0, "device %d\n%s", d, text);
        cr_assert_eq(back.link_bps, c.link_bps);
        cr_assert_eq(back.link_latency_s, c.link_latency_s);
        free(text);
    }
}

/* `sluice plan --ring` end to end: the figures perf/ring/README.md quotes for prima.cpp's
 * home cluster (so the note cannot drift from the planner), and a hostile file's message
 * and exit status. */
Test(ring_plan, cli_prima_cluster)
{
    static const struct { const char *args; int status; const char *want[3]; } runs[] = {
        { "plan --ring perf/ring/prima_home_cluster.json", 0,
          { "k = 4 rounds of 20 layers, windows 2 6 9 3", "5132.7 ms/token", "D1 Mac M1: its window loads" } },
        { "plan --ring perf/ring/prima_home_cluster_vram.json", 0,
          { "k = 4 rounds of 20 layers, windows 1 7 11 1", "2667.6 ms/token", "k=1: no fit" } },
        { "plan --ring perf/ring/prima_home_cluster.json --brute", 0, { "5132.7 ms/token", "exhaustive", "" } },
        { "plan --ring /nonexistent/c.json", 1, { "plan: /nonexistent/c.json: No such file", "", "" } },
        { "plan --ring tests/ring/hostile_cluster.json", 1,
          { "hostile_cluster.json: devices[1].matvec.q4_K: -1 is outside", "", "" } },
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char cmd[512], out[16384];
        snprintf(cmd, sizeof cmd, "%s/sluice %s 2>&1", SL_BUILD_DIR, runs[i].args);
        FILE *p = popen(cmd, "r");
        cr_assert_not_null(p);
        size_t n = fread(out, 1, sizeof out - 1, p);
        out[n] = 0;
        int st = pclose(p);
        cr_assert_eq(WEXITSTATUS(st), runs[i].status, "%s: exit %d\n%s", cmd, WEXITSTATUS(st), out);
        for (int w = 0; w < 3; w++)
            cr_assert_not_null(strstr(out, runs[i].want[w]), "%s: no '%s' in\n%s", cmd, runs[i].want[w], out);
    }
}
