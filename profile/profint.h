/* SPDX-License-Identifier: MIT */
/*
 * Inside the profile library (profile/profile.h is its face): the hash
 * index and string table (hash.c, strtab.c), the profile model (model.c),
 * the one atomic-file writer (atomic.c), frame names (name.c), the HTML
 * page's tree (tree.c) and viewer files (viewer.c), gzip (gzip.c) and the
 * SVG drawer (flame.c). The writers: fold.c, svg.c, html.c, pprof.c.
 * Functions are prefixed pf_ (the library's own; jsf_ is libjitsframe's).
 */
#ifndef JSF_PROFINT_H
#define JSF_PROFINT_H

#include "profile.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* a + b, saturating at UINT64_MAX: counts add up from files anyone could
 * have written, and a sum that wrapped would make a part bigger than its
 * whole */
static inline uint64_t pf_sat_add(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* ------------------------------------------------------ hash.c */

static inline uint64_t pf_mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

/* FNV-1a of n bytes */
uint64_t pf_hash_bytes(const char *s, size_t n);

/* An open-addressing index: slots hold item index + 1 (0 = empty) and the
 * item's hash, so that growing never needs the items. */
struct slot {
	uint64_t h;
	uint32_t idx1;
};
struct itab {
	struct slot *s;
	size_t cap, n;
};

/* The slot of the item equal to key (eq), or the empty slot where it goes
 * (the caller fills h and idx1 and counts n); NULL when out of memory. */
struct slot *pf_itab_find(struct itab *t, uint64_t h,
			  int (*eq)(const void *ctx, uint32_t idx,
				    const void *key),
			  const void *ctx, const void *key);

/* *a with room for need items of size bytes (doubling, from 64); 0 or
 * -ENOMEM. */
int pf_grow_array(void **a, size_t *cap, size_t need, size_t size);

/* ---------------------------------------------------- strtab.c */

/* Interned strings: index 0 is "", invalid UTF-8 replaced by U+FFFD. */
struct strtab {
	char **s;
	size_t n, cap;
	struct itab ix;
};

/* Index of s (NULL counts as ""), interned; -ENOMEM, -E2BIG. */
int64_t pf_strtab_add(struct strtab *t, const char *s);
void pf_strtab_free(struct strtab *t);

/* ----------------------------------------------------- model.c */

struct pmap {
	uint32_t path, build_id;
	uint64_t start, end, pgoff;
};
/* a frame as stored: string indexes */
struct pfrec {
	uint32_t name, file, line, map; /* map: index + 1, 0 none */
	uint64_t addr;
	uint32_t kind, pad; /* no implicit padding: compared with memcmp */
};
struct pstack {
	uint32_t comm, n;
	size_t off; /* into fids */
	uint64_t count;
};

enum { PF_FMEMO = 1024 };
struct prof {
	uint64_t period_ns;
	struct strtab str;
	struct pmap *maps;
	size_t nmaps, capmaps;
	struct itab mapix;
	struct pfrec *frames;
	size_t nframes, capframes;
	struct itab frameix;
	struct pstack *stacks;
	size_t nstacks, capstacks;
	struct itab stackix;
	uint32_t *fids;
	size_t nfids, capfids;
	uint64_t total;
	char *main_map; /* prof_set_main: the main mapping's path, or NULL */
	/* callers pass the same name pointers again and again: the last
	 * index seen for a pointer, checked with strcmp before use */
	struct {
		const char *s;
		uint32_t idx;
	} pcache[4096];
	/* and the same frames: the frame index last made of an equal
	 * pframe (its strings checked against the ones interned) */
	struct {
		struct pframe k;
		uint32_t id1;	/* index + 1, 0 empty */
		uint8_t stable; /* k's PF_STABLE_* bits */
	} fmemo[PF_FMEMO];
	/* and the last stack's frames (their bytes, PF_STABLE_* bits and
	 * indexes): the next one mostly has the same ones rootward, found
	 * there without a probe of the memo */
	struct pframe *lastf;
	uint8_t *lastst;
	uint32_t *lastid;
	uint32_t nlast, caplast;
};

/* ---------------------------------------------------- atomic.c */

/* A file written under a temporary name in the destination's directory
 * and renamed over it: readers never see a half-written file. */
struct afile {
	FILE *f;
	char *tmp;
	char *buf; /* f's buffer (PF_AF_BUF bytes), or NULL: stdio's */
};
/* a file's stdio buffer: the profiles' few hundred KB in a few writes
 * (stdio's 4 KB made the HTML page alone some 80 write calls) */
enum { PF_AF_BUF = 1 << 16 };
enum { PF_AF_SYNC = 1 }; /* fsync before the rename */

/* Open "path.tmpXXXXXX" (O_EXCL | O_NOFOLLOW, mode 0600); 0 or -errno. */
int pf_af_open(struct afile *a, const char *path);
/* Finish: when err is 0 flush (and with PF_AF_SYNC fsync) and rename over
 * path; else, or when that fails, remove the temp file. Returns err or
 * the error of finishing. */
int pf_af_close(struct afile *a, const char *path, int err, unsigned flags);

/* ------------------------------------------------------ name.c */

/* The display name of every frame (folded stacks, flame graphs: ';' and
 * control characters as '_', "[0xADDR]" when unnamed, "_[j]" for trace
 * code, "_[l]" for Lua frames), interned in t: (*ids)[frame]. 0 or -ENOMEM. */
int pf_frame_names(const struct prof *p, struct strtab *t, uint32_t **ids);
/* The comm as the root frame (';' and control characters as '_');
 * malloc'ed, NULL when out of memory. */
char *pf_comm_name(const char *comm);
/* The profile as folded lines (identical lines merged: frames that differ
 * only by address fold into one); NULL when out of memory. */
struct folded *pf_to_folded(const struct prof *p);
/* Write the profile's folded stacks to path atomically through w (the
 * folded text, the SVG flame graph); 0 or -errno. */
int pf_write_from_folded(const struct prof *p, const char *path,
			 int (*w)(const struct folded *f, FILE *o,
				  const char *title),
			 const char *title);

/* ------------------------------------------------------ tree.c */

/* The profile as d3-flame-graph's nested JSON (root "all", then the
 * comms; children in name order), safe inside an HTML <script>. */
int pf_write_tree_json(FILE *o, const struct prof *p);
/* s as a JSON string (profile/tree.c): also safe inside an HTML <script>
 * element ('<', '>', '&', U+2028/9 as \u escapes) */
void pf_json_str(FILE *o, const char *s);

/* ---------------------------------------------------- viewer.c */

/* The directory holding the HTML viewer's files ($JITSFRAME_VIEWER, else
 * viewer/ next to the running executable, else ../share/jitsframe/viewer
 * from it): 0, or -ENOENT with where it looked in `where` (if not NULL). */
int pf_find_viewer(char *dir, size_t size, char *where, size_t wsize);
/* the viewer's files, relative to that directory */
enum { PF_VIEWER_D3, PF_VIEWER_FLAME, PF_VIEWER_CSS };
extern const char *const pf_viewer_files[3];
/* Copy a viewer asset into the page, "</script" (any case) as "<\/script"
 * so that it cannot end its <script> element; 0 or -errno. */
int pf_inline_asset(FILE *o, const char *dir, const char *file);

/* ------------------------------------------------------ gzip.c */

/* gzip (zlib, level 6) buf into o; 0 or -errno. */
int pf_gzip_to(FILE *o, const uint8_t *buf, size_t len);

/* ----------------------------------------------------- flame.c */

/* s escaped as XML/HTML text, at most max characters (UTF-8 sequences
 * kept whole); control characters dropped. */
void pf_markup_text(FILE *o, const char *s, size_t max);

#endif
