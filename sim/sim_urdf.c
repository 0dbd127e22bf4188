/* sim_urdf.c — URDF loader: libxml2 DOM -> links/joints/collisions -> merged sim_model.
 *
 * Three passes over one parsed document:
 *   1. parse: every <link> and <joint> child of <robot> is read into a flat table (names, inertials,
 *      collisions, joint frames, limits), validating numbers and attributes as it goes;
 *   2. resolve: joint parent/child names become link indices; duplicate names, links with two
 *      parents, several roots and cycles are rejected;
 *   3. build: a depth-first walk from the root (children in document order) creates one body per
 *      movable joint and folds every fixed-joint child into the body that owns its parent link,
 *      composing the link's pose in that body (T_link).  Inertials are accumulated about the body
 *      origin (parallel-axis theorem), collisions are emitted with T_link composed in.
 * Body order is the walk's preorder, so parents precede children (sim_model's invariant).
 *
 * Every error is reported as "<source>:<line>: <element name="...">: <what>" and frees everything;
 * libxml2's own messages are captured through the parser context's structured-error hook (nothing
 * is printed to stderr) and the loader keeps no global state.
 */
#include "sim_urdf.h"

#include "sim_math.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <libxml/xmlversion.h>

#define URDF_MAX_FILE_BYTES (64u << 20) /* refuse absurdly large files instead of exhausting memory */
#define DEFAULT_FRICTION 0.8

/* ---- rigid transforms (row-major 3x3; sim_math.h conventions) ---- */

typedef struct {
    double p[3];
    double R[9];
} xform;

static void xf_identity(xform *t)
{
    memset(t, 0, sizeof *t);
    t->R[0] = t->R[4] = t->R[8] = 1.0;
}

/* C = A B, aliasing allowed: sim_math's m3_mul through a temporary. */
static void mat_mul(const double A[9], const double B[9], double C[9])
{
    double T[9];
    m3_mul(T, A, B);
    memcpy(C, T, sizeof T);
}

/* out = A v, aliasing allowed */
static void mat_vec(const double A[9], const double v[3], double out[3])
{
    double t[3];
    m3_mulv(t, A, v);
    memcpy(out, t, sizeof t);
}

/* out = a o b (apply b, then a): p = pa + Ra pb, R = Ra Rb. */
static void xf_compose(const xform *a, const xform *b, xform *out)
{
    xform t;
    mat_vec(a->R, b->p, t.p);
    v3_add(t.p, t.p, a->p);
    mat_mul(a->R, b->R, t.R);
    *out = t;
}

static void xf_inverse(const xform *a, xform *out)
{
    xform t;
    m3_transpose(t.R, a->R);
    mat_vec(t.R, a->p, t.p);
    for (int k = 0; k < 3; k++) t.p[k] = -t.p[k];
    *out = t;
}

/* URDF rpy: fixed-axis roll (x), pitch (y), yaw (z): R = Rz(y) Ry(p) Rx(r). */
static void rpy_to_R(const double rpy[3], double R[9])
{
    double cr = cos(rpy[0]), sr = sin(rpy[0]);
    double cp = cos(rpy[1]), sp = sin(rpy[1]);
    double cy = cos(rpy[2]), sy = sin(rpy[2]);
    R[0] = cy * cp; R[1] = cy * sp * sr - sy * cr; R[2] = cy * sp * cr + sy * sr;
    R[3] = sy * cp; R[4] = sy * sp * sr + cy * cr; R[5] = sy * sp * cr - cy * sr;
    R[6] = -sp;     R[7] = cp * sr;                R[8] = cp * cr;
}

/* I' = R I R^T */
static void rotate_inertia(const double R[9], const double I[9], double out[9])
{
    double RI[9], Rt[9];
    m3_transpose(Rt, R);
    mat_mul(R, I, RI);
    mat_mul(RI, Rt, out);
}

/* ---- the loader's tables ---- */

enum { J_FIXED, J_REVOLUTE, J_CONTINUOUS, J_PRISMATIC };

typedef struct {
    xmlNode *node;
    const char *name;
    double mass, com[3], I[9];      /* link frame; I about the COM */
    int parent_joint;               /* -1: none (a root) */
    int first_child, last_child;    /* joints whose parent is this link, document order */
    int first_coll, ncoll;          /* slice of the collision table */
    int body;                       /* owning body after merging (-1 until visited) */
    xform in_body;                  /* link frame in the owning body's frame */
} ulink;

typedef struct {
    xmlNode *node;
    const char *name, *parent_name, *child_name;
    xmlNode *parent_node, *child_node;
    int type, parent, child, next_sibling;
    xform origin;
    double axis[3];
    double lower, upper, effort, velocity, damping, friction;
} ujoint;

typedef struct {
    xmlNode *node;
    const char *name;               /* name attribute or NULL */
    int index;                      /* position among the link's <collision> elements */
    int skip;                       /* ignored mesh */
    int type;
    xform origin;                   /* in the link frame */
    double size[3];
} ucoll;

typedef struct {
    const char *src;
    char *err;
    size_t errlen;
    sim_urdf_options opt;
    xmlNode *robot;
    ulink *links;
    ujoint *joints;
    ucoll *colls;
    int nlinks, njoints, ncolls;
    xmlChar **strs;                 /* every attribute value fetched, freed at the end */
    int nstrs, capstrs;
    int oom;                        /* an allocation failed: every later message says so */
    sim_model *m;
    double acc_m[SIM_MAX_BODIES], acc_h[SIM_MAX_BODIES][3], acc_I[SIM_MAX_BODIES][9];
} loader;

/* ---- errors ---- */

static int is_tag(const xmlNode *n, const char *tag)
{
    return n && n->type == XML_ELEMENT_NODE && strcmp((const char *)n->name, tag) == 0;
}

/* "<link name="base"> <inertial> <mass>": from the nearest link/joint (or the node itself) down to n. */
static void describe(const xmlNode *n, char *buf, size_t len)
{
    const xmlNode *chain[16];
    int k = 0;
    for (const xmlNode *p = n; p && p->type == XML_ELEMENT_NODE && k < 16; p = p->parent) {
        chain[k++] = p;
        if (is_tag(p, "link") || is_tag(p, "joint")) break;
    }
    size_t used = 0;
    buf[0] = 0;
    for (int i = k - 1; i >= 0; i--) {
        xmlChar *name = xmlGetNoNsProp((xmlNode *)chain[i], (const xmlChar *)"name");
        int w;
        if (name)
            w = snprintf(buf + used, len - used, "%s<%s name=\"%s\">", i == k - 1 ? "" : " ",
                         (const char *)chain[i]->name, (const char *)name);
        else
            w = snprintf(buf + used, len - used, "%s<%s>", i == k - 1 ? "" : " ", (const char *)chain[i]->name);
        xmlFree(name);
        if (w < 0 || (size_t)w >= len - used) break;
        used += (size_t)w;
    }
}

/* Fills L->err with "src:line: <element>: message" (node may be NULL) and returns -1. */
static int fail(loader *L, const xmlNode *node, const char *fmt, ...)
{
    if (!L->err || !L->errlen) return -1;
    if (L->oom) {
        snprintf(L->err, L->errlen, "%s: out of memory", L->src);
        return -1;
    }
    char msg[512], where[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (node) {
        describe(node, where, sizeof where);
        long line = xmlGetLineNo(node);
        if (line > 0)
            snprintf(L->err, L->errlen, "%s:%ld: %s: %s", L->src, line, where, msg);
        else
            snprintf(L->err, L->errlen, "%s: %s: %s", L->src, where, msg);
    } else {
        snprintf(L->err, L->errlen, "%s: %s", L->src, msg);
    }
    return -1;
}

/* ---- attributes and numbers ---- */

/* Attribute value (owned by the loader) or NULL if absent (or if out of memory: L->oom is set). */
static const char *attr(loader *L, xmlNode *n, const char *name)
{
    xmlChar *v = xmlGetNoNsProp(n, (const xmlChar *)name);
    if (!v) return NULL;
    if (L->nstrs == L->capstrs) {
        int cap = L->capstrs ? 2 * L->capstrs : 64;
        xmlChar **s = realloc(L->strs, sizeof *s * (size_t)cap);
        if (!s) {
            xmlFree(v);
            L->oom = 1;
            return NULL;
        }
        L->strs = s;
        L->capstrs = cap;
    }
    L->strs[L->nstrs++] = v;
    return (const char *)v;
}

static int req_attr(loader *L, xmlNode *n, const char *name, const char **out)
{
    *out = attr(L, n, name);
    if (!*out) return fail(L, n, "missing attribute '%s'", name);
    return 0;
}

/* Parses one number occupying [s, e); returns 0 on success. */
static int parse_double(const char *s, const char *e, double *out)
{
    char buf[128];
    size_t len = (size_t)(e - s);
    if (len == 0 || len >= sizeof buf) return -1;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    double v = strtod(buf, &end);
    if (end != buf + len || !isfinite(v)) return -1;
    *out = v;
    return 0;
}

/* n whitespace-separated finite numbers from attribute `name` of node, or the defaults if absent
 * (def == NULL: the attribute is required). */
static int num_attrs(loader *L, xmlNode *node, const char *name, int n, const double *def, double *out)
{
    const char *v = attr(L, node, name);
    if (!v) {
        if (!def) return fail(L, node, "missing attribute '%s'", name);
        memcpy(out, def, sizeof(double) * (size_t)n);
        return 0;
    }
    const char *s = v;
    int k = 0;
    for (;;) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        const char *e = s;
        while (*e && !isspace((unsigned char)*e)) e++;
        if (k < n) {
            if (parse_double(s, e, &out[k]) != 0)
                return fail(L, node, "attribute %s=\"%s\": '%.*s' is not a finite number", name, v, (int)(e - s), s);
        }
        k++;
        s = e;
    }
    if (k != n)
        return fail(L, node, "attribute %s=\"%s\": expected %d number%s, found %d", name, v, n, n == 1 ? "" : "s", k);
    return 0;
}

static int num_attr(loader *L, xmlNode *node, const char *name, const double *def, double *out)
{
    return num_attrs(L, node, name, 1, def, out);
}

static xmlNode *child(xmlNode *n, const char *tag)
{
    for (xmlNode *c = n->children; c; c = c->next)
        if (is_tag(c, tag)) return c;
    return NULL;
}

/* <origin xyz rpy> child of n (identity if absent). */
static int parse_origin(loader *L, xmlNode *n, xform *out)
{
    static const double zero[3] = {0, 0, 0};
    xf_identity(out);
    xmlNode *o = child(n, "origin");
    if (!o) return 0;
    double rpy[3];
    if (num_attrs(L, o, "xyz", 3, zero, out->p) || num_attrs(L, o, "rpy", 3, zero, rpy)) return -1;
    rpy_to_R(rpy, out->R);
    return 0;
}

static int check_name(loader *L, xmlNode *n, const char *name, const char *what)
{
    if (!name[0]) return fail(L, n, "empty %s", what);
    if (strlen(name) >= SIM_NAME_MAX)
        return fail(L, n, "%s '%s' is too long (max %d characters)", what, name, SIM_NAME_MAX - 1);
    return 0;
}

/* ---- pass 1: parse ---- */

static int parse_inertial(loader *L, xmlNode *link, ulink *u)
{
    xmlNode *in = child(link, "inertial");
    if (!in) return 0;
    xform o;
    if (parse_origin(L, in, &o)) return -1;
    xmlNode *mass = child(in, "mass");
    if (!mass) return fail(L, in, "missing <mass>");
    if (num_attr(L, mass, "value", NULL, &u->mass)) return -1;
    if (u->mass < 0) return fail(L, mass, "mass %g is negative", u->mass);
    xmlNode *inertia = child(in, "inertia");
    if (!inertia) return fail(L, in, "missing <inertia>");
    double ixx, ixy, ixz, iyy, iyz, izz;
    if (num_attr(L, inertia, "ixx", NULL, &ixx) || num_attr(L, inertia, "ixy", NULL, &ixy) ||
        num_attr(L, inertia, "ixz", NULL, &ixz) || num_attr(L, inertia, "iyy", NULL, &iyy) ||
        num_attr(L, inertia, "iyz", NULL, &iyz) || num_attr(L, inertia, "izz", NULL, &izz))
        return -1;
    double I[9] = {ixx, ixy, ixz, ixy, iyy, iyz, ixz, iyz, izz};
    /* relative tolerance 1e-9: rounding in the six printed figures of a URDF must not fail a physical tensor */
    if (!sim_inertia_valid(I, 1e-9)) return fail(L, inertia, "inertia tensor is not positive semi-definite");
    rotate_inertia(o.R, I, u->I);
    memcpy(u->com, o.p, sizeof u->com);
    return 0;
}

static int parse_collision(loader *L, xmlNode *cn, ucoll *c)
{
    c->name = attr(L, cn, "name");
    if (c->name && check_name(L, cn, c->name, "collision name")) return -1;
    if (parse_origin(L, cn, &c->origin)) return -1;
    xmlNode *g = child(cn, "geometry");
    if (!g) return fail(L, cn, "missing <geometry>");
    xmlNode *shape = NULL;
    for (xmlNode *s = g->children; s; s = s->next) {
        if (s->type != XML_ELEMENT_NODE) continue;
        if (shape) return fail(L, s, "<geometry> holds more than one shape");
        shape = s;
    }
    if (!shape) return fail(L, g, "empty <geometry>");
    memset(c->size, 0, sizeof c->size);
    if (is_tag(shape, "sphere")) {
        c->type = SIM_GEOM_SPHERE;
        if (num_attr(L, shape, "radius", NULL, &c->size[0])) return -1;
    } else if (is_tag(shape, "box")) {
        c->type = SIM_GEOM_BOX;
        if (num_attrs(L, shape, "size", 3, NULL, c->size)) return -1;
        for (int k = 0; k < 3; k++) {
            if (!(c->size[k] > 0)) return fail(L, shape, "box size %g must be positive", c->size[k]);
            c->size[k] *= 0.5;
        }
    } else if (is_tag(shape, "cylinder") || is_tag(shape, "capsule")) {
        c->type = is_tag(shape, "cylinder") ? SIM_GEOM_CYLINDER : SIM_GEOM_CAPSULE;
        double len;
        if (num_attr(L, shape, "radius", NULL, &c->size[0]) || num_attr(L, shape, "length", NULL, &len)) return -1;
        if (!(len > 0)) return fail(L, shape, "length %g must be positive", len);
        c->size[1] = 0.5 * len;
    } else if (is_tag(shape, "mesh")) {
        if (!L->opt.ignore_mesh_collisions)
            return fail(L, shape, "mesh collisions are not supported (use primitives, or set ignore_mesh_collisions)");
        c->skip = 1;
        return 0;
    } else {
        return fail(L, shape, "unsupported geometry <%s> (sphere, box, cylinder, capsule)", (const char *)shape->name);
    }
    if (!(c->size[0] > 0)) return fail(L, shape, "radius %g must be positive", c->size[0]);
    return 0;
}

static int parse_link(loader *L, xmlNode *n, ulink *u)
{
    memset(u, 0, sizeof *u);
    u->node = n;
    u->parent_joint = u->first_child = u->last_child = -1;
    u->body = -1;
    xf_identity(&u->in_body);
    if (req_attr(L, n, "name", &u->name)) return -1;
    if (!u->name[0]) return fail(L, n, "empty link name");
    if (child(n, "inertial") && parse_inertial(L, n, u)) return -1;
    u->first_coll = L->ncolls;
    for (xmlNode *c = n->children; c; c = c->next) {
        if (!is_tag(c, "collision")) continue;
        ucoll *uc = &L->colls[L->ncolls];
        memset(uc, 0, sizeof *uc);
        uc->node = c;
        uc->index = u->ncoll;
        if (parse_collision(L, c, uc)) return -1;
        L->ncolls++;
        u->ncoll++;
    }
    return 0;
}

static int parse_joint(loader *L, xmlNode *n, ujoint *j)
{
    static const double xaxis[3] = {1, 0, 0}, zero = 0;
    memset(j, 0, sizeof *j);
    j->node = n;
    j->parent = j->child = j->next_sibling = -1;
    const char *type;
    if (req_attr(L, n, "name", &j->name)) return -1;
    if (!j->name[0]) return fail(L, n, "empty joint name");
    if (req_attr(L, n, "type", &type)) return -1;
    if (strcmp(type, "fixed") == 0) j->type = J_FIXED;
    else if (strcmp(type, "revolute") == 0) j->type = J_REVOLUTE;
    else if (strcmp(type, "continuous") == 0) j->type = J_CONTINUOUS;
    else if (strcmp(type, "prismatic") == 0) j->type = J_PRISMATIC;
    else if (strcmp(type, "floating") == 0 || strcmp(type, "planar") == 0)
        return fail(L, n, "joint type '%s' is not supported (revolute, continuous, prismatic, fixed)", type);
    else
        return fail(L, n, "unknown joint type '%s'", type);

    j->parent_node = child(n, "parent");
    if (!j->parent_node) return fail(L, n, "missing <parent>");
    if (req_attr(L, j->parent_node, "link", &j->parent_name)) return -1;
    j->child_node = child(n, "child");
    if (!j->child_node) return fail(L, n, "missing <child>");
    if (req_attr(L, j->child_node, "link", &j->child_name)) return -1;
    if (parse_origin(L, n, &j->origin)) return -1;

    j->lower = -INFINITY;
    j->upper = INFINITY;
    j->effort = j->velocity = INFINITY;
    if (j->type == J_FIXED) return 0; /* axis, limit and dynamics mean nothing for a weld */

    xmlNode *ax = child(n, "axis");
    memcpy(j->axis, xaxis, sizeof j->axis);
    if (ax && num_attrs(L, ax, "xyz", 3, xaxis, j->axis)) return -1;
    double len = sqrt(j->axis[0] * j->axis[0] + j->axis[1] * j->axis[1] + j->axis[2] * j->axis[2]);
    if (!(len > 1e-9)) return fail(L, ax ? ax : n, "joint axis has zero length");
    for (int k = 0; k < 3; k++) j->axis[k] /= len;

    xmlNode *lim = child(n, "limit");
    if (!lim && j->type != J_CONTINUOUS)
        return fail(L, n, "a %s joint requires <limit> (lower, upper, effort, velocity)", type);
    if (lim) {
        if (num_attr(L, lim, "effort", NULL, &j->effort) || num_attr(L, lim, "velocity", NULL, &j->velocity))
            return -1;
        if (j->effort < 0) return fail(L, lim, "effort %g is negative", j->effort);
        if (j->velocity < 0) return fail(L, lim, "velocity %g is negative", j->velocity);
        if (j->type != J_CONTINUOUS) {
            if (num_attr(L, lim, "lower", &zero, &j->lower) || num_attr(L, lim, "upper", &zero, &j->upper)) return -1;
            if (j->lower > j->upper) return fail(L, lim, "lower limit %g > upper limit %g", j->lower, j->upper);
        }
    }
    xmlNode *dyn = child(n, "dynamics");
    if (dyn) {
        if (num_attr(L, dyn, "damping", &zero, &j->damping) || num_attr(L, dyn, "friction", &zero, &j->friction))
            return -1;
        if (j->damping < 0) return fail(L, dyn, "damping %g is negative", j->damping);
        if (j->friction < 0) return fail(L, dyn, "friction %g is negative", j->friction);
    }
    return 0;
}

static int parse_robot(loader *L)
{
    int nl = 0, nj = 0, nc = 0;
    for (xmlNode *n = L->robot->children; n; n = n->next) {
        if (is_tag(n, "link")) {
            nl++;
            for (xmlNode *c = n->children; c; c = c->next) nc += is_tag(c, "collision");
        } else if (is_tag(n, "joint")) {
            nj++;
        }
    }
    if (nl == 0) return fail(L, L->robot, "the robot has no <link>");
    L->links = calloc((size_t)nl, sizeof *L->links);
    L->joints = calloc((size_t)(nj ? nj : 1), sizeof *L->joints);
    L->colls = calloc((size_t)(nc ? nc : 1), sizeof *L->colls);
    if (!L->links || !L->joints || !L->colls) return fail(L, NULL, "out of memory");
    for (xmlNode *n = L->robot->children; n; n = n->next) {
        if (is_tag(n, "link")) {
            if (parse_link(L, n, &L->links[L->nlinks])) return -1;
            L->nlinks++;
        } else if (is_tag(n, "joint")) {
            if (parse_joint(L, n, &L->joints[L->njoints])) return -1;
            L->njoints++;
        }
    }
    return 0;
}

/* ---- pass 2: resolve names into a tree ---- */

/* Names sorted (by name, then document order), so that duplicates are found and joint ends resolved in
 * O(n log n): a document of many thousand links must not take seconds (a quadratic scan took 12 s for
 * 20,000 links). */
typedef struct {
    const char *name;
    int index;
} name_ref;

static int name_ref_cmp(const void *a, const void *b)
{
    const name_ref *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->index > y->index) - (x->index < y->index);
}

/* refs[0..n) sorted.  The first duplicate in document order: the smallest index whose name appeared
 * before, with *first = that name's first index; -1 if the names are distinct. */
static int first_duplicate(const name_ref *refs, int n, int *first)
{
    int dup = -1, group = 0;
    for (int i = 1; i < n; i++) {
        if (strcmp(refs[i].name, refs[i - 1].name)) {
            group = i;
            continue;
        }
        if (i == group + 1 && (dup < 0 || refs[i].index < dup)) {
            dup = refs[i].index;
            *first = refs[group].index;
        }
    }
    return dup;
}

/* The link named name (the first one in document order), or -1. */
static int find_link(const name_ref *links, int n, const char *name)
{
    int lo = 0, hi = n;                 /* the first entry >= name */
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (strcmp(links[mid].name, name) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo < n && strcmp(links[lo].name, name) == 0 ? links[lo].index : -1;
}

static int resolve_tree(loader *L, const name_ref *lref, int *root);

static int resolve(loader *L, int *root)
{
    name_ref *lref = malloc((size_t)L->nlinks * sizeof *lref);
    name_ref *jref = malloc((size_t)(L->njoints ? L->njoints : 1) * sizeof *jref);
    int rc = -1, first = -1, dup;
    if (!lref || !jref) {
        fail(L, NULL, "out of memory");
        goto done;
    }
    for (int i = 0; i < L->nlinks; i++) lref[i] = (name_ref){L->links[i].name, i};
    for (int i = 0; i < L->njoints; i++) jref[i] = (name_ref){L->joints[i].name, i};
    qsort(lref, (size_t)L->nlinks, sizeof *lref, name_ref_cmp);
    qsort(jref, (size_t)L->njoints, sizeof *jref, name_ref_cmp);
    if ((dup = first_duplicate(lref, L->nlinks, &first)) >= 0) {
        fail(L, L->links[dup].node, "duplicate link name (first defined on line %ld)", xmlGetLineNo(L->links[first].node));
        goto done;
    }
    if ((dup = first_duplicate(jref, L->njoints, &first)) >= 0) {
        fail(L, L->joints[dup].node, "duplicate joint name (first defined on line %ld)",
             xmlGetLineNo(L->joints[first].node));
        goto done;
    }
    rc = resolve_tree(L, lref, root);
done:
    free(lref);
    free(jref);
    return rc;
}

/* Joint ends -> link indices, the children lists, the root. */
static int resolve_tree(loader *L, const name_ref *lref, int *root)
{
    for (int i = 0; i < L->njoints; i++) {
        ujoint *j = &L->joints[i];
        j->parent = find_link(lref, L->nlinks, j->parent_name);
        if (j->parent < 0) return fail(L, j->parent_node, "unknown link '%s'", j->parent_name);
        j->child = find_link(lref, L->nlinks, j->child_name);
        if (j->child < 0) return fail(L, j->child_node, "unknown link '%s'", j->child_name);
        if (j->parent == j->child) return fail(L, j->node, "joint connects link '%s' to itself", j->child_name);
        ulink *c = &L->links[j->child];
        if (c->parent_joint >= 0)
            return fail(L, j->node, "link '%s' already has a parent (joint '%s'): a link has at most one parent",
                        c->name, L->joints[c->parent_joint].name);
        c->parent_joint = i;
        ulink *p = &L->links[j->parent];
        if (p->last_child >= 0) L->joints[p->last_child].next_sibling = i;
        else p->first_child = i;
        p->last_child = i;
    }
    *root = -1;
    for (int i = 0; i < L->nlinks; i++) {
        if (L->links[i].parent_joint >= 0) continue;
        if (*root >= 0)
            return fail(L, L->links[i].node, "several root links ('%s' and '%s'): every link but one must be a joint's child",
                        L->links[*root].name, L->links[i].name);
        *root = i;
    }
    if (*root < 0) return fail(L, L->robot, "no root link: every link is a joint's child (the joints form a cycle)");
    return 0;
}

/* ---- pass 3: depth-first walk, merging fixed joints ---- */

static void accumulate(loader *L, const ulink *u)
{
    int b = u->body;
    if (u->mass == 0 && u->I[0] == 0 && u->I[4] == 0 && u->I[8] == 0) return;
    double c[3], I[9];
    mat_vec(u->in_body.R, u->com, c);
    v3_add(c, c, u->in_body.p);
    rotate_inertia(u->in_body.R, u->I, I);
    double m = u->mass, cc = v3_dot(c, c);
    for (int r = 0; r < 3; r++)
        for (int s = 0; s < 3; s++) L->acc_I[b][3 * r + s] += I[3 * r + s] + m * ((r == s ? cc : 0) - c[r] * c[s]);
    for (int k = 0; k < 3; k++) L->acc_h[b][k] += m * c[k];
    L->acc_m[b] += m;
}

static int emit_collisions(loader *L, const ulink *u, const xform *in_body, int body)
{
    sim_model *m = L->m;
    double friction = L->opt.friction > 0 ? L->opt.friction : DEFAULT_FRICTION;
    for (int k = 0; k < u->ncoll; k++) {
        const ucoll *c = &L->colls[u->first_coll + k];
        if (c->skip) continue;
        if (m->ngeom >= SIM_MAX_GEOMS)
            return fail(L, c->node, "too many collision geometries (max %d)", SIM_MAX_GEOMS);
        sim_geom *g = &m->geom[m->ngeom];
        char name[2 * SIM_NAME_MAX + 32];
        if (c->name) snprintf(name, sizeof name, "%s", c->name);
        else snprintf(name, sizeof name, "%s/collision%d", u->name, c->index);
        if (strlen(name) >= SIM_NAME_MAX)
            return fail(L, c->node, "geometry name '%s' is too long (max %d characters)", name, SIM_NAME_MAX - 1);
        for (int i = 0; i < m->ngeom; i++)
            if (strcmp(m->geom[i].name, name) == 0) return fail(L, c->node, "duplicate geometry name '%s'", name);
        memset(g, 0, sizeof *g);
        memcpy(g->name, name, strlen(name) + 1);
        g->type = c->type;
        g->body = body;
        xform t;
        xf_compose(in_body, &c->origin, &t);
        memcpy(g->pos, t.p, sizeof g->pos);
        memcpy(g->rot, t.R, sizeof g->rot);
        memcpy(g->size, c->size, sizeof g->size);
        g->friction = friction;
        m->ngeom++;
    }
    return 0;
}

static void init_body(sim_body *b, const char *name, int parent, int type)
{
    memset(b, 0, sizeof *b);
    snprintf(b->name, sizeof b->name, "%s", name);
    b->parent = parent;
    b->joint_type = type;
    b->dof = b->qadr = -1;
    b->rot[0] = b->rot[4] = b->rot[8] = 1.0;
    b->lower = -INFINITY;
    b->upper = INFINITY;
    b->effort = b->velocity = INFINITY;
}

static int build(loader *L, int root)
{
    sim_model *m = L->m;
    int *stack = malloc(sizeof *stack * (size_t)L->nlinks);
    if (!stack) return fail(L, NULL, "out of memory");
    int sp = 0, visited = 0, start = root;
    xform pose;                 /* body 0 in the world */
    xf_identity(&pose);
    int root_type = L->opt.fixed_base ? SIM_JOINT_ROOT_FIXED : SIM_JOINT_FREE;
    ulink *w = &L->links[root];

    if (strcmp(w->name, "world") == 0) {
        /* The root "world" is the world itself: its inertial means nothing.  A single link welded to
         * it becomes a fixed root posed by that weld; otherwise the world is body 0. */
        root_type = SIM_JOINT_ROOT_FIXED;
        if (w->first_child < 0) {
            free(stack);
            return fail(L, w->node, "nothing is attached to the world link");
        }
        const ujoint *j = &L->joints[w->first_child];
        if (j->next_sibling < 0 && j->type == J_FIXED) {
            start = j->child;
            pose = j->origin;
            w->body = 0;
            xf_inverse(&pose, &w->in_body);
            visited++;
        }
        w->mass = 0;
        memset(w->I, 0, sizeof w->I);
    }
    const ulink *r0 = &L->links[start];
    if (check_name(L, r0->node, r0->name, "link name")) goto fail;
    init_body(&m->body[0], r0->name, -1, root_type);
    memcpy(m->body[0].pos, pose.p, sizeof pose.p);
    memcpy(m->body[0].rot, pose.R, sizeof pose.R);
    memset(m->body[0].axis, 0, sizeof m->body[0].axis);
    m->nbody = 1;
    L->links[start].body = 0;
    xf_identity(&L->links[start].in_body);
    if (start != root && emit_collisions(L, w, &w->in_body, 0)) goto fail;

    stack[sp++] = start;
    while (sp > 0) {
        ulink *u = &L->links[stack[--sp]];
        visited++;
        if (u != r0) {
            const ujoint *j = &L->joints[u->parent_joint];
            const ulink *p = &L->links[j->parent];
            xform t;
            xf_compose(&p->in_body, &j->origin, &t);
            if (j->type == J_FIXED) {
                u->body = p->body;
                u->in_body = t;
            } else {
                if (m->nbody >= SIM_MAX_BODIES) {
                    fail(L, j->node, "too many bodies after merging fixed joints (max %d)", SIM_MAX_BODIES);
                    goto fail;
                }
                if (check_name(L, u->node, u->name, "link name") || check_name(L, j->node, j->name, "joint name"))
                    goto fail;
                int b = m->nbody++;
                static const int jt[] = {0, SIM_JOINT_REVOLUTE, SIM_JOINT_CONTINUOUS, SIM_JOINT_PRISMATIC};
                sim_body *sb = &m->body[b];
                init_body(sb, u->name, p->body, jt[j->type]);
                snprintf(sb->joint_name, sizeof sb->joint_name, "%s", j->name);
                memcpy(sb->pos, t.p, sizeof t.p);
                memcpy(sb->rot, t.R, sizeof t.R);
                memcpy(sb->axis, j->axis, sizeof j->axis);
                sb->lower = j->lower;
                sb->upper = j->upper;
                sb->effort = j->effort;
                sb->velocity = j->velocity;
                sb->damping = j->damping;
                sb->friction = j->friction;
                u->body = b;
                xf_identity(&u->in_body);
            }
        }
        accumulate(L, u);
        if (emit_collisions(L, u, &u->in_body, u->body)) goto fail;
        int first = sp;
        for (int j = u->first_child; j >= 0; j = L->joints[j].next_sibling) stack[sp++] = L->joints[j].child;
        for (int a = first, z = sp - 1; a < z; a++, z--) {
            int tmp = stack[a];
            stack[a] = stack[z];
            stack[z] = tmp;
        }
    }
    free(stack);
    stack = NULL;

    if (visited != L->nlinks) {
        for (int i = 0; i < L->nlinks; i++)
            if (L->links[i].body < 0)
                return fail(L, L->links[i].node, "link is not connected to the root '%s' (its joints form a cycle)",
                            L->links[root].name);
    }

    /* COM and inertia about the COM from the accumulated sums about each body origin. */
    for (int b = 0; b < m->nbody; b++) {
        sim_body *sb = &m->body[b];
        double mass = L->acc_m[b];
        double c[3] = {0, 0, 0};
        if (mass > 0)
            for (int k = 0; k < 3; k++) c[k] = L->acc_h[b][k] / mass;
        double cc = v3_dot(c, c);
        for (int r = 0; r < 3; r++)
            for (int s = 0; s < 3; s++)
                sb->inertia[3 * r + s] = L->acc_I[b][3 * r + s] - mass * ((r == s ? cc : 0) - c[r] * c[s]);
        for (int r = 0; r < 3; r++)
            for (int s = r + 1; s < 3; s++) {
                double v = 0.5 * (sb->inertia[3 * r + s] + sb->inertia[3 * s + r]);
                sb->inertia[3 * r + s] = sb->inertia[3 * s + r] = v;
            }
        sb->mass = mass;
        memcpy(sb->com, c, sizeof c);
    }
    return 0;
fail:
    free(stack);
    return -1;
}

/* ---- entry points ---- */

typedef struct {
    char msg[256];
    int line, have;
} xml_err;

#if LIBXML_VERSION >= 21200
static void on_xml_error(void *user, const xmlError *e)
#else
static void on_xml_error(void *user, xmlErrorPtr e)
#endif
{
    xmlParserCtxtPtr ctxt = user;
    xml_err *x = ctxt ? ctxt->_private : NULL;
    if (!x || x->have || !e || e->level < XML_ERR_ERROR) return;
    snprintf(x->msg, sizeof x->msg, "%s", e->message ? e->message : "parse error");
    size_t n = strlen(x->msg);
    while (n > 0 && (x->msg[n - 1] == '\n' || x->msg[n - 1] == ' ')) x->msg[--n] = 0;
    x->line = e->line;
    x->have = 1;
}

static sim_model *load(loader *L, xmlDoc *doc)
{
    int root = -1;
    sim_model *m = NULL;
    L->robot = xmlDocGetRootElement(doc);
    if (!L->robot) {
        fail(L, NULL, "empty document");
        goto out;
    }
    if (!is_tag(L->robot, "robot")) {
        fail(L, L->robot, "not a URDF document (the root element must be <robot>)");
        goto out;
    }
    m = L->m = sim_model_new();
    if (!m) {
        fail(L, NULL, "out of memory");
        goto out;
    }
    if (parse_robot(L) || resolve(L, &root) || build(L, root)) goto fail;
    char buf[384];
    if (sim_model_finalize(m, buf, sizeof buf) != 0) {
        fail(L, NULL, "%s", buf);
        goto fail;
    }
    goto out;
fail:
    sim_model_destroy(&m);
out:
    for (int i = 0; i < L->nstrs; i++) xmlFree(L->strs[i]);
    free(L->strs);
    free(L->links);
    free(L->joints);
    free(L->colls);
    return m;
}

sim_model *sim_urdf_load_string(const char *xml, size_t len, const char *name, const sim_urdf_options *opt,
                                char *err, size_t errlen)
{
    loader L;
    memset(&L, 0, sizeof L);
    L.src = name ? name : "<string>";
    L.err = err;
    L.errlen = errlen;
    if (opt) L.opt = *opt;
    if (err && errlen) err[0] = 0;
    if (!xml) {
        fail(&L, NULL, "no document");
        return NULL;
    }
    if (len > INT_MAX) {
        fail(&L, NULL, "document too large");
        return NULL;
    }
    xmlInitParser();
    xmlParserCtxtPtr ctxt = xmlCreateMemoryParserCtxt(xml, (int)len);
    if (!ctxt) {
        fail(&L, NULL, len == 0 ? "empty document" : "out of memory");
        return NULL;
    }
    xml_err xe;
    memset(&xe, 0, sizeof xe);
    ctxt->_private = &xe;
    if (ctxt->sax) ctxt->sax->serror = on_xml_error; /* capture, never print */
    xmlCtxtUseOptions(ctxt, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING | XML_PARSE_BIG_LINES);
    xmlParseDocument(ctxt);
    xmlDoc *doc = ctxt->myDoc;
    int ok = ctxt->wellFormed && doc;
    if (!ok) {
        if (!xe.have) {
            const xmlError *e = xmlCtxtGetLastError(ctxt);
            if (e && e->message) on_xml_error(ctxt, (void *)e);
        }
        if (xe.have && xe.line > 0) {
            if (err && errlen) snprintf(err, errlen, "%s:%d: malformed XML: %s", L.src, xe.line, xe.msg);
        } else if (xe.have)
            fail(&L, NULL, "malformed XML: %s", xe.msg);
        else
            fail(&L, NULL, "malformed XML");
        if (doc) xmlFreeDoc(doc);
        ctxt->myDoc = NULL;
        xmlFreeParserCtxt(ctxt);
        return NULL;
    }
    ctxt->myDoc = NULL;
    xmlFreeParserCtxt(ctxt);
    sim_model *m = load(&L, doc);
    xmlFreeDoc(doc);
    return m;
}

sim_model *sim_urdf_load_file(const char *path, const sim_urdf_options *opt, char *err, size_t errlen)
{
    if (err && errlen) err[0] = 0;
    if (!path) {
        if (err && errlen) snprintf(err, errlen, "no file name");
        return NULL;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (err && errlen) snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (len == cap) {
            if (cap >= URDF_MAX_FILE_BYTES) {
                free(buf);
                fclose(f);
                if (err && errlen) snprintf(err, errlen, "%s: file larger than %u bytes", path, URDF_MAX_FILE_BYTES);
                return NULL;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    int rerr = ferror(f) ? errno : 0;
    fclose(f);
    if (!buf || rerr) {
        if (err && errlen) snprintf(err, errlen, "%s: %s", path, buf ? strerror(rerr) : "out of memory");
        free(buf);
        return NULL;
    }
    sim_model *m = sim_urdf_load_string(buf, len, path, opt, err, errlen);
    free(buf);
    return m;
}
