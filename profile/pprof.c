/* SPDX-License-Identifier: MIT */
/*
 * pprof (profile.h): profile.pb.gz, the profile as perftools.profiles
 * messages (profile/pprof.proto through protoc-c) gzip'ed (gzip.c), written
 * atomically. docs/CLI.md (PROFILE FILES) says what goes where.
 */
#include "pprof.pb-c.h"
#include "profint.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A function: (name, file) in the output string table, and its first
 * line (Lua frames; 0 for the others). */
struct pfunc {
	uint32_t name, file, start;
};

static int func_eq(const void *ctx, uint32_t idx, const void *key)
{
	const struct pfunc *f = ctx;
	return !memcmp(&f[idx], key, sizeof(struct pfunc));
}

/* "TRACE_n::chunk:line" -> chunk (into buf) and line; NULL when the name
 * is not a trace's. */
static const char *trace_source(const char *name, char *buf, size_t size,
				uint32_t *line)
{
	if (strncmp(name, "TRACE_", 6))
		return NULL;
	const char *c = name + 6;
	while (*c >= '0' && *c <= '9')
		c++;
	if (c == name + 6 || strncmp(c, "::", 2))
		return NULL;
	c += 2;
	const char *colon = strrchr(c, ':');
	if (!colon || colon == c || !colon[1])
		return NULL;
	unsigned long v = 0;
	for (const char *d = colon + 1; *d; d++) {
		if (*d < '0' || *d > '9' || v > UINT32_MAX / 10)
			return NULL;
		v = v * 10 + (unsigned long)(*d - '0');
	}
	size_t n = (size_t)(colon - c);
	if (n >= size)
		n = size - 1;
	memcpy(buf, c, n);
	buf[n] = 0;
	*line = (uint32_t)v;
	return buf;
}

/* A Lua frame's "chunk:first" -> first (0: none) */
static uint32_t lua_first(const char *name)
{
	const char *colon = strrchr(name, ':');
	unsigned long v = 0;
	if (!colon || !colon[1])
		return 0;
	for (const char *d = colon + 1; *d; d++) {
		if (*d < '0' || *d > '9' || v > UINT32_MAX / 10)
			return 0;
		v = v * 10 + (unsigned long)(*d - '0');
	}
	return (uint32_t)v;
}

int prof_write_pprof(const struct prof *p, const char *path)
{
	if (!p || !path)
		return -EINVAL;
	int err = 0;
	struct strtab st;
	memset(&st, 0, sizeof(st));
	struct itab fix;
	memset(&fix, 0, sizeof(fix));
	/* at most one function per frame */
	struct pfunc *funcs = calloc(p->nframes + 1, sizeof(*funcs));
	size_t nfuncs = 0;
	uint32_t *loc_func = calloc(p->nframes + 1, sizeof(*loc_func));
	uint32_t *loc_line = calloc(p->nframes + 1, sizeof(*loc_line));
	uint32_t *map_str = calloc(2 * p->nmaps + 1, sizeof(*map_str));
	uint32_t *mid = calloc(p->nmaps + 1, sizeof(*mid));
	/* the messages: one block each, pointers into them */
	Perftools__Profiles__Mapping *maps =
	    calloc(p->nmaps + 1, sizeof(*maps));
	Perftools__Profiles__Mapping **mapp =
	    calloc(p->nmaps + 1, sizeof(Perftools__Profiles__Mapping *));
	Perftools__Profiles__Location *locs =
	    calloc(p->nframes + 1, sizeof(*locs));
	Perftools__Profiles__Location **locp =
	    calloc(p->nframes + 1, sizeof(Perftools__Profiles__Location *));
	Perftools__Profiles__Line *lines =
	    calloc(p->nframes + 1, sizeof(*lines));
	Perftools__Profiles__Line **linep =
	    calloc(p->nframes + 1, sizeof(Perftools__Profiles__Line *));
	Perftools__Profiles__Sample *samples =
	    calloc(p->nstacks + 1, sizeof(*samples));
	Perftools__Profiles__Sample **samplep =
	    calloc(p->nstacks + 1, sizeof(Perftools__Profiles__Sample *));
	Perftools__Profiles__Label *labels =
	    calloc(p->nstacks + 1, sizeof(*labels));
	Perftools__Profiles__Label **labelp =
	    calloc(p->nstacks + 1, sizeof(Perftools__Profiles__Label *));
	int64_t *values = calloc(2 * p->nstacks + 1, sizeof(*values));
	uint64_t *locids = calloc(p->nfids + 1, sizeof(*locids));
	Perftools__Profiles__Function *fn = NULL, **fnp = NULL;
	uint8_t *buf = NULL;
	if (!funcs || !loc_func || !loc_line || !map_str || !mid || !maps ||
	    !mapp || !locs || !locp || !lines || !linep || !samples ||
	    !samplep || !labels || !labelp || !values || !locids) {
		err = -ENOMEM;
		goto out;
	}
	/* strings, in the order they are met */
	int64_t s_samples = pf_strtab_add(&st, "samples"),
		s_count = pf_strtab_add(&st, "count"),
		s_cpu = pf_strtab_add(&st, "cpu"),
		s_ns = pf_strtab_add(&st, "nanoseconds"),
		s_comm = pf_strtab_add(&st, "comm");
	if (s_samples < 0 || s_count < 0 || s_cpu < 0 || s_ns < 0 ||
	    s_comm < 0) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->nmaps; i++) {
		int64_t a = pf_strtab_add(&st, p->str.s[p->maps[i].path]),
			b = pf_strtab_add(&st, p->str.s[p->maps[i].build_id]);
		if (a < 0 || b < 0) {
			err = -ENOMEM;
			goto out;
		}
		map_str[2 * i] = (uint32_t)a;
		map_str[2 * i + 1] = (uint32_t)b;
	}
	/* functions: one per (name, file); unnamed frames "[0xADDR]" */
	for (size_t i = 0; i < p->nframes; i++) {
		const struct pfrec *f = &p->frames[i];
		char addr[32];
		const char *name = p->str.s[f->name];
		if (!*name) {
			snprintf(addr, sizeof(addr), "[0x%llx]",
				 (unsigned long long)f->addr);
			name = addr;
		}
		/* a trace frame without file or line: its name says them */
		const char *file = p->str.s[f->file];
		char chunk[512];
		uint32_t tline = 0;
		loc_line[i] = f->line;
		if (f->kind == PF_JIT && (!*file || !f->line) &&
		    trace_source(name, chunk, sizeof(chunk), &tline)) {
			if (!*file)
				file = chunk;
			if (!f->line)
				loc_line[i] = tline;
		}
		int64_t a = pf_strtab_add(&st, name),
			b = pf_strtab_add(&st, file);
		if (a < 0 || b < 0) {
			err = -ENOMEM;
			goto out;
		}
		struct pfunc k = {(uint32_t)a, (uint32_t)b,
				  f->kind == PF_LUA ? lua_first(name) : 0};
		uint64_t h = pf_mix(pf_mix(k.name, k.file), k.start);
		struct slot *sl = pf_itab_find(&fix, h, func_eq, funcs, &k);
		if (!sl) {
			err = -ENOMEM;
			goto out;
		}
		if (!sl->idx1) {
			funcs[nfuncs++] = k;
			sl->h = h;
			sl->idx1 = (uint32_t)nfuncs;
			fix.n++;
		}
		loc_func[i] = sl->idx1; /* function id */
	}
	uint32_t *comm_str = calloc(p->nstacks + 1, sizeof(*comm_str));
	if (!comm_str) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		int64_t c = pf_strtab_add(&st, p->str.s[p->stacks[i].comm]);
		if (c < 0) {
			free(comm_str);
			err = -ENOMEM;
			goto out;
		}
		comm_str[i] = (uint32_t)c;
	}
	fn = calloc(nfuncs + 1, sizeof(*fn));
	fnp = calloc(nfuncs + 1, sizeof(Perftools__Profiles__Function *));
	if (!fn || !fnp) {
		free(comm_str);
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < nfuncs; i++) {
		perftools__profiles__function__init(&fn[i]);
		fn[i].id = i + 1;
		fn[i].name = funcs[i].name;
		fn[i].system_name = funcs[i].name;
		fn[i].filename = funcs[i].file;
		fn[i].start_line = funcs[i].start;
		fnp[i] = &fn[i];
	}
	/* the main binary's mappings first, the others in their order:
	 * mapping i becomes message mid[i] - 1 */
	size_t nm = 0;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < p->nmaps; i++) {
			bool is_main =
			    p->main_map &&
			    !strcmp(p->str.s[p->maps[i].path], p->main_map);
			if (is_main == !pass)
				mid[i] = (uint32_t)++nm;
		}
	for (size_t i = 0; i < p->nmaps; i++) {
		const struct pmap *m = &p->maps[i];
		size_t k = mid[i] - 1;
		perftools__profiles__mapping__init(&maps[k]);
		maps[k].id = k + 1;
		maps[k].memory_start = m->start;
		maps[k].memory_limit = m->end;
		maps[k].file_offset = m->pgoff;
		maps[k].filename = map_str[2 * i];
		maps[k].build_id = map_str[2 * i + 1];
		mapp[k] = &maps[k];
	}
	for (size_t i = 0; i < p->nframes; i++) {
		const struct pfrec *f = &p->frames[i];
		if (f->map) { /* what the mapping's frames resolve to */
			Perftools__Profiles__Mapping *m =
			    &maps[mid[f->map - 1] - 1];
			m->has_functions |= f->name != 0;
			m->has_filenames |= funcs[loc_func[i] - 1].file != 0;
			m->has_line_numbers |= loc_line[i] != 0;
		}
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = loc_func[i];
		lines[i].line = loc_line[i];
		linep[i] = &lines[i];
		perftools__profiles__location__init(&locs[i]);
		locs[i].id = i + 1;
		locs[i].mapping_id = f->map ? mid[f->map - 1] : 0;
		locs[i].address = f->addr;
		locs[i].n_line = 1;
		locs[i].line = &linep[i];
		locp[i] = &locs[i];
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct pstack *s = &p->stacks[i];
		for (uint32_t j = 0; j < s->n; j++)
			locids[s->off + j] = (uint64_t)p->fids[s->off + j] + 1;
		uint64_t c = s->count > INT64_MAX ? INT64_MAX : s->count;
		values[2 * i] = (int64_t)c;
		values[2 * i + 1] =
		    p->period_ns && c > (uint64_t)INT64_MAX / p->period_ns
			? INT64_MAX
			: (int64_t)(c * p->period_ns);
		perftools__profiles__label__init(&labels[i]);
		labels[i].key = s_comm;
		labels[i].str = comm_str[i];
		labelp[i] = &labels[i];
		perftools__profiles__sample__init(&samples[i]);
		samples[i].n_location_id = s->n;
		samples[i].location_id = locids + s->off;
		samples[i].n_value = 2;
		samples[i].value = values + 2 * i;
		samples[i].n_label = 1;
		samples[i].label = &labelp[i];
		samplep[i] = &samples[i];
	}
	free(comm_str);
	Perftools__Profiles__ValueType vt[2], per;
	Perftools__Profiles__ValueType *vtp[2] = {&vt[0], &vt[1]};
	perftools__profiles__value_type__init(&vt[0]);
	perftools__profiles__value_type__init(&vt[1]);
	perftools__profiles__value_type__init(&per);
	vt[0].type = s_samples;
	vt[0].unit = s_count;
	vt[1].type = s_cpu;
	vt[1].unit = s_ns;
	per.type = s_cpu;
	per.unit = s_ns;
	Perftools__Profiles__Profile prof;
	perftools__profiles__profile__init(&prof);
	prof.n_sample_type = 2;
	prof.sample_type = vtp;
	prof.n_sample = p->nstacks;
	prof.sample = samplep;
	prof.n_mapping = p->nmaps;
	prof.mapping = mapp;
	prof.n_location = p->nframes;
	prof.location = locp;
	prof.n_function = nfuncs;
	prof.function = fnp;
	prof.n_string_table = st.n;
	prof.string_table = st.s;
	prof.period_type = &per;
	prof.period =
	    (int64_t)(p->period_ns > INT64_MAX ? INT64_MAX : p->period_ns);
	prof.default_sample_type = s_cpu;
	size_t len = perftools__profiles__profile__get_packed_size(&prof);
	buf = malloc(len ? len : 1);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	if (perftools__profiles__profile__pack(&prof, buf) != len) {
		err = -EIO;
		goto out;
	}
	struct afile a;
	err = pf_af_open(&a, path);
	if (!err)
		err = pf_gzip_to(a.f, buf, len);
	err = pf_af_close(&a, path, err, 0);
out:
	free(buf);
	free(fn);
	free(fnp);
	free(funcs);
	free(fix.s);
	pf_strtab_free(&st);
	free(loc_func);
	free(loc_line);
	free(map_str);
	free(mid);
	free(maps);
	free(mapp);
	free(locs);
	free(locp);
	free(lines);
	free(linep);
	free(samples);
	free(samplep);
	free(labels);
	free(labelp);
	free(values);
	free(locids);
	return err;
}
