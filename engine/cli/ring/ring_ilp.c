/* One mixed-integer program per valid round count k, solved with GLPK; the
 * best k wins. Per device m: window w_m (integer), z_m (1 = streams), u_m
 * (MB streamed per token); T (ms per token). Units MB and ms keep the
 * coefficients near 1..1e5 for the solver. Big-M rows switch between the
 * resident and the streaming branch of ring_plan.h's model, which is exact:
 * streaming never beats residency where residency fits. */
#include "ring_plan.h"
#include "../../../gguf/gguf_type.h"
#include "../../../gguf/base/sl_internal.h"
#include "../../../gguf/base/sl_status.h"

#include <glpk.h>
#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

/* GLPK calls abort() once its error hook returns (a failed internal
 * assertion, an invalid argument). The hook jumps back into
 * sl_ring_plan_solve instead, which frees the thread's GLPK environment
 * (every GLPK object of the thread goes with it) and returns an error with
 * the text GLPK wrote, kept by the terminal hook (which also keeps GLPK
 * from printing). Thread-local: GLPK's environment is per thread. */
static _Thread_local struct {
    jmp_buf jb;
    char text[256];
} glpk_guard;

static int glpk_text(void *info, const char *s)
{
    (void)info;
    size_t have = strlen(glpk_guard.text);   /* msg_lev is off: only an error writes */
    snprintf(glpk_guard.text + have, sizeof glpk_guard.text - have, "%s", s);
    return 1;                                 /* nothing reaches the terminal */
}

static void glpk_error(void *info)
{
    (void)info;
    longjmp(glpk_guard.jb, 1);
}

static double max3(double a, double b, double c)
{
    double m = a > b ? a : b;
    return m > c ? m : c;
}

/* The ILP for k; fills w and returns 0, or 1 when infeasible, or a status. */
static int solve_k(const sl_ring_cluster *c, int k, int *w)
{
    int n = c->n_dev, W = c->model.n_layers / k;
    glp_prob *lp = glp_create_prob();
    glp_set_obj_dir(lp, GLP_MIN);
    /* columns: w_m = 1+m, z_m = 1+n+m, u_m = 1+2n+m, s_m = 1+3n+m (slots), T = 1+4n */
    glp_add_cols(lp, 4 * n + 1);
    int T = 4 * n + 1, S0 = sl_ring_slots(1);
    for (int m = 0; m < n; m++) {
        glp_set_col_kind(lp, 1 + m, GLP_IV);
        glp_set_col_bnds(lp, 1 + m, W > 1 ? GLP_DB : GLP_FX, 1, W);
        glp_set_col_kind(lp, 1 + n + m, GLP_BV);
        glp_set_col_bnds(lp, 1 + 2 * n + m, GLP_LO, 0, 0);
        glp_set_col_bnds(lp, 1 + 3 * n + m, W > S0 ? GLP_DB : GLP_FX, S0, W > S0 ? W : S0);   /* s >= the floor */
    }
    glp_set_col_bnds(lp, T, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, T, 1);

    int ind[SL_RING_MAX_DEV + 2];
    double val[SL_RING_MAX_DEV + 2];
    /* sum w = W */
    int r = glp_add_rows(lp, 1);
    for (int m = 0; m < n; m++) { ind[1 + m] = 1 + m; val[1 + m] = 1; }
    glp_set_mat_row(lp, r, n, ind, val);
    glp_set_row_bnds(lp, r, GLP_FX, W, W);

    double ring_const = 0, hop = 0;
    double ring_coef[SL_RING_MAX_DEV];
    for (int m = 0; m < n; m++) {
        const sl_ring_device *d = &c->dev[m];
        double lb, kvl, head, tl, th;
        sl_ring_coef(c, m, k, &lb, &kvl, &head, &tl, &th, &hop);
        lb /= 1e6; kvl /= 1e6; head /= 1e6; tl *= 1e3; th *= 1e3;   /* MB, ms */
        double B = d->budget / 1e6, R = d->reserve / 1e6, disk = d->disk_bps / 1e9;   /* MB/ms */
        double smax = W > S0 ? W : S0;   /* the slots never need more than this */
        double M = 1 + max3(k * (lb + kvl) * W + head + R - B,
                            k * (lb + kvl) * W + smax * lb + head + R - B,
                            k * kvl * W + smax * lb + R - B);
        if (M < 1) M = 1;
        /* resident unless z: k(lb+kvl) w - M z <= B - head - R */
        r = glp_add_rows(lp, 1);
        ind[1] = 1 + m; val[1] = k * (lb + kvl);
        ind[2] = 1 + n + m; val[2] = -M;
        glp_set_mat_row(lp, r, 2, ind, val);
        glp_set_row_bnds(lp, r, GLP_UP, 0, B - head - R);
        /* slots: s >= w (and >= the floor by its bound); u grows with s, so s = max(w, floor) */
        r = glp_add_rows(lp, 1);
        ind[1] = 1 + 3 * n + m; val[1] = 1;
        ind[2] = 1 + m; val[2] = -1;
        glp_set_mat_row(lp, r, 2, ind, val);
        glp_set_row_bnds(lp, r, GLP_LO, 0, 0);
        /* streamed when z: u - k(lb + kvl) w - lb s - M z >= head + R - B - M */
        r = glp_add_rows(lp, 1);
        ind[1] = 1 + 2 * n + m; val[1] = 1;
        ind[2] = 1 + m; val[2] = -k * (lb + kvl);
        ind[3] = 1 + 3 * n + m; val[3] = -lb;
        ind[4] = 1 + n + m; val[4] = -M;
        glp_set_mat_row(lp, r, 4, ind, val);
        glp_set_row_bnds(lp, r, GLP_LO, head + R - B - M, 0);
        /* streaming needs the slots, KV and reserve inside the budget */
        r = glp_add_rows(lp, 1);
        ind[1] = 1 + m; val[1] = k * kvl;
        ind[2] = 1 + 3 * n + m; val[2] = lb;
        ind[3] = 1 + n + m; val[3] = M;
        glp_set_mat_row(lp, r, 3, ind, val);
        glp_set_row_bnds(lp, r, GLP_UP, 0, B - R + M);
        /* the device's own cycle: T >= k tl w + u / disk + th */
        r = glp_add_rows(lp, 1);
        ind[1] = T; val[1] = 1;
        ind[2] = 1 + m; val[2] = -k * tl;
        ind[3] = 1 + 2 * n + m; val[3] = -1 / disk;
        glp_set_mat_row(lp, r, 3, ind, val);
        glp_set_row_bnds(lp, r, GLP_LO, th, 0);
        ring_coef[m] = k * tl;
        ring_const += th;
    }
    ring_const += (double)k * n * hop * 1e3;
    /* the ring: T >= sum k tl_m w_m + heads + k n hop */
    r = glp_add_rows(lp, 1);
    ind[1] = T; val[1] = 1;
    for (int m = 0; m < n; m++) { ind[2 + m] = 1 + m; val[2 + m] = -ring_coef[m]; }
    glp_set_mat_row(lp, r, n + 1, ind, val);
    glp_set_row_bnds(lp, r, GLP_LO, ring_const, 0);

    glp_iocp parm;
    glp_init_iocp(&parm);
    parm.msg_lev = GLP_MSG_OFF;
    parm.presolve = GLP_ON;
    parm.tol_int = 1e-9;
    parm.tm_lim = 10000;
    int rc = glp_intopt(lp, &parm), st = glp_mip_status(lp), out = 0;
    if (rc == GLP_ENOPFS || rc == GLP_ENODFS || st == GLP_NOFEAS) out = 1;
    else if (rc || st != GLP_OPT)
        out = sl_err_set(SL_ERANGE, "ring: GLPK failed for %d rounds (glp_intopt %d, status %d)", k, rc, st);
    else
        for (int m = 0; m < n; m++) w[m] = (int)lround(glp_mip_col_val(lp, 1 + m));
    glp_delete_prob(lp);
    return out;
}

static int solve_all(const sl_ring_cluster *c, sl_ring_plan *p);

int sl_ring_plan_solve(const sl_ring_cluster *c, sl_ring_plan *p)
{
    memset(p, 0, sizeof *p);
    p->n_dev = c->n_dev;
    p->t_s = -1;
    /* a cost without a rate is infinite, and GLPK stops on such a bound:
     * refuse it by name here (gathered profiles skip the file parser's check) */
    int m_bad, t_bad;
    if (sl_ring_cluster_missing_rate(c, &m_bad, &t_bad))
        return sl_err_set(SL_EINVAL, "ring: device %d (%s) has no matvec rate for %s, which the model uses "
                          "(add it to the \"matvec\" of that device's profile or of cluster.json)", m_bad,
                          c->dev[m_bad].name, sl_gguf_type_name((uint32_t)t_bad));
    glpk_guard.text[0] = 0;
    if (setjmp(glpk_guard.jb)) {
        glp_free_env();
        char *t = glpk_guard.text;
        for (char *q = t; *q; q++) if (*q == '\n') *q = ' ';
        return sl_err_set(SL_ERANGE, "ring: GLPK stopped on an internal error (%s); the cluster's "
                          "figures are probably out of range", t[0] ? t : "no message");
    }
    glp_term_out(GLP_ON);
    glp_term_hook(glpk_text, NULL);
    glp_error_hook(glpk_error, NULL);
    int rc = solve_all(c, p);
    glp_error_hook(NULL, NULL);
    glp_term_hook(NULL, NULL);
    glp_term_out(GLP_OFF);
    return rc;
}

/* Every valid round count k through its ILP; the best k wins. */
static int solve_all(const sl_ring_cluster *c, sl_ring_plan *p)
{
    int L = c->model.n_layers;
    for (int k = 1; k <= L; k++) {
        if (L % k || L / k < c->n_dev) continue;
        int w[SL_RING_MAX_DEV];
        int rc = solve_k(c, k, w);
        if (rc < 0) return rc;
        double t = -1;
        sl_ring_cost cost;
        if (rc == 0) {
            /* the solver's windows through the model itself: the figure printed is the model's */
            if (sl_ring_cost_eval(c, k, w, &cost)) {
                char msg[512];
                snprintf(msg, sizeof msg, "%s", sl_last_error());
                return sl_err_set(SL_ERANGE, "ring: the ILP for %d rounds chose windows the model rejects: %s", k, msg);
            }
            t = cost.t_s;
            if (p->t_s < 0 || t < p->t_s) {
                p->t_s = t;
                p->k = k;
                memcpy(p->w, w, sizeof(int) * (size_t)c->n_dev);
            }
        }
        if (p->n_tried < 64) { p->tried_k[p->n_tried] = k; p->tried_t[p->n_tried++] = t; }
    }
    if (p->t_s < 0) return sl_err_set(SL_ERANGE, "ring: no window split fits every device's budget "
                                      "(%d devices, %d layers)", c->n_dev, L);
    return 0;
}
