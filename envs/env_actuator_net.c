/* env_actuator_net.c — the LSTM actuator network (env_actuator_net.h): its data file, its exp, its step. */
#include "env_actuator_net.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The weights in the layout the step reads: each matrix transposed, so that column k (the 32 gate rows that
 * input k feeds) is contiguous and a matrix-vector product is 32-lane multiply-adds, one per input. */
struct env_actuator_net {
    double wx0[NI][NG];             /* weight_ih_l0, transposed */
    double wx[NL][NH][NG];          /* weight_ih_l<l>, transposed (l >= 1; wx[0] unused) */
    double wh[NL][NH][NG];          /* weight_hh_l<l>, transposed */
    double b[NL][NG];               /* bias_ih_l<l> + bias_hh_l<l> */
    double lin_w[NH], lin_b;
    double in_scale[NI], out_scale;
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

/* ---- exp ---- */

/* exp(x) = 2^k exp(r), k = round(x / ln 2), r = x - k ln 2 in about [-0.347, 0.347] (ln 2 split in two, the high
 * part with trailing zeros so that k * LN2_HI is exact), exp(r) by its Taylor polynomial of degree 13 (truncation
 * below 5e-18 relative), 2^k built in the exponent bits.  Integer arithmetic on the bits only (no conversions that
 * could overflow on NaN), so the loops that call it vectorize and a NaN stays NaN. */
static inline double net_exp(double x)
{
    const double INV_LN2 = 0x1.71547652b82fep+0, SHIFT = 0x1.8p52;
    const double LN2_HI = 0x1.62e42fee00000p-1, LN2_LO = 0x1.a39ef35793c76p-33;
    x = fabs(x) > 708.0 ? copysign(708.0, x) : x;   /* one select (two would keep the loops from vectorizing) */
    double kd = MAD(x, INV_LN2, SHIFT);        /* k + 1.5 * 2^52: k in the low mantissa bits */
    uint64_t kb, sb;
    memcpy(&kb, &kd, sizeof kb);
    memcpy(&sb, &SHIFT, sizeof sb);
    kd -= SHIFT;
    const double r = MAD(-kd, LN2_LO, MAD(-kd, LN2_HI, x));
    /* 1 + (r + r^2 Q(r)), Q by Estrin's scheme: a dependency chain of 10 operations instead of Horner's 26, and the
     * last addition to 1 keeps the rounding near half an ulp */
    const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
    const double a2 = MAD(0x1.5555555555555p-3, r, 0x1p-1);                               /* 1/2!, 1/3! */
    const double a4 = MAD(0x1.1111111111111p-7, r, 0x1.5555555555555p-5);                /* 1/4!, 1/5! */
    const double a6 = MAD(0x1.a01a01a01a01ap-13, r, 0x1.6c16c16c16c17p-10);               /* 1/6!, 1/7! */
    const double a8 = MAD(0x1.71de3a556c734p-19, r, 0x1.a01a01a01a01ap-16);               /* 1/8!, 1/9! */
    const double a10 = MAD(0x1.ae64567f544e4p-26, r, 0x1.27e4fb7789f5cp-22);              /* 1/10!, 1/11! */
    const double a12 = MAD(0x1.6124613a86d09p-33, r, 0x1.1eed8eff8d898p-29);              /* 1/12!, 1/13! */
    const double q = MAD(MAD(a12, r2, a10), r8, MAD(MAD(a8, r2, a6), r4, MAD(a4, r2, a2)));
    const double p = 1.0 + MAD(r2, q, r);
    uint64_t eb = (kb - sb + 1023u) << 52;     /* 2^k, k in [-1022, 1022] after the clamp */
    double scale;
    memcpy(&scale, &eb, sizeof scale);
    return p * scale;
}

double env_actuator_net_exp(double x) { return net_exp(x); }

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
        const int nin = l ? NH : NI;
        for (int r = 0; r < NG; r++)
            for (int k = 0; k < nin; k++) {
                if (l) m->wx[l][k][r] = q[r * nin + k];
                else m->wx0[k][r] = q[r * nin + k];
            }
        q += NG * nin;
        for (int r = 0; r < NG; r++)
            for (int k = 0; k < NH; k++) m->wh[l][k][r] = q[r * NH + k];
        q += NG * NH;
        for (int r = 0; r < NG; r++) m->b[l][r] = q[r] + q[NG + r];
        q += 2 * NG;
    }
    for (int k = 0; k < NH; k++) m->lin_w[k] = *q++;
    m->lin_b = *q++;
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

/* One LSTM cell's update from its gate pre-activations g: c' = f c + i g~, h' = o tanh(c'); the sigmoid is
 * 1 / (1 + exp(-x)) and tanh(x) = 2 sig(2x) - 1 (within a few 1e-16 of tanh, absolutely). */
static inline void cell(const double *restrict g, double *restrict h, double *restrict c)
{
    double a[NG], t[NH];
    for (int r = 0; r < 2 * NH; r++) a[r] = 1.0 / (1.0 + net_exp(-g[r]));                    /* i, f */
    for (int r = 2 * NH; r < 3 * NH; r++) a[r] = 2.0 / (1.0 + net_exp(-2.0 * g[r])) - 1.0;      /* g~: tanh */
    for (int r = 3 * NH; r < NG; r++) a[r] = 1.0 / (1.0 + net_exp(-g[r]));                   /* o */
    for (int k = 0; k < NH; k++) c[k] = MAD(a[NH + k], c[k], a[k] * a[2 * NH + k]);
    for (int k = 0; k < NH; k++) t[k] = 2.0 / (1.0 + net_exp(-2.0 * c[k])) - 1.0;
    for (int k = 0; k < NH; k++) h[k] = a[3 * NH + k] * t[k];
}

/* One joint's step: the torque from its position error e and velocity v.  The 32 gate rows are the vector lanes
 * throughout (a layout measured faster than four hidden units per vector with their four gates in registers). */
static inline double joint_step(const env_actuator_net *restrict m, double e, double v, env_actuator_state *restrict s)
{
    double g[NG];
    const double x0 = e * m->in_scale[0], x1 = v * m->in_scale[1];
    for (int r = 0; r < NG; r++) g[r] = MAD(m->wx0[1][r], x1, MAD(m->wx0[0][r], x0, m->b[0][r]));
    for (int k = 0; k < NH; k++)
        for (int r = 0; r < NG; r++) g[r] = MAD(m->wh[0][k][r], s->h[0][k], g[r]);
    cell(g, s->h[0], s->c[0]);
    for (int l = 1; l < NL; l++) {
        for (int r = 0; r < NG; r++) g[r] = m->b[l][r];
        for (int k = 0; k < NH; k++)
            for (int r = 0; r < NG; r++) g[r] = MAD(m->wx[l][k][r], s->h[l - 1][k], g[r]);
        for (int k = 0; k < NH; k++)
            for (int r = 0; r < NG; r++) g[r] = MAD(m->wh[l][k][r], s->h[l][k], g[r]);
        cell(g, s->h[l], s->c[l]);
    }
    double y = m->lin_b;
    for (int k = 0; k < NH; k++) y = MAD(m->lin_w[k], s->h[NL - 1][k], y);
    return m->out_scale * y;
}

int env_actuator_net_step(const env_actuator_net *net, int n, const double *pos_err, const double *vel,
                          env_actuator_state *state, double *tau, char *err, size_t errlen)
{
    if (n < 0) return fail(err, errlen, "actuator net: %d joints", n);
    if (n == 0) return 0;
    if (!net || !pos_err || !vel || !state || !tau)
        return fail(err, errlen, "actuator net: %s is NULL",
                    !net ? "the network" : !pos_err ? "pos_err" : !vel ? "vel" : !state ? "the state" : "tau");
    for (int j = 0; j < n; j++) tau[j] = joint_step(net, pos_err[j], vel[j], &state[j]);
    return 0;
}
