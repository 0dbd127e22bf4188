/* env_actuator_net.c — the LSTM actuator network (env_actuator_net.h): its data file, its exp, its steps in double
 * and in single precision. */
#include "env_actuator_net.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#define NI ENV_ACTUATOR_NET_INPUTS
#define NH ENV_ACTUATOR_NET_HIDDEN
#define NL ENV_ACTUATOR_NET_LAYERS
#define NG ENV_ACTUATOR_NET_GATES
#define NP ENV_ACTUATOR_NET_NPARAMS

/* a b + c rounded once on every target (one instruction with FMA, else libm's fma): the build compiles nothing
 * with contraction (Makefile), so the multiply-adds are the ones written here, as in sim/, and the torques are a
 * property of the source. */
#define MAD(a, b, c) __builtin_fma((a), (b), (c))

extern const char herd_model_anydrive_v3_lstm_txt[];     /* embedded at build time (Makefile) */
extern const unsigned long herd_model_anydrive_v3_lstm_txt_len;

/* The gate rows of a layer in the order the step reads them (layer4): row r = 4 u + g is hidden unit u's gate g
 * (i, f, g, o); blocks of BLK rows, each stored input-major: w[block][t][i] is row (BLK block + i)'s term t, t = 0
 * its bias (bias_ih + bias_hh), then one weight per input (the layer's input, then NH of its own h).  All negated
 * and g's doubled, so that the sums are the arguments of the exps the activations take: exactly, as negating and
 * doubling are (the sums are PyTorch's rows' sums, negated and doubled). */
#define BLK 8
#define ROWIN(l) ((l) ? NH : NI)
#define TERMS(l) (1 + ROWIN(l) + NH)
struct env_actuator_net {
    double w0[NG / BLK][1 + NI + NH][BLK];              /* layer 0 */
    double w[NL - 1][NG / BLK][1 + NH + NH][BLK];       /* layers 1 .. NL-1 */
    double lin_w[NH], lin_b;
    double in_scale[NI], out_scale;
    /* the same, rounded to float, for env_actuator_net_step_f32 */
    float f_w0[NG / BLK][1 + NI + NH][BLK], f_w[NL - 1][NG / BLK][1 + NH + NH][BLK];
    float f_lin_w[NH], f_lin_b, f_in_scale[NI], f_out_scale;
    double params[NP];              /* as given, in the file's order */
};

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- vectors of four joints ---- */

/* Four joints' values, one per lane.  Every operation on them is lane by lane and rounds as the scalar operation
 * does, so a lane's bits depend neither on the other lanes (a joint gives the same torque alone or in any batch)
 * nor on the instruction set: min, max and the fused multiply-add are one instruction each with AVX and FMA, and
 * their scalar C equivalents lane by lane without (fma() rounds once too). */
typedef double v4d __attribute__((vector_size(32)));
#if defined(__GNUC__) && !defined(__clang__)
/* the vectors pass between this file's static functions only: that their passing convention differs with and
 * without AVX (GCC's -Wpsabi, in builds without AVX) concerns no interface */
#pragma GCC diagnostic ignored "-Wpsabi"
#endif
typedef unsigned long long v4u __attribute__((vector_size(32)));

static inline v4d splat(double x) { return (v4d){x, x, x, x}; }
static inline v4d load4(const double *p)
{
    v4d v;
    memcpy(&v, p, sizeof v);
    return v;
}
static inline void store4(double *p, v4d v) { memcpy(p, &v, sizeof v); }

/* a b + c rounded once per lane */
static inline v4d fma4(v4d a, v4d b, v4d c)
{
#if defined(__FMA__) && defined(__AVX__)
    return (v4d)_mm256_fmadd_pd((__m256d)a, (__m256d)b, (__m256d)c);
#else
    v4d r;
    for (int l = 0; l < 4; l++) r[l] = MAD(a[l], b[l], c[l]);
    return r;
#endif
}

/* x limited to [-lim, lim] per lane, a NaN kept (minpd and maxpd return their second operand when either is NaN:
 * x is passed second) */
static inline v4d clamp4(v4d x, double lim)
{
#if defined(__AVX__)
    return (v4d)_mm256_max_pd(_mm256_set1_pd(-lim), _mm256_min_pd(_mm256_set1_pd(lim), (__m256d)x));
#else
    v4d r;
    for (int l = 0; l < 4; l++) {
        const double y = lim < x[l] ? lim : x[l];
        r[l] = -lim > y ? -lim : y;
    }
    return r;
#endif
}

/* ---- exp ---- */

/* exp(x[i]) per lane for n vectors x, |x| <= 708 (callers clamp), in place: 2^k exp(r), k = round(x / ln 2),
 * r = x - k ln 2 in about [-0.347, 0.347] (ln 2 split in two, the high part with trailing zeros so that k * LN2_HI
 * is exact), exp(r) by a polynomial of degree 11 in Horner's form, 2^k built in the exponent bits.  Integer
 * arithmetic on the bits only (no conversions that could overflow on NaN); a NaN stays NaN.  Each operation is
 * written for all n vectors before the next: n independent chains side by side keep the multiply-add units busy
 * where one chain would leave them waiting on its latency (the compiler keeps the order).  A lane's bits do not
 * depend on n. */
static inline void exp_n(v4d *x, int n)
{
    const double INV_LN2 = 0x1.71547652b82fep+0, SHIFT = 0x1.8p52;
    const double LN2_HI = 0x1.62e42fee00000p-1, LN2_LO = 0x1.a39ef35793c76p-33;
    /* exp(r) = 1 + r + r^2 q(r): q of degree 9, Chebyshev-interpolated to (exp(r) - 1 - r) / r^2 on
     * [-0.3468, 0.3468] (relative error of exp(r) below 2e-17 before rounding), highest degree first */
    static const double C[10] = {
        0x1.af38d53857513p-26, 0x1.2891a8c1d838dp-22, 0x1.71de0d9c145d0p-19, 0x1.a019b8ef67c6cp-16,
        0x1.a01a01a7c8d47p-13, 0x1.6c16c17893833p-10, 0x1.11111111109adp-7, 0x1.5555555553d4fp-5,
        0x1.5555555555556p-3, 0x1.0000000000001p-1};
    v4d k[n], r[n], p[n];
    v4u kb[n];
    for (int i = 0; i < n; i++) {
        const v4d kd = fma4(x[i], splat(INV_LN2), splat(SHIFT));   /* k + 1.5 * 2^52: k in the low mantissa bits */
        kb[i] = (v4u)kd;
        k[i] = kd - splat(SHIFT);
    }
    for (int i = 0; i < n; i++) r[i] = fma4(k[i], splat(-LN2_HI), x[i]);
    for (int i = 0; i < n; i++) r[i] = fma4(k[i], splat(-LN2_LO), r[i]);
    for (int i = 0; i < n; i++) p[i] = fma4(splat(C[0]), r[i], splat(C[1]));
    for (int c = 2; c < 10; c++)
        for (int i = 0; i < n; i++) p[i] = fma4(p[i], r[i], splat(C[c]));
    for (int i = 0; i < n; i++) p[i] = fma4(p[i], r[i], splat(1.0));
    for (int i = 0; i < n; i++) p[i] = fma4(p[i], r[i], splat(1.0));
    for (int i = 0; i < n; i++)   /* 2^k, k in [-1022, 1022], built in the exponent bits */
        x[i] = p[i] * (v4d)((kb[i] << 52) + ((v4u){1023, 1023, 1023, 1023} << 52));
}

double env_actuator_net_exp(double x)
{
    v4d v = clamp4(splat(x), 708.0);
    exp_n(&v, 1);
    return v[0];
}

/* ---- construction ---- */

/* The tensors of the file, in order: name, rows, cols. */
typedef struct {
    char name[32];
    int rows, cols;
} tensor_spec;

static int tensor_specs(tensor_spec *t)
{
    int n = 0;
    t[n++] = (tensor_spec){"in_scale", 1, NI};
    t[n++] = (tensor_spec){"out_scale", 1, 1};
    for (int l = 0; l < NL; l++) {
        tensor_spec *s = &t[n];
        snprintf(s[0].name, sizeof s[0].name, "lstm.weight_ih_l%d", l), s[0].rows = NG, s[0].cols = l ? NH : NI;
        snprintf(s[1].name, sizeof s[1].name, "lstm.weight_hh_l%d", l), s[1].rows = NG, s[1].cols = NH;
        snprintf(s[2].name, sizeof s[2].name, "lstm.bias_ih_l%d", l), s[2].rows = 1, s[2].cols = NG;
        snprintf(s[3].name, sizeof s[3].name, "lstm.bias_hh_l%d", l), s[3].rows = 1, s[3].cols = NG;
        n += 4;
    }
    t[n++] = (tensor_spec){"linear.weight", 1, NH};
    t[n++] = (tensor_spec){"linear.bias", 1, 1};
    return n;
}
#define NTENSORS (2 + 4 * NL + 2)

env_actuator_net *env_actuator_net_from_params(const double *p, size_t n, char *err, size_t errlen)
{
    if (!p || n != NP) {
        fail(err, errlen, "actuator net: %zu parameters given, %d expected", p ? n : 0, NP);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!isfinite(p[i])) {
            fail(err, errlen, "actuator net: parameter %zu is not finite", i);
            return NULL;
        }
    env_actuator_net *m = calloc(1, sizeof *m);
    if (!m) {
        fail(err, errlen, "actuator net: out of memory");
        return NULL;
    }
    memcpy(m->params, p, sizeof m->params);
    const double *q = p;
    for (int i = 0; i < NI; i++) m->in_scale[i] = *q++;
    m->out_scale = *q++;
    for (int l = 0; l < NL; l++) {
        const int nin = ROWIN(l);
        const double *wih = q, *whh = wih + NG * nin, *bih = whh + NG * NH, *bhh = bih + NG;
        double *w = l ? &m->w[l - 1][0][0][0] : &m->w0[0][0][0];
        for (int u = 0; u < NH; u++)
            for (int g = 0; g < 4; g++) {
                const int r = g * NH + u, row = 4 * u + g;        /* PyTorch's row, the step's row */
                const double s = g == 2 ? -2.0 : -1.0;
                double *t = w + (row / BLK) * TERMS(l) * BLK + row % BLK;
                t[0] = s * (bih[r] + bhh[r]);
                for (int k = 0; k < nin; k++) t[(1 + k) * BLK] = s * wih[r * nin + k];
                for (int k = 0; k < NH; k++) t[(1 + nin + k) * BLK] = s * whh[r * NH + k];
            }
        q = bhh + NG;
    }
    for (int k = 0; k < NH; k++) m->lin_w[k] = *q++;
    m->lin_b = *q++;
    for (size_t i = 0; i < sizeof m->w0 / sizeof(double); i++) (&m->f_w0[0][0][0])[i] = (float)(&m->w0[0][0][0])[i];
    for (size_t i = 0; i < sizeof m->w / sizeof(double); i++) (&m->f_w[0][0][0][0])[i] = (float)(&m->w[0][0][0][0])[i];
    for (int k = 0; k < NH; k++) m->f_lin_w[k] = (float)m->lin_w[k];
    for (int k = 0; k < NI; k++) m->f_in_scale[k] = (float)m->in_scale[k];
    m->f_lin_b = (float)m->lin_b, m->f_out_scale = (float)m->out_scale;
    return m;
}

/* A reader of whitespace-separated tokens with '#' comments, counting lines. */
typedef struct {
    const char *s, *end;
    int line;
    char tok[64];
} reader;

/* The next token into r->tok; 0 at the end of the text, -1 if a token is too long. */
static int next_token(reader *r)
{
    for (;;) {
        while (r->s < r->end && (*r->s == ' ' || *r->s == '\t' || *r->s == '\r' || *r->s == '\n')) {
            if (*r->s == '\n') r->line++;
            r->s++;
        }
        if (r->s < r->end && *r->s == '#') {
            while (r->s < r->end && *r->s != '\n') r->s++;
            continue;
        }
        break;
    }
    size_t n = 0;
    while (r->s < r->end && !(*r->s == ' ' || *r->s == '\t' || *r->s == '\r' || *r->s == '\n' || *r->s == '#')) {
        if (n + 1 >= sizeof r->tok) return -1;
        r->tok[n++] = *r->s++;
    }
    r->tok[n] = 0;
    return n > 0;
}

/* Reads the word `want`, else fills err. */
static int expect_word(reader *r, const char *name, const char *want, char *err, size_t errlen)
{
    int t = next_token(r);
    if (t <= 0 || strcmp(r->tok, want))
        return fail(err, errlen, "%s:%d: expected '%s', found '%s'", name, r->line, want, t > 0 ? r->tok : "end of data");
    return 0;
}

/* Reads a finite number into *v. */
static int read_number(reader *r, const char *name, double *v, char *err, size_t errlen)
{
    int t = next_token(r);
    if (t <= 0) return fail(err, errlen, "%s:%d: expected a number, found %s", name, r->line, t < 0 ? "a token too long" : "end of data");
    char *endp;
    double x = strtod(r->tok, &endp);
    if (*endp || endp == r->tok || !isfinite(x))
        return fail(err, errlen, "%s:%d: '%s' is not a finite number", name, r->line, r->tok);
    *v = x;
    return 0;
}

/* Reads the integer `want` (what and part name it in the message). */
static int expect_int(reader *r, const char *name, const char *what, const char *part, int want, char *err,
                      size_t errlen)
{
    double v = 0;
    if (read_number(r, name, &v, err, errlen)) return -1;
    if (v != want) return fail(err, errlen, "%s:%d: %s%s %s, expected %d", name, r->line, what, part, r->tok, want);
    return 0;
}

env_actuator_net *env_actuator_net_parse(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
    if (!name) name = "actuator net";
    if (!text) {
        fail(err, errlen, "%s: no data", name);
        return NULL;
    }
    reader r = {text, text + len, 1, {0}};
    double *p = malloc(sizeof(double) * NP);
    if (!p) {
        fail(err, errlen, "%s: out of memory", name);
        return NULL;
    }
    env_actuator_net *m = NULL;
    if (expect_word(&r, name, "herd-actuator-lstm", err, errlen) || expect_int(&r, name, "version", "", 1, err, errlen) ||
        expect_word(&r, name, "input_size", err, errlen) || expect_int(&r, name, "input_size", "", NI, err, errlen) ||
        expect_word(&r, name, "hidden_size", err, errlen) || expect_int(&r, name, "hidden_size", "", NH, err, errlen) ||
        expect_word(&r, name, "num_layers", err, errlen) || expect_int(&r, name, "num_layers", "", NL, err, errlen))
        goto out;
    tensor_spec spec[NTENSORS];
    const int nt = tensor_specs(spec);
    size_t k = 0;
    for (int t = 0; t < nt; t++) {
        if (expect_word(&r, name, spec[t].name, err, errlen)) goto out;
        if (expect_int(&r, name, spec[t].name, " rows", spec[t].rows, err, errlen) ||
            expect_int(&r, name, spec[t].name, " cols", spec[t].cols, err, errlen))
            goto out;
        for (int i = 0; i < spec[t].rows * spec[t].cols; i++)
            if (read_number(&r, name, &p[k++], err, errlen)) goto out;
    }
    int t = next_token(&r);
    if (t != 0) {
        fail(err, errlen, "%s:%d: unexpected '%s' after the last tensor", name, r.line, t > 0 ? r.tok : "(long token)");
        goto out;
    }
    m = env_actuator_net_from_params(p, k, err, errlen);
out:
    free(p);
    return m;
}

env_actuator_net *env_actuator_net_new(const char *path, char *err, size_t errlen)
{
    if (!path)
        return env_actuator_net_parse(herd_model_anydrive_v3_lstm_txt, herd_model_anydrive_v3_lstm_txt_len,
                                      "anydrive_v3_lstm.txt (embedded)", err, errlen);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fail(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 1 << 16;
            char *nb = cap <= (1u << 24) ? realloc(buf, cap) : NULL;
            if (!nb) {
                fail(err, errlen, "%s: larger than 16 MiB or out of memory", path);
                free(buf), fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int bad = ferror(f);
    fclose(f);
    env_actuator_net *m = NULL;
    if (bad) fail(err, errlen, "%s: read error", path);
    else m = env_actuator_net_parse(buf, len, path, err, errlen);
    free(buf);
    return m;
}

void env_actuator_net_destroy(env_actuator_net **net)
{
    if (!net) return;
    free(*net);
    *net = NULL;
}

void env_actuator_net_params(const env_actuator_net *net, double *p) { memcpy(p, net->params, sizeof net->params); }

void env_actuator_state_zero(env_actuator_state *s, int n)
{
    if (s && n > 0) memset(s, 0, sizeof *s * (size_t)n);
}

/* ---- the step ---- */

/* Exp arguments beyond +-ARG_LIM are clamped: a sigmoid or tanh moves by less than exp(-200) ~ 1e-87, and a cell's
 * three (1 + exp) factors multiply to at most ~1e261 (no overflow). */
#define ARG_LIM 200.0

/* exp(clamp(x[i])) for BLK vectors x, written out in place: BLK independent chains side by side, which keep the
 * multiply-add units busy where one exp's chain would leave them waiting on its latency. */
#define EXP_CHAINS 4     /* exps side by side: more spill the 16 vector registers */
static inline void exp_blk(v4d *x)
{
    for (int i = 0; i < BLK; i++) x[i] = clamp4(x[i], ARG_LIM);
    for (int i = 0; i < BLK; i += EXP_CHAINS) exp_n(x + i, EXP_CHAINS);
}

/* One LSTM layer for four joints: x its input (nin vectors), h and c its state (NH vectors each, updated), w its
 * rows (struct env_actuator_net).  Per unit, with E_q = exp(-a_q) for the gates' sums a_q (a_g doubled:
 * tanh(a) = (1 - exp(-2a)) / (1 + exp(-2a))) and A_q = 1 + E_q:
 *     i = 1/A_i, f = 1/A_f, g~ = (1 - E_g)/A_g, o = 1/A_o
 *     c' = f c + i g~ = (c A_i A_g + (1 - E_g) A_f) / (A_f A_i A_g)
 *     h' = o tanh(c') = (1 - E_c) / (A_o (1 + E_c)),   E_c = exp(-2 c')
 * two divisions per unit instead of five; each expression within a few ulp of its terms, as the textbook's. */
static inline void layer4(const double *restrict w, int nin, const v4d *restrict x, v4d *restrict h,
                          v4d *restrict c)
{
    const int terms = 1 + nin + NH;
    v4d E[NG];
    for (int b = 0; b < NG / BLK; b++) {         /* the sums, BLK rows at a time */
        const double *wb = w + b * terms * BLK;
        v4d a[BLK];
        for (int i = 0; i < BLK; i++) a[i] = splat(wb[i]);
        for (int k = 0; k < nin; k++)
            for (int i = 0; i < BLK; i++) a[i] = fma4(splat(wb[(1 + k) * BLK + i]), x[k], a[i]);
        for (int k = 0; k < NH; k++)
            for (int i = 0; i < BLK; i++) a[i] = fma4(splat(wb[(1 + nin + k) * BLK + i]), h[k], a[i]);
        exp_blk(a);
        memcpy(E + b * BLK, a, sizeof a);
    }
    const v4d one = splat(1.0);
    v4d Ao[NH], Ec[NH];
    for (int u = 0; u < NH; u++) {
        const v4d *e = E + 4 * u;
        const v4d Ai = one + e[0], Af = one + e[1], Ag = one + e[2], AiAg = Ai * Ag;
        c[u] = fma4(c[u], AiAg, (one - e[2]) * Af) / (Af * AiAg);
        Ao[u] = one + e[3];
        Ec[u] = c[u] * splat(-2.0);
    }
    exp_blk(Ec);
    for (int u = 0; u < NH; u++) h[u] = (one - Ec[u]) / (Ao[u] * (one + Ec[u]));
}

/* out[i] lane j = in[j][i] for i < 4: a 4 x 4 transpose */
static inline void transpose4(v4d out[4], v4d r0, v4d r1, v4d r2, v4d r3)
{
    const v4d t0 = __builtin_shufflevector(r0, r1, 0, 4, 2, 6), t1 = __builtin_shufflevector(r0, r1, 1, 5, 3, 7);
    const v4d t2 = __builtin_shufflevector(r2, r3, 0, 4, 2, 6), t3 = __builtin_shufflevector(r2, r3, 1, 5, 3, 7);
    out[0] = __builtin_shufflevector(t0, t2, 0, 1, 4, 5), out[1] = __builtin_shufflevector(t1, t3, 0, 1, 4, 5);
    out[2] = __builtin_shufflevector(t0, t2, 2, 3, 6, 7), out[3] = __builtin_shufflevector(t1, t3, 2, 3, 6, 7);
}

#define SD ENV_ACTUATOR_NET_STATE      /* doubles per joint's state: h then c, each [layer][unit] */

/* Four joints' step: lane j is joint j (e[j], v[j], *s[j], tau[j]). */
static inline void step4(const env_actuator_net *restrict m, const double *e, const double *v,
                         env_actuator_state *const s[4], double *tau)
{
    _Static_assert(sizeof(env_actuator_state) == SD * sizeof(double), "the state is SD doubles, h then c");
    v4d st[SD];                       /* st[i] lane j = joint j's i-th state double */
    const double *s0 = (const double *)s[0], *s1 = (const double *)s[1], *s2 = (const double *)s[2],
                 *s3 = (const double *)s[3];
    for (int i = 0; i < SD; i += 4) transpose4(st + i, load4(s0 + i), load4(s1 + i), load4(s2 + i), load4(s3 + i));
    const v4d x[NI] = {(v4d){e[0], e[1], e[2], e[3]} * splat(m->in_scale[0]),
                       (v4d){v[0], v[1], v[2], v[3]} * splat(m->in_scale[1])};
    v4d *h = st, *c = st + NL * NH;          /* h[l * NH + k], c[l * NH + k] */
    layer4(&m->w0[0][0][0], NI, x, h, c);
    for (int l = 1; l < NL; l++) layer4(&m->w[l - 1][0][0][0], NH, h + (l - 1) * NH, h + l * NH, c + l * NH);
    v4d y = splat(m->lin_b);
    for (int k = 0; k < NH; k++) y = fma4(splat(m->lin_w[k]), h[(NL - 1) * NH + k], y);
    y *= splat(m->out_scale);
    memcpy(tau, &y, sizeof y);
    for (int i = 0; i < SD; i += 4) {
        v4d r[4];
        transpose4(r, st[i], st[i + 1], st[i + 2], st[i + 3]);
        store4((double *)s[0] + i, r[0]), store4((double *)s[1] + i, r[1]);
        store4((double *)s[2] + i, r[2]), store4((double *)s[3] + i, r[3]);
    }
}

int env_actuator_net_step(const env_actuator_net *net, int n, const double *pos_err, const double *vel,
                          env_actuator_state *state, double *tau, char *err, size_t errlen)
{
    if (n < 0) return fail(err, errlen, "actuator net: %d joints", n);
    if (n == 0) return 0;
    if (!net || !pos_err || !vel || !state || !tau)
        return fail(err, errlen, "actuator net: %s is NULL",
                    !net ? "the network" : !pos_err ? "pos_err" : !vel ? "vel" : !state ? "the state" : "tau");
    int j = 0;
    for (; j + 4 <= n; j += 4) {
        env_actuator_state *s[4] = {&state[j], &state[j + 1], &state[j + 2], &state[j + 3]};
        step4(net, pos_err + j, vel + j, s, tau + j);
    }
    if (j < n) {   /* the last 1-3 joints, in lanes of their own; the spare lanes compute a zero joint's step */
        double e[4] = {0}, v[4] = {0}, t[4];
        env_actuator_state pad[4];
        env_actuator_state *s[4];
        env_actuator_state_zero(pad, 4);
        for (int k = 0; k < 4; k++) s[k] = j + k < n ? &state[j + k] : &pad[k];
        for (int k = 0; j + k < n; k++) e[k] = pos_err[j + k], v[k] = vel[j + k];
        step4(net, e, v, s, t);
        for (int k = 0; j + k < n; k++) tau[j + k] = t[k];
    }
    return 0;
}

/* ---- single precision (env_actuator_net_step_f32) ---- */

/* The step above in float, eight joints per vector: the same algorithm, its exp's polynomial of degree 7 (within
 * about 1e-7 relative, a float's precision) and exp arguments clamped to +-25 (a sigmoid moves by less than 1.4e-11,
 * and three (1 + exp) factors multiply to below 2e33, a float's range).  Lane by lane as above: the same bits alone
 * or in any batch, and on every instruction set. */
typedef float v8f __attribute__((vector_size(32)));
typedef float v4f __attribute__((vector_size(16)));
typedef unsigned int v8u __attribute__((vector_size(32)));
#define F_ARG_LIM 25.0f

static inline v8f splat8(float x) { return (v8f){x, x, x, x, x, x, x, x}; }

/* a b + c rounded once per lane */
static inline v8f fma8(v8f a, v8f b, v8f c)
{
#if defined(__FMA__) && defined(__AVX__)
    return (v8f)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#else
    v8f r;
    for (int l = 0; l < 8; l++) r[l] = __builtin_fmaf(a[l], b[l], c[l]);
    return r;
#endif
}

/* x limited to [-lim, lim] per lane, a NaN kept (as clamp4) */
static inline v8f clamp8(v8f x, float lim)
{
#if defined(__AVX__)
    return (v8f)_mm256_max_ps(_mm256_set1_ps(-lim), _mm256_min_ps(_mm256_set1_ps(lim), (__m256)x));
#else
    v8f r;
    for (int l = 0; l < 8; l++) {
        const float y = lim < x[l] ? lim : x[l];
        r[l] = -lim > y ? -lim : y;
    }
    return r;
#endif
}

/* exp(x[i]) per lane for n vectors x, |x| <= 87 (callers clamp), in place, as exp_n in float: k = round(x / ln 2)
 * (|k| < 128), r = x - k ln 2 (LN2_HI has 17 significant bits: k LN2_HI is exact), exp(r) by its Taylor polynomial
 * of degree 7 (truncation below 2e-9 relative) in Horner's form, 2^k in the exponent bits. */
static inline void exp8_n(v8f *x, int n)
{
    const float INV_LN2 = 0x1.715476p+0f, SHIFT = 0x1.8p23f, LN2_HI = 0x1.62e4p-1f, LN2_LO = 0x1.7f7d1cp-20f;
    static const float C[6] = {0x1.a01a02p-13f, 0x1.6c16c2p-10f, 0x1.111112p-7f, 0x1.555556p-5f, 0x1.555556p-3f,
                               0x1p-1f};   /* 1/7! .. 1/2! */
    v8f k[n], r[n], p[n];
    v8u kb[n];
    for (int i = 0; i < n; i++) {
        const v8f kd = fma8(x[i], splat8(INV_LN2), splat8(SHIFT));
        kb[i] = (v8u)kd;
        k[i] = kd - splat8(SHIFT);
    }
    for (int i = 0; i < n; i++) r[i] = fma8(k[i], splat8(-LN2_HI), x[i]);
    for (int i = 0; i < n; i++) r[i] = fma8(k[i], splat8(-LN2_LO), r[i]);
    for (int i = 0; i < n; i++) p[i] = fma8(splat8(C[0]), r[i], splat8(C[1]));
    for (int c = 2; c < 6; c++)
        for (int i = 0; i < n; i++) p[i] = fma8(p[i], r[i], splat8(C[c]));
    for (int i = 0; i < n; i++) p[i] = fma8(p[i], r[i], splat8(1.0f));
    for (int i = 0; i < n; i++) p[i] = fma8(p[i], r[i], splat8(1.0f));
    for (int i = 0; i < n; i++)
        x[i] = p[i] * (v8f)((kb[i] << 23) + ((v8u){127, 127, 127, 127, 127, 127, 127, 127} << 23));
}

static inline void exp8_blk(v8f *x)
{
    for (int i = 0; i < BLK; i++) x[i] = clamp8(x[i], F_ARG_LIM);
    for (int i = 0; i < BLK; i += EXP_CHAINS) exp8_n(x + i, EXP_CHAINS);
}

/* layer4 in float for eight joints */
static inline void layer8(const float *restrict w, int nin, const v8f *restrict x, v8f *restrict h, v8f *restrict c)
{
    const int terms = 1 + nin + NH;
    v8f E[NG];
    for (int b = 0; b < NG / BLK; b++) {
        const float *wb = w + b * terms * BLK;
        v8f a[BLK];
        for (int i = 0; i < BLK; i++) a[i] = splat8(wb[i]);
        for (int k = 0; k < nin; k++)
            for (int i = 0; i < BLK; i++) a[i] = fma8(splat8(wb[(1 + k) * BLK + i]), x[k], a[i]);
        for (int k = 0; k < NH; k++)
            for (int i = 0; i < BLK; i++) a[i] = fma8(splat8(wb[(1 + nin + k) * BLK + i]), h[k], a[i]);
        exp8_blk(a);
        memcpy(E + b * BLK, a, sizeof a);
    }
    const v8f one = splat8(1.0f);
    v8f Ao[NH], Ec[NH];
    for (int u = 0; u < NH; u++) {
        const v8f *e = E + 4 * u;
        const v8f Ai = one + e[0], Af = one + e[1], Ag = one + e[2], AiAg = Ai * Ag;
        c[u] = fma8(c[u], AiAg, (one - e[2]) * Af) / (Af * AiAg);
        Ao[u] = one + e[3];
        Ec[u] = c[u] * splat8(-2.0f);
    }
    exp8_blk(Ec);
    for (int u = 0; u < NH; u++) h[u] = (one - Ec[u]) / (Ao[u] * (one + Ec[u]));
}

static inline v8f join8(v4d lo, v4d hi)
{
    return __builtin_shufflevector(__builtin_convertvector(lo, v4f), __builtin_convertvector(hi, v4f), 0, 1, 2, 3, 4,
                                   5, 6, 7);
}

/* Eight joints' step in float on their state as lanes (st[i] lane j = joint j's i-th state value, updated): the
 * torques from e[j], v[j] into tau[j]. */
static inline void core8(const env_actuator_net *restrict m, const double *e, const double *v, v8f *restrict st,
                         double *tau)
{
    /* inputs beyond +-1e30 (a float's range ends at 3.4e38) clamped: the gates saturate all the same, and the sums
     * stay finite as in double */
    const v8f x[NI] = {join8(clamp4(load4(e), 1e30), clamp4(load4(e + 4), 1e30)) * splat8(m->f_in_scale[0]),
                       join8(clamp4(load4(v), 1e30), clamp4(load4(v + 4), 1e30)) * splat8(m->f_in_scale[1])};
    v8f *h = st, *c = st + NL * NH;
    layer8(&m->f_w0[0][0][0], NI, x, h, c);
    for (int l = 1; l < NL; l++) layer8(&m->f_w[l - 1][0][0][0], NH, h + (l - 1) * NH, h + l * NH, c + l * NH);
    v8f y = splat8(m->f_lin_b);
    for (int k = 0; k < NH; k++) y = fma8(splat8(m->f_lin_w[k]), h[(NL - 1) * NH + k], y);
    y *= splat8(m->f_out_scale);
    store4(tau, __builtin_convertvector(__builtin_shufflevector(y, y, 0, 1, 2, 3), v4d));
    store4(tau + 4, __builtin_convertvector(__builtin_shufflevector(y, y, 4, 5, 6, 7), v4d));
}

/* Eight joints' step in float: lane j is joint j (e[j], v[j], *s[j], tau[j]); the state is rounded to float. */
static inline void step8(const env_actuator_net *restrict m, const double *e, const double *v,
                         env_actuator_state *const s[8], double *tau)
{
    v8f st[SD];
    for (int i = 0; i < SD; i += 4) {
        v4d lo[4], hi[4];
        const double *p[8];
        for (int j = 0; j < 8; j++) p[j] = (const double *)s[j] + i;
        transpose4(lo, load4(p[0]), load4(p[1]), load4(p[2]), load4(p[3]));
        transpose4(hi, load4(p[4]), load4(p[5]), load4(p[6]), load4(p[7]));
        for (int q = 0; q < 4; q++) st[i + q] = join8(lo[q], hi[q]);
    }
    core8(m, e, v, st, tau);
    for (int i = 0; i < SD; i += 4) {
        v4d lo[4], hi[4];
        for (int q = 0; q < 4; q++) {
            lo[q] = __builtin_convertvector(__builtin_shufflevector(st[i + q], st[i + q], 0, 1, 2, 3), v4d);
            hi[q] = __builtin_convertvector(__builtin_shufflevector(st[i + q], st[i + q], 4, 5, 6, 7), v4d);
        }
        v4d r[4];
        transpose4(r, lo[0], lo[1], lo[2], lo[3]);
        for (int j = 0; j < 4; j++) store4((double *)s[j] + i, r[j]);
        transpose4(r, hi[0], hi[1], hi[2], hi[3]);
        for (int j = 0; j < 4; j++) store4((double *)s[4 + j] + i, r[j]);
    }
}

int env_actuator_net_step_f32(const env_actuator_net *net, int n, const double *pos_err, const double *vel,
                              env_actuator_state *state, double *tau, char *err, size_t errlen)
{
    if (n < 0) return fail(err, errlen, "actuator net: %d joints", n);
    if (n == 0) return 0;
    if (!net || !pos_err || !vel || !state || !tau)
        return fail(err, errlen, "actuator net: %s is NULL",
                    !net ? "the network" : !pos_err ? "pos_err" : !vel ? "vel" : !state ? "the state" : "tau");
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        env_actuator_state *s[8];
        for (int k = 0; k < 8; k++) s[k] = &state[j + k];
        step8(net, pos_err + j, vel + j, s, tau + j);
    }
    if (j < n) {   /* the last 1-7 joints, in lanes of their own; the spare lanes compute a zero joint's step */
        double e[8] = {0}, v[8] = {0}, t[8];
        env_actuator_state pad[8];
        env_actuator_state *s[8];
        env_actuator_state_zero(pad, 8);
        for (int k = 0; k < 8; k++) s[k] = j + k < n ? &state[j + k] : &pad[k];
        for (int k = 0; j + k < n; k++) e[k] = pos_err[j + k], v[k] = vel[j + k];
        step8(net, e, v, s, t);
        for (int k = 0; j + k < n; k++) tau[j + k] = t[k];
    }
    return 0;
}

/* ---- single precision, the state as lanes (env_actuator_lanes) ---- */

_Static_assert(sizeof(env_actuator_lanes) == SD * 8 * sizeof(float), "a block is SD vectors of eight floats");

void env_actuator_lanes_zero(env_actuator_lanes *s, int first, int count)
{
    if (!s || first < 0 || count <= 0) return;
    for (int j = first; j < first + count; j++)
        for (int i = 0; i < SD; i++) s[j / 8].v[i][j % 8] = 0.0f;
}

int env_actuator_net_step_lanes_f32(const env_actuator_net *net, int n, const double *pos_err, const double *vel,
                                    env_actuator_lanes *state, double *tau, char *err, size_t errlen)
{
    if (n < 0) return fail(err, errlen, "actuator net: %d joints", n);
    if (n == 0) return 0;
    if (!net || !pos_err || !vel || !state || !tau)
        return fail(err, errlen, "actuator net: %s is NULL",
                    !net ? "the network" : !pos_err ? "pos_err" : !vel ? "vel" : !state ? "the state" : "tau");
    int j = 0;
    for (; j + 8 <= n; j += 8) {
        v8f st[SD];
        memcpy(st, state[j / 8].v, sizeof st);
        core8(net, pos_err + j, vel + j, st, tau + j);
        memcpy(state[j / 8].v, st, sizeof st);
    }
    if (j < n) {   /* the last block's 1-7 joints; its spare lanes are stepped from zero inputs and left unchanged */
        double e[8] = {0}, v[8] = {0}, t[8];
        v8f st[SD];
        memcpy(st, state[j / 8].v, sizeof st);
        for (int k = 0; j + k < n; k++) e[k] = pos_err[j + k], v[k] = vel[j + k];
        core8(net, e, v, st, t);
        for (int i = 0; i < SD; i++)
            for (int k = 0; j + k < n; k++) state[j / 8].v[i][k] = st[i][k];
        for (int k = 0; j + k < n; k++) tau[j + k] = t[k];
    }
    return 0;
}
