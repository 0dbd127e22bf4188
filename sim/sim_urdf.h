/* sim_urdf.h — builds a sim_model from a URDF file (libxml2).
 *
 * Supported: links with <inertial> (origin xyz + rpy, mass, full inertia tensor: rotated inertia
 * frames are rotated into the link frame); joints revolute, continuous, prismatic, fixed; <limit>
 * (lower, upper, effort, velocity) and <dynamics> (damping, friction); collision primitives sphere,
 * box, cylinder, capsule (URDF has no capsule element: <capsule radius length> is accepted as the
 * common extension).  Visual elements and meshes are ignored; a mesh collision is an error unless
 * opt->ignore_mesh_collisions is set.
 *
 * Fixed joints are merged into their parent body: masses add, the COM is the mass-weighted mean and
 * inertias are shifted with the parallel-axis theorem; the child's collisions move to the parent.
 * The root link becomes a floating base (unit quaternion orientation) unless opt->fixed_base is set;
 * a root link named "world" is the world itself, and the link fixed to it becomes a fixed root.
 *
 * Errors: NULL is returned and err holds a message naming the element (and the file line when
 * libxml2 knows it), e.g. "anymal.urdf:42: <joint name="LF_HAA">: unknown type 'screw'".
 */
#ifndef HERD_SIM_URDF_H
#define HERD_SIM_URDF_H

#include <stddef.h>
#include "sim_model.h"

typedef struct {
    int fixed_base;                 /* 1: weld the root to the world instead of a free joint */
    int ignore_mesh_collisions;     /* 1: skip <mesh> collisions instead of failing */
    double friction;                /* Coulomb coefficient given to every geometry; <= 0 means 0.8 */
} sim_urdf_options;

/* Loads a model from a file / an in-memory document.  opt may be NULL (floating base, defaults).
 * Returns a new model owned by the caller (free with sim_model_destroy), or NULL with err filled. */
sim_model *sim_urdf_load_file(const char *path, const sim_urdf_options *opt, char *err, size_t errlen);
sim_model *sim_urdf_load_string(const char *xml, size_t len, const char *name,
                                const sim_urdf_options *opt, char *err, size_t errlen);

#endif
