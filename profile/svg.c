/* SPDX-License-Identifier: MIT */
/* The static SVG flame graph of the profile's folded stacks (flame.c
 * draws it), written atomically. */
#include "profint.h"

#include <errno.h>

int prof_write_svg(const struct prof *p, const char *path, const char *title)
{
	return pf_write_from_folded(p, path, flame_svg,
				    title ? title : "jitsframe");
}
