/* SPDX-License-Identifier: MIT */
/* The static SVG flame graph of the profile's folded stacks (flame.c
 * draws it), written atomically. */
#include "profint.h"

#include <errno.h>

int prof_write_svg(const struct prof *p, const char *path, const char *title)
{
	if (!p || !path)
		return -EINVAL;
	struct folded *f = pf_to_folded(p);
	if (!f)
		return -ENOMEM;
	struct afile a;
	int err = pf_af_open(&a, path);
	if (!err)
		err = flame_svg(f, a.f, title ? title : "jitsframe");
	err = pf_af_close(&a, path, err, 0);
	folded_free(f);
	return err;
}
