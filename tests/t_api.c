/* SPDX-License-Identifier: MIT */
/*
 * The public API's conventions (sframe/jitsframe.h): the options rule of
 * every opts struct, error causes through jsf_strerror, the return-address
 * rule as data in the row model (checked against the system's libsframe
 * on an exported section: an independent decoder), the architecture in
 * opts, and the version query.
 */
#include "harness.h"
#include "jitsframe.h"

#include <errno.h>
#include <fcntl.h>
#include <sframe-api.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static struct jsf_region *mk(const char *name, const struct jsf_region_opts *o,
			     int *err)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	struct jsf_region *r = NULL;
	*err = jsf_region_create(&r, p, o);
	return r;
}

static const struct jsf_row sp8 = {
    .offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/jsf-t_api-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	int err;

	CASE("opts: an older caller's smaller sz is accepted")
	{
		/* a caller built when the struct ended after `mode` */
		struct jsf_region_opts o = {
		    .sz = offsetof(struct jsf_region_opts, flags),
		    .mode = 0640};
		struct jsf_region *r = mk("old", &o, &err);
		CHECK_EQ(err, 0);
		struct jsf_region_stats st = {.sz = sizeof(st)};
		CHECK_EQ(jsf_region_stats(r, &st), 0);
		CHECK(st.file_size > 0, "file size %llu",
		      (unsigned long long)st.file_size);
		jsf_region_destroy(r);
		/* sz covering nothing but itself: all defaults */
		o.sz = sizeof(size_t);
		r = mk("old2", &o, &err);
		CHECK_EQ(err, 0);
		jsf_region_destroy(r);
	}

	CASE("opts: a region written for another process names that producer "
	     "and creation time; by default this process and now")
	{
		uint64_t t0 = jsf_now_ns();
		struct jsf_region_opts o = {.sz = sizeof(o),
					    .producer_pid = 4242424,
					    .create_ns = 12345};
		struct jsf_region *r = mk("proxy", &o, &err);
		CHECK_EQ(err, 0);
		CHECK_EQ(jsf_region_add(r, 0x1000, 16, &sp8, 1, 20000), 0);
		jsf_region_destroy(r);
		struct jsf_region_opts d = {.sz = sizeof(d)};
		struct jsf_region *r2 = mk("self", &d, &err);
		CHECK_EQ(err, 0);
		jsf_region_destroy(r2);
		const char *names[2] = {"proxy", "self"};
		for (int k = 0; k < 2; k++) {
			char p[128];
			snprintf(p, sizeof(p), "%s/%s", dir, names[k]);
			struct jsf_view *v;
			struct jsf_view_info vi = {.sz = sizeof(vi)};
			CHECK_EQ(jsf_view_open(&v, p), 0);
			CHECK_EQ(jsf_view_info(v, &vi), 0);
			if (!k)
				CHECK(vi.producer_pid == 4242424 &&
					  vi.create_ns == 12345 && vi.closed,
				      "proxy: pid %u create %llu",
				      vi.producer_pid,
				      (unsigned long long)vi.create_ns);
			else
				CHECK(vi.producer_pid == (uint32_t)getpid() &&
					  vi.create_ns >= t0,
				      "self: pid %u create %llu",
				      vi.producer_pid,
				      (unsigned long long)vi.create_ns);
			jsf_view_close(v);
		}
	}

	CASE("jsf_region_info: a live and a closed region's header facts as "
	     "jsf_view_info gives them, counts 0; jsf_view_info with sz "
	     "short of the counts leaves them untouched")
	{
		struct jsf_region_opts o = {.sz = sizeof(o)};
		struct jsf_region *r = mk("info", &o, &err);
		CHECK_EQ(err, 0);
		for (uint64_t a = 0x1000; a < 0x4000; a += 0x1000)
			CHECK_EQ(jsf_region_add(r, a, 16, &sp8, 1, 0), 0);
		char p[128];
		snprintf(p, sizeof(p), "%s/info", dir);
		for (int closed = 0; closed < 2; closed++) {
			if (closed)
				jsf_region_destroy(r);
			struct jsf_view *v;
			CHECK_EQ(jsf_view_open(&v, p), 0);
			struct jsf_view_info a = {.sz = sizeof(a)},
					     b = {.sz = sizeof(b)},
					     c = {.sz = offsetof(
						      struct jsf_view_info,
						      live_funcs),
						  .live_funcs = 77,
						  .logged_funcs = 78};
			CHECK_EQ(jsf_view_info(v, &a), 0);
			CHECK_EQ(jsf_view_info(v, &c), 0);
			jsf_view_close(v);
			CHECK_EQ(jsf_region_info(p, &b), 0);
			CHECK(a.live == !closed && a.closed == !!closed &&
				  a.live_funcs == 3 && a.logged_funcs == 3,
			      "%s view: live %d closed %d funcs %u/%u",
			      closed ? "closed" : "live", a.live, a.closed,
			      a.live_funcs, a.logged_funcs);
			CHECK(b.abi_version == a.abi_version &&
				  b.arch == a.arch &&
				  b.producer_pid == a.producer_pid &&
				  b.live == a.live && b.closed == a.closed &&
				  b.recovered == a.recovered &&
				  b.create_ns == a.create_ns &&
				  b.close_ns == a.close_ns &&
				  b.file_size == a.file_size &&
				  b.seq == a.seq && b.live_funcs == 0 &&
				  b.logged_funcs == 0,
			      "%s: region_info differs from the view's",
			      closed ? "closed" : "live");
			CHECK(c.live == a.live && c.seq == a.seq &&
				  c.live_funcs == 77 && c.logged_funcs == 78,
			      "short sz: counts %u/%u", c.live_funcs,
			      c.logged_funcs);
		}
		struct jsf_view_info z = {.sz = sizeof(z)};
		CHECK_EQ(jsf_region_info("/nonexistent/region", &z), -ENOENT);
		CHECK_EQ(jsf_region_info(p, NULL), -EINVAL);
		z.sz = 4;
		CHECK_EQ(jsf_region_info(p, &z), -EINVAL);
	}

	CASE("opts: a newer caller's unknown non-zero tail is refused, a zero "
	     "tail accepted, sz below its own field refused")
	{
		struct {
			struct jsf_region_opts o;
			uint64_t future;
		} big = {{.sz = sizeof(big)}, 0};
		struct jsf_region *r = mk("new0", &big.o, &err);
		CHECK_EQ(err, 0);
		jsf_region_destroy(r);
		big.future = 1;
		r = mk("new1", &big.o, &err);
		CHECK_EQ(err, -EINVAL);
		CHECK(r == NULL, "region made");
		CHECK(strstr(jsf_strerror(err), "jsf_region_opts") &&
			  strstr(jsf_strerror(err), "newer caller"),
		      "strerror: %s", jsf_strerror(err));
		struct jsf_region_opts tiny = {.sz = 4};
		r = mk("tiny", &tiny, &err);
		CHECK_EQ(err, -EINVAL);
		CHECK(strstr(jsf_strerror(err), "smaller than"), "strerror: %s",
		      jsf_strerror(err));
		/* the same rule for export options */
		r = mk("exp", NULL, &err);
		CHECK_EQ(jsf_region_add(r, 0x10000, 16, &sp8, 1, 0), 0);
		struct jsf_view *v = NULL;
		CHECK_EQ(jsf_view_open(&v, jsf_region_path(r)), 0);
		struct {
			struct jsf_export_opts o;
			uint64_t future;
		} eo = {{.sz = sizeof(eo)}, 7};
		void *buf = NULL;
		size_t len = 0;
		CHECK_EQ(jsf_view_export(v, &eo.o, &buf, &len, NULL), -EINVAL);
		CHECK(strstr(jsf_strerror(-EINVAL), "jsf_export_opts"),
		      "strerror: %s", jsf_strerror(-EINVAL));
		eo.future = 0;
		CHECK_EQ(jsf_view_export(v, &eo.o, &buf, &len, NULL), 0);
		free(buf);
		jsf_view_close(v);
		jsf_region_destroy(r);
	}

	CASE("jsf_strerror names the real cause of each -EINVAL and -EEXIST")
	{
		struct jsf_region *r = mk("err", NULL, &err);
		CHECK_EQ(err, 0);
		struct jsf_row two[2] = {sp8, sp8};
		two[1].offset = 0;
		CHECK_EQ(jsf_region_add(r, 0x1000, 16, two, 2, 0), -EINVAL);
		CHECK(strstr(jsf_strerror(-EINVAL), "row 1") &&
			  strstr(jsf_strerror(-EINVAL), "strictly increase"),
		      "strerror: %s", jsf_strerror(-EINVAL));
		two[1].offset = 20;
		CHECK_EQ(jsf_region_add(r, 0x1000, 16, two, 2, 0), -EINVAL);
		CHECK(strstr(jsf_strerror(-EINVAL), "outside the 16-byte"),
		      "strerror: %s", jsf_strerror(-EINVAL));
		CHECK_EQ(jsf_region_add(r, 0x1000, 0, &sp8, 1, 0), -EINVAL);
		CHECK(strstr(jsf_strerror(-EINVAL), "empty"), "strerror: %s",
		      jsf_strerror(-EINVAL));
		CHECK_EQ(jsf_region_add(r, 0x1000, 16, &sp8, 1, 0), 0);
		CHECK_EQ(jsf_region_add(r, 0x1008, 16, &sp8, 1, 0), -EEXIST);
		CHECK(strstr(jsf_strerror(-EEXIST), "0x1008") &&
			  strstr(jsf_strerror(-EEXIST), "0x1000"),
		      "strerror: %s", jsf_strerror(-EEXIST));
		/* a code the last failure was not: the generic text */
		CHECK(!strcmp(jsf_strerror(-ERANGE),
			      "addresses out of range for the chosen encoding"),
		      "strerror(-ERANGE): %s", jsf_strerror(-ERANGE));
		jsf_region_destroy(r);
		/* a view's failure: the same text as jsf_view_error */
		struct jsf_view *v = NULL;
		char p[128];
		snprintf(p, sizeof(p), "%s/notaregion", dir);
		FILE *f = fopen(p, "w");
		fputs("hello", f);
		fclose(f);
		err = jsf_view_open(&v, p);
		CHECK_EQ(err, -EBADMSG);
		CHECK(!strcmp(jsf_strerror(err), jsf_view_error()) &&
			  strstr(jsf_view_error(), "not a region"),
		      "strerror %s, view_error %s", jsf_strerror(err),
		      jsf_view_error());
	}

	CASE("return-address rule: stated or default accepted, inexpressible "
	     "refused, read back as data; libsframe agrees")
	{
		struct jsf_region *r = mk("ra", NULL, &err);
		CHECK_EQ(err, 0);
		struct jsf_row rows[2] = {
		    {.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8},
		    {.offset = 4,
		     .cfa_base = JSF_SP,
		     .cfa_offset = 24,
		     .ra_rule = JSF_RA_CFA,
		     .ra_offset = -8}};
		CHECK_EQ(jsf_region_add(r, 0x20000, 32, rows, 2, 0), 0);
		struct jsf_row bad = rows[1];
		bad.offset = 0;
		bad.ra_offset = -16;
		CHECK_EQ(jsf_region_add(r, 0x30000, 32, &bad, 1, 0), -EINVAL);
		CHECK(strstr(jsf_strerror(-EINVAL), "return-address rule") &&
			  strstr(jsf_strerror(-EINVAL), "x86-64"),
		      "strerror: %s", jsf_strerror(-EINVAL));
		bad.ra_rule = JSF_RA_REG;
		CHECK_EQ(jsf_region_add(r, 0x30000, 32, &bad, 1, 0), -EINVAL);
		bad.ra_rule = 9;
		CHECK_EQ(jsf_region_add(r, 0x30000, 32, &bad, 1, 0), -EINVAL);
		/* an outermost row has no return address to describe */
		struct jsf_row outer = {.outermost = true, .ra_rule = 9};
		CHECK_EQ(jsf_region_add(r, 0x30000, 32, &outer, 1, 0), 0);

		struct jsf_view *v = NULL;
		CHECK_EQ(jsf_view_open(&v, jsf_region_path(r)), 0);
		struct jsf_row got;
		for (uint64_t pc = 0x20000; pc < 0x20020; pc += 3) {
			memset(&got, 0x55, sizeof(got));
			CHECK_EQ(jsf_view_lookup(v, pc, 0, NULL, NULL, &got),
				 0);
			CHECK_EQ(got.ra_rule, JSF_RA_CFA);
			CHECK_EQ(got.ra_offset, -8);
			CHECK_EQ(got.cfa_offset, pc < 0x20004 ? 8 : 24);
		}
		/* the same rule, from an independent decoder of the same data:
		 * libsframe reads the V1 export's fixed RA offset */
		struct jsf_export_opts eo = {.sz = sizeof(eo), .version = 1};
		void *buf = NULL;
		size_t len = 0;
		CHECK_EQ(jsf_view_export(v, &eo, &buf, &len, NULL), 0);
		int e = 0;
		sframe_decoder_ctx *ctx = sframe_decode(buf, len, &e);
		CHECK(ctx && e == 0, "libsframe: err %d", e);
		if (ctx) {
			CHECK_EQ(sframe_decoder_get_fixed_ra_offset(ctx),
				 got.ra_offset);
			sframe_decoder_free(&ctx);
		}
		free(buf);
		jsf_view_close(v);
		jsf_region_destroy(r);
	}

	CASE("architecture in opts: x86-64 by id or default, AArch64 and "
	     "unknown ids refused with their name")
	{
		struct jsf_region_opts o = {.sz = sizeof(o),
					    .arch = JSF_ARCH_X86_64};
		struct jsf_region *r = mk("x86", &o, &err);
		CHECK_EQ(err, 0);
		jsf_region_destroy(r);
		o.arch = JSF_ARCH_AARCH64;
		r = mk("a64", &o, &err);
		CHECK_EQ(err, -EOPNOTSUPP);
		CHECK(strstr(jsf_strerror(err), "AArch64"), "strerror: %s",
		      jsf_strerror(err));
		o.arch = 77;
		r = mk("a77", &o, &err);
		CHECK_EQ(err, -EOPNOTSUPP);
		CHECK(strstr(jsf_strerror(err), "unknown"), "strerror: %s",
		      jsf_strerror(err));
	}

	CASE("1.1: jsf_region_add_named and jsf_view_name (errors, NULL "
	     "name), JSF_REGION_NO_MLOCK a known flag, stats' new tail "
	     "filled only for a caller whose sz reaches it")
	{
		struct jsf_region_opts o = {.sz = sizeof(o),
					    .flags = JSF_REGION_NO_MLOCK};
		struct jsf_region *r = mk("named", &o, &err);
		CHECK_EQ(err, 0);
		CHECK_EQ(jsf_region_add_named(NULL, 0x1000, 8, &sp8, 1, "x", 0),
			 -EINVAL);
		CHECK_EQ(jsf_region_add_named(r, 0x1000, 8, &sp8, 1, "f", 0),
			 0);
		CHECK_EQ(jsf_region_add_named(r, 0x1004, 8, &sp8, 1, "g", 0),
			 -EEXIST);
		CHECK_EQ(jsf_region_add_named(r, 0x2000, 0, &sp8, 1, "g", 0),
			 -EINVAL);
		CHECK_EQ(jsf_region_add_named(r, 0x3000, 8, &sp8, 1, NULL, 0),
			 0);
		struct jsf_view *v = NULL;
		CHECK_EQ(jsf_view_open(&v, jsf_region_path(r)), 0);
		char b[8];
		CHECK_EQ(jsf_view_name(v, 0x1003, 0, b, sizeof(b)), 1);
		CHECK(!strcmp(b, "f"), "'%s'", b);
		CHECK_EQ(jsf_view_name(v, 0x3000, 0, b, sizeof(b)), -ENODATA);
		CHECK_EQ(jsf_view_name(v, 0x2000, 0, b, sizeof(b)), -ENOENT);
		jsf_view_close(v);
		struct jsf_region_stats st;
		memset(&st, 0xab, sizeof(st));
		st.sz = offsetof(struct jsf_region_stats, locked_bytes);
		CHECK_EQ(jsf_region_stats(r, &st), 0);
		CHECK_EQ(st.live_funcs, 2);
		CHECK_EQ(st.locked_bytes, 0xababababababababull);
		st.sz = sizeof(st);
		CHECK_EQ(jsf_region_stats(r, &st), 0);
		CHECK_EQ(st.locked_bytes, 0);
		CHECK_EQ(st.lock_failures, 0);
		CHECK_EQ(st.lock_errno, 0);
		jsf_region_destroy(r);
		o.flags = 1u << 7;
		r = mk("badflag", &o, &err);
		CHECK_EQ(err, -EINVAL);
	}

	CASE("1.7: jsf_region_append_runtime appends to the runtime area "
	     "(set_runtime's or its own first bytes), the length after the "
	     "bytes; never past 3072 bytes; set_runtime once")
	{
		struct jsf_region_opts o = {.sz = sizeof(o)};
		struct jsf_region *r = mk("rt", &o, &err);
		CHECK_EQ(err, 0);
		uint8_t a[100], b[3000], c[2972];
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (uint8_t)(i * 7 + 1);
		memset(a, 0xa5, sizeof(a));
		memset(c, 0x5a, sizeof(c));
		CHECK_EQ(jsf_region_append_runtime(NULL, a, 1), -EINVAL);
		CHECK_EQ(jsf_region_append_runtime(r, NULL, 1), -EINVAL);
		CHECK_EQ(jsf_region_append_runtime(r, a, 0), -EINVAL);
		CHECK_EQ(jsf_region_append_runtime(r, b, 3073), -EINVAL);
		CHECK_EQ(jsf_region_set_runtime(r, a, sizeof(a)), 0);
		CHECK_EQ(jsf_region_set_runtime(r, a, sizeof(a)), -EEXIST);
		/* 100 + 3000 > 3072: nothing written */
		CHECK_EQ(jsf_region_append_runtime(r, b, sizeof(b)), -ENOSPC);
		CHECK_EQ(jsf_region_append_runtime(r, b, 2000), 0);
		CHECK_EQ(jsf_region_append_runtime(r, c, 973), -ENOSPC);
		CHECK_EQ(jsf_region_append_runtime(r, c, 972), 0); /* full */
		CHECK_EQ(jsf_region_append_runtime(r, c, 1), -ENOSPC);
		char p[128];
		snprintf(p, sizeof(p), "%s/rt", dir);
		FILE *f = fopen(p, "rb");
		uint8_t h[4096] = {0};
		CHECK(f && fread(h, 1, sizeof(h), f) == sizeof(h), "read %s",
		      p);
		if (f)
			fclose(f);
		uint32_t feat, len;
		memcpy(&feat, h + 96, 4);
		memcpy(&len, h + 100, 4);
		CHECK_EQ(feat, 1);
		CHECK_EQ(len, 3072);
		CHECK(!memcmp(h + 1024, a, 100) && !memcmp(h + 1124, b, 2000) &&
			  !memcmp(h + 3124, c, 972),
		      "the area is the three appends in order");
		jsf_region_destroy(r);
		/* an append begins the area of a region that has none */
		r = mk("rt2", &o, &err);
		CHECK_EQ(jsf_region_append_runtime(r, b, 10), 0);
		CHECK_EQ(jsf_region_set_runtime(r, a, 1), -EEXIST);
		snprintf(p, sizeof(p), "%s/rt2", dir);
		f = fopen(p, "rb");
		CHECK(f && fread(h, 1, sizeof(h), f) == sizeof(h), "read %s",
		      p);
		if (f)
			fclose(f);
		memcpy(&feat, h + 96, 4);
		memcpy(&len, h + 100, 4);
		CHECK(feat == 1 && len == 10 && !memcmp(h + 1024, b, 10),
		      "feat %u len %u", feat, len);
		/* the validator: records of [tag, version, size >= 8] tiling
		 * the area (docs/ABI.md 1.6); b's bytes are not (their first
		 * size word: 12,843) */
		char vm[512];
		CHECK(jsf_validate_region(p, vm, sizeof(vm)) == -EBADMSG &&
			  strstr(vm, "runtime area"),
		      "%s", vm);
		jsf_region_destroy(r);
		r = mk("rt3", &o, &err);
		uint8_t rec[24] = {'A', 'B', 'C', 'D', 1, 0, 16, 0};
		memcpy(rec + 16, "EFGH\1\0\10\0", 8); /* a second, of 8 */
		CHECK_EQ(jsf_region_append_runtime(r, rec, 16), 0);
		CHECK_EQ(jsf_region_append_runtime(r, rec + 16, 8), 0);
		snprintf(p, sizeof(p), "%s/rt3", dir);
		CHECK(jsf_validate_region(p, vm, sizeof(vm)) == 0, "%s", vm);
		rec[6] = 4; /* a size under 8: the area does not decode */
		CHECK_EQ(jsf_region_append_runtime(r, rec, 16), 0);
		CHECK(jsf_validate_region(p, vm, sizeof(vm)) == -EBADMSG &&
			  strstr(vm, "the record at 24"),
		      "%s", vm);
		jsf_region_destroy(r);
	}

	CASE("1.8: a runtime extension (runtime_ext, docs/ABI.md 1.7): an "
	     "append the header page cannot hold goes whole after the page, "
	     "its length after its bytes; blocks never overlap it, through "
	     "rebuilds; the validator checks it; sizes past 1 MiB or a "
	     "quarter of max_size refused")
	{
		struct jsf_region_opts o = {.sz = sizeof(o),
					    .runtime_ext = 5000};
		struct jsf_region *r = mk("rtx", &o, &err);
		CHECK_EQ(err, 0);
		static uint8_t a[3000], b[5000], c[3200];
		for (size_t i = 0; i < sizeof(b); i++)
			b[i] = (uint8_t)(i * 13 + 5);
		/* records of [tag, version, size]: the validator's framing */
		memcpy(a, "AAAA\1\0", 6), a[6] = 3000 & 255, a[7] = 3000 >> 8;
		memcpy(c, "CCCC\1\0", 6), c[6] = 3200 & 255, c[7] = 3200 >> 8;
		CHECK_EQ(jsf_region_append_runtime(r, a, sizeof(a)), 0);
		CHECK_EQ(jsf_region_append_runtime(r, c, sizeof(c)), 0);
		/* the extension: 5000 rounded up to 8192, 6400 used */
		CHECK_EQ(jsf_region_append_runtime(r, c, sizeof(c)), 0);
		CHECK_EQ(jsf_region_append_runtime(r, c, 1793), -ENOSPC);
		CHECK_EQ(jsf_region_append_runtime(r, b, 8193), -EINVAL);
		CHECK_EQ(jsf_region_set_runtime(r, c, 1), -EEXIST);
		/* rebuilds: thousands of functions, each add */
		for (uint64_t i = 0; i < 6000; i++)
			CHECK(jsf_region_add(r, 0x100000 + 64 * i, 16, &sp8, 1,
					     0) == 0,
			      "add %llu", (unsigned long long)i);
		char p[128];
		snprintf(p, sizeof(p), "%s/rtx", dir);
		static uint8_t h[4096 + 8192];
		FILE *f = fopen(p, "rb");
		CHECK(f && fread(h, 1, sizeof(h), f) == sizeof(h), "read %s",
		      p);
		if (f)
			fclose(f);
		uint32_t feat, len, cap, xl;
		uint64_t sec;
		memcpy(&feat, h + 96, 4);
		memcpy(&len, h + 100, 4);
		memcpy(&cap, h + 104, 4);
		memcpy(&xl, h + 108, 4);
		memcpy(&sec, h + 80, 8);
		CHECK(feat == 3 && len == 3000 && cap == 8192 && xl == 6400,
		      "feat %u len %u cap %u xlen %u", feat, len, cap, xl);
		CHECK(sec >= 4096 + 8192, "the block at %llu",
		      (unsigned long long)sec);
		CHECK(!memcmp(h + 1024, a, 3000) &&
			  !memcmp(h + 4096, c, 3200) &&
			  !memcmp(h + 4096 + 3200, c, 3200),
		      "the page's area and the extension, as appended, after "
		      "the rebuilds");
		char vm[512];
		CHECK(jsf_validate_region(p, vm, sizeof(vm)) == 0, "%s", vm);
		struct jsf_view *v;
		CHECK_EQ(jsf_view_open(&v, p), 0);
		struct jsf_view_info vi = {.sz = sizeof(vi)};
		CHECK(jsf_view_info(v, &vi) == 0 && vi.live_funcs == 6000,
		      "%llu live", (unsigned long long)vi.live_funcs);
		jsf_view_close(v);
		jsf_region_destroy(r);
		/* a damaged extension: a record past its length */
		int fd = open(p, O_RDWR);
		uint16_t bad = 3300;
		CHECK(fd >= 0 && pwrite(fd, &bad, 2, 4096 + 3200 + 6) == 2,
		      "damage %s", p);
		close(fd);
		CHECK(jsf_validate_region(p, vm, sizeof(vm)) == -EBADMSG &&
			  strstr(vm, "runtime extension"),
		      "%s", vm);
		o.runtime_ext = (1u << 20) + 1;
		r = mk("rtx2", &o, &err);
		CHECK_EQ(err, -EINVAL);
		o.runtime_ext = 4096, o.max_size = 64 * 1024;
		r = mk("rtx3", &o, &err);
		CHECK_EQ(err, 0);
		jsf_region_destroy(r);
		o.runtime_ext = 16385;
		r = mk("rtx4", &o, &err);
		CHECK_EQ(err, -EINVAL);
		/* without one: unchanged, the block right after the page */
		o.runtime_ext = 0, o.max_size = 0;
		r = mk("rtx5", &o, &err);
		CHECK_EQ(jsf_region_append_runtime(r, c, 3072), 0);
		CHECK_EQ(jsf_region_append_runtime(r, c, 1), -ENOSPC);
		snprintf(p, sizeof(p), "%s/rtx5", dir);
		f = fopen(p, "rb");
		CHECK(f && fread(h, 1, 4096, f) == 4096, "read %s", p);
		if (f)
			fclose(f);
		memcpy(&feat, h + 96, 4);
		memcpy(&sec, h + 80, 8);
		CHECK(feat == 1 && sec == 4096, "feat %u, block at %llu", feat,
		      (unsigned long long)sec);
		jsf_region_destroy(r);
	}

	CASE("version: the loaded library's, as number and string")
	{
		char want[32];
		snprintf(want, sizeof(want), "%d.%d.%d", JSF_VERSION_MAJOR,
			 JSF_VERSION_MINOR, JSF_VERSION_PATCH);
		CHECK(!strcmp(jsf_version_string(), want), "%s vs %s",
		      jsf_version_string(), want);
		CHECK_EQ(jsf_version(), (JSF_VERSION_MAJOR << 16) |
					    (JSF_VERSION_MINOR << 8) |
					    JSF_VERSION_PATCH);
	}

	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		return 1;
	return h_exit();
}
