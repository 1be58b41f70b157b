/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the folded-stack readers (profile/folded.c):
 * `perf script` text as record reads it (folded_read_perf_script, frames
 * named through the jitdump's loads), folded text (folded_read), and the
 * SVG flame graph drawn from either (profile/flame.c).
 *
 * Input modes (first byte):
 *  'S': perf script text. The next byte says how many jitdump loads
 *       (0-7) to declare first, 6 bytes each (pid, index, time, code
 *       offset, code size, name), so that frames in jitted-PID-N.so are
 *       named through them; the rest is the text;
 *  anything else: the rest is folded text.
 *
 * Oracles, besides "no crash, no sanitizer report, no leak":
 *  - perf script: the stats hold together (trace_leaf_main <= trace_leaf
 *    <= through_trace <= samples, through_main <= through_trace), and the
 *    stacks' counts add up to the samples (each sample is one stack);
 *  - no stack has a newline in it, nor an empty frame (";;", a ';' at
 *    either end) when it came from perf script;
 *  - written, read back and written again, the text is the same;
 *  - the SVG is one document: its text is escaped (no '<' or '&' of a
 *    frame's name reaches it raw: every '<' opens one of the document's
 *    own elements, every '&' an entity) and it ends with "</svg>\n".
 */
#include "folded.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sum {
	uint64_t count, stacks;
	int perf;
};

static void check_stack(const char *stack, uint64_t count, void *ctx)
{
	struct sum *s = ctx;
	s->count += count;
	s->stacks++;
	size_t n = strlen(stack);
	if (strchr(stack, '\n') ||
	    (s->perf && (strstr(stack, ";;") || (n && stack[n - 1] == ';')))) {
		fprintf(stderr, "oracle: stack \"%s\"\n", stack);
		abort();
	}
}

static char *text_of(const struct folded *f, size_t *len)
{
	char *buf = NULL;
	FILE *o = open_memstream(&buf, len);
	if (!o || folded_write(f, o))
		abort();
	fclose(o);
	return buf;
}

static void check_svg(const char *svg, size_t len)
{
	static const char *const tags[] = {
	    "<?xml ", "<svg ",	 "</svg>", "<style>", "</style>", "<rect ",
	    "<text ", "</text>", "<g>",	   "</g>",    "<title>",  "</title>"};
	for (size_t i = 0; i < len; i++) {
		const char *p = svg + i;
		if (*p == '<') {
			size_t k = 0;
			while (k < sizeof(tags) / sizeof(tags[0]) &&
			       strncmp(p, tags[k], strlen(tags[k])))
				k++;
			if (k == sizeof(tags) / sizeof(tags[0])) {
				fprintf(stderr,
					"oracle: svg: raw '<' at %zu: %.40s\n",
					i, p);
				abort();
			}
		} else if (*p == '&' && strncmp(p, "&lt;", 4) &&
			   strncmp(p, "&gt;", 4) && strncmp(p, "&amp;", 5) &&
			   strncmp(p, "&quot;", 6) && strncmp(p, "&#", 2)) {
			fprintf(stderr, "oracle: svg: raw '&' at %zu: %.40s\n",
				i, p);
			abort();
		}
	}
	if (len < 7 || strcmp(svg + len - 7, "</svg>\n")) {
		fprintf(stderr, "oracle: svg does not end with </svg>\n");
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n == 0 || n > (256u << 10))
		return 0;
	struct folded *f = folded_new();
	if (!f)
		abort();
	struct sum s = {0};
	struct folded_stats st;
	if (d[0] == 'S') {
		s.perf = 1;
		size_t at = 1, nl = n > 1 ? d[1] % 8 : 0;
		at = 2;
		for (size_t i = 0; i < nl && at + 6 <= n; i++, at += 6) {
			const uint8_t *q = d + at;
			char name[32];
			snprintf(name, sizeof(name), "TRACE_%u::a%s.lua:%u",
				 q[1], q[5] & 1 ? ";;<&" : "", q[5]);
			uint64_t code = 0x40000000u + q[3] * 0x40u;
			if (folded_add_load(f, 100 + q[0] % 4, q[1] % 8, q[2],
					    code, code, code + q[4], name))
				abort();
		}
		FILE *in = fmemopen((void *)(d + at), n - at, "r");
		if (n == at || !in) {
			if (in)
				fclose(in);
			folded_free(f);
			return 0;
		}
		int err = folded_read_perf_script(f, in, &st);
		fclose(in);
		if (err) {
			folded_free(f);
			return 0;
		}
		if (st.trace_leaf_main > st.trace_leaf ||
		    st.trace_leaf > st.through_trace ||
		    st.through_trace > st.samples ||
		    st.through_main > st.through_trace) {
			fprintf(stderr, "oracle: stats do not hold together\n");
			abort();
		}
	} else {
		FILE *in = fmemopen((void *)(d + 1), n - 1, "r");
		if (n == 1 || !in) {
			if (in)
				fclose(in);
			folded_free(f);
			return 0;
		}
		int err = folded_read(f, in);
		fclose(in);
		if (err) {
			folded_free(f);
			return 0;
		}
	}
	folded_each(f, check_stack, &s);
	if (s.perf && s.count != st.samples) {
		fprintf(stderr, "oracle: %llu stacks' counts, %llu samples\n",
			(unsigned long long)s.count,
			(unsigned long long)st.samples);
		abort();
	}
	/* written, read back, written again: the same text */
	size_t l1, l2;
	char *t1 = text_of(f, &l1);
	struct folded *g = folded_new();
	FILE *in = fmemopen(t1, l1 ? l1 : 1, "r");
	if (!g || !in || folded_read(g, in))
		abort();
	fclose(in);
	char *t2 = text_of(g, &l2);
	if (l1 != l2 || memcmp(t1, t2, l1)) {
		fprintf(stderr, "oracle: read back, the text changed\n");
		abort();
	}
	/* the flame graph */
	char *svg = NULL;
	size_t ls;
	FILE *o = open_memstream(&svg, &ls);
	if (!o || flame_svg(f, o, "fuzz <&> title"))
		abort();
	fclose(o);
	check_svg(svg, ls);
	free(svg);
	free(t1);
	free(t2);
	folded_free(g);
	folded_free(f);
	return 0;
}
