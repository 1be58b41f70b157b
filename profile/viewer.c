/* SPDX-License-Identifier: MIT */
/*
 * The HTML flame graph's viewer (d3-flame-graph + d3, vendored by `make`
 * through npm into build/viewer): where its files are, and copying them
 * into the page (profint.h).
 */
#include "jsfenv.h"
#include "profint.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

/* The viewer's files, relative to its directory. */
const char *const pf_viewer_files[3] = {
    [PF_VIEWER_D3] = "node_modules/d3/dist/d3.min.js",
    [PF_VIEWER_FLAME] =
	"node_modules/d3-flame-graph/dist/d3-flamegraph.umd.min.js",
    [PF_VIEWER_CSS] = "node_modules/d3-flame-graph/dist/d3-flamegraph.css",
};

static int viewer_has_files(const char *dir)
{
	for (size_t f = 0; f < 3; f++) {
		char path[PATH_MAX];
		int n = snprintf(path, sizeof(path), "%s/%s", dir,
				 pf_viewer_files[f]);
		if (n < 0 || (size_t)n >= sizeof(path) || access(path, R_OK))
			return 0;
	}
	return 1;
}

/* The candidates: $JITSFRAME_VIEWER alone when set; else viewer/ next to
 * the running executable (build/viewer for build/jitsframe), then
 * ../share/jitsframe/viewer from it (an install). */
int pf_find_viewer(char *dir, size_t size, char *where, size_t wsize)
{
	char exe[PATH_MAX], cand[2][PATH_MAX];
	int nc = 0;
	const char *env = getenv(JSF_ENV_VIEWER);
	if (env && *env) {
		size_t len = strlen(env);
		if (len < sizeof(cand[0]))
			memcpy(cand[nc++], env, len + 1);
	} else {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = 0;
			char *sl = strrchr(exe, '/');
			if (sl)
				*sl = 0;
			int a = snprintf(cand[nc], sizeof(cand[0]), "%s/viewer",
					 exe);
			nc += a > 0 && (size_t)a < sizeof(cand[0]);
			a = snprintf(cand[nc], sizeof(cand[0]),
				     "%s/../share/jitsframe/viewer", exe);
			nc += a > 0 && (size_t)a < sizeof(cand[0]);
		}
	}
	for (int i = 0; i < nc; i++) {
		size_t len = strlen(cand[i]);
		if (viewer_has_files(cand[i]) && len < size) {
			memcpy(dir, cand[i], len + 1);
			return 0;
		}
	}
	if (where && wsize)
		snprintf(where, wsize, "%s in %s%s%s",
			 pf_viewer_files[PF_VIEWER_FLAME],
			 nc ? cand[0] : "(nowhere)", nc > 1 ? " and " : "",
			 nc > 1 ? cand[1] : "");
	return -ENOENT;
}

int prof_viewer_where(char *buf, size_t size)
{
	char dir[PATH_MAX];
	int err = pf_find_viewer(dir, sizeof(dir), buf, size);
	if (!err && size)
		snprintf(buf, size, "%s", dir);
	return err;
}

/* "</script" (any case) becomes "<\/script": the same text inside a JS
 * string or regexp. */
int pf_inline_asset(FILE *o, const char *dir, const char *file)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	FILE *in = fopen(path, "r");
	if (!in)
		return -errno;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int err = 0;
	for (;;) {
		if (len == cap) {
			char *b = realloc(buf, cap = cap ? 2 * cap : 1 << 19);
			if (!b) {
				err = -ENOMEM;
				break;
			}
			buf = b;
		}
		size_t got = fread(buf + len, 1, cap - len, in);
		len += got;
		if (got == 0) {
			if (ferror(in))
				err = -EIO;
			break;
		}
	}
	fclose(in);
	const char *p = buf, *end = buf + len;
	while (!err && p < end) {
		const char *lt = memchr(p, '<', (size_t)(end - p));
		if (!lt) {
			fwrite(p, 1, (size_t)(end - p), o);
			break;
		}
		fwrite(p, 1, (size_t)(lt - p), o);
		if (end - lt >= 8 && lt[1] == '/' &&
		    !strncasecmp(lt + 2, "script", 6)) {
			fputs("<\\/", o);
			p = lt + 2;
		} else {
			fputc('<', o);
			p = lt + 1;
		}
	}
	free(buf);
	return err;
}
