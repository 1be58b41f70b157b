/* SPDX-License-Identifier: MIT */
/*
 * Our exports read by independent decoders:
 *  - the V1 export decoded by the system's libsframe (binutils 2.40) must
 *    answer every pc exactly like jsf_view_lookup and the brute-force model
 *    (tests/model.h), and describe every function and row exactly;
 *  - the same section inside a hand-written ELF file must be listed
 *    correctly by `objdump --sframe`;
 *  - the V3 export must pass jsf_validate_sframe at the address it was laid
 *    out for, and corrupted copies of it must be rejected.
 */
#include "model.h"

#include <elf.h>
#include <errno.h>
#include <sframe-api.h>
#include <unistd.h>

#ifndef SHT_GNU_SFRAME
#define SHT_GNU_SFRAME 0x6ffffff4 /* what binutils 2.40 gas emits */
#endif

static char dir[256];

static const char *tmp_path(const char *name)
{
	static char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return p;
}

static void shuffle(uint32_t *o, uint32_t n)
{
	for (uint32_t i = n; i > 1; i--) {
		uint32_t j = h_below(i), t = o[i - 1];
		o[i - 1] = o[j];
		o[j] = t;
	}
}

/*
 * n functions in ascending address order from `base`, with gaps (often
 * none, sometimes large), sizes around the FRE-type boundaries and a few
 * large ones (4-byte FRE start offsets). The model's rows include outermost
 * rows, FP-based rows and offsets beyond 16 bits.
 */
static void make_set(struct model *m, uint32_t n, uint64_t base)
{
	static const uint32_t edge[] = {1,     2,     255,   256,   257,
					65535, 65536, 65537, 100000};
	uint64_t at = base;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t g = h_below(10); /* 0-3: adjacent to the previous */
		if (g >= 4 && g < 9)
			at += 1 + h_below(64);
		else if (g == 9)
			at += 1 + h_below(1 << 20);
		uint32_t size;
		uint32_t s = h_below(16);
		if (s == 0)
			size = edge[h_below(sizeof(edge) / sizeof(edge[0]))];
		else if (s == 1)
			size = 1 + h_below(200000);
		else
			size = 1 + h_below(600);
		m_add(m, at, size, 0);
		at += size;
	}
	/* last, one function whose rows sit on every data-word size edge */
	static const int32_t w[] = {
	    0,	   -1,	  127,	  128,	  -128,	 -129,	255,	   256,
	    32767, 32768, -32768, -32769, 65535, 65536, INT32_MAX, INT32_MIN};
	enum { NW = sizeof(w) / sizeof(w[0]) };
	/* each edge as the CFA word alone, as the FP word next to a 1-byte
	 * CFA word, and paired with another edge (the wider sets the size) */
	struct mfunc *f = m_add(m, at + 64, 2 * 3 * NW, 0);
	free(f->rows);
	f->rows = calloc(3 * NW, sizeof(*f->rows));
	f->nrows = 3 * NW;
	for (uint32_t i = 0; i < 3 * NW; i++) {
		struct jsf_row *r = &f->rows[i];
		uint32_t j = i % NW, pass = i / NW;
		r->offset = 2 * i;
		r->cfa_base = i % 3 ? JSF_SP : JSF_FP;
		r->cfa_offset = pass == 1 ? 16 : w[j];
		r->has_fp = pass > 0;
		r->fp_offset = pass == 1 ? w[j] : w[NW - 1 - j];
	}
}

static int add_model(struct jsf_region *r, const struct mfunc *f)
{
	return jsf_region_add(r, f->start, f->size, f->rows, f->nrows, f->add);
}

/* A region holding a random set, some of it removed (t = 1..n adds). */
struct fixture {
	struct model m;
	struct jsf_region *r;
	const char *path;
	uint64_t t_all; /* a time at which every function was live */
	uint32_t nlive;
	uint64_t lo, hi;	 /* live extent [lo, hi) */
	uint64_t all_lo, all_hi; /* extent of every function */
};

static int fixture_make(struct fixture *fx, const char *name, uint32_t n,
			uint64_t base)
{
	memset(fx, 0, sizeof(*fx));
	fx->path = strdup(tmp_path(name));
	make_set(&fx->m, n, base);
	n = fx->m.n; /* with the word-size edge function */
	uint32_t *o = calloc(n, sizeof(*o));
	for (uint32_t i = 0; i < n; i++)
		o[i] = i;
	shuffle(o, n);
	int rc = jsf_region_create(&fx->r, fx->path, NULL);
	CHECK_EQ(rc, 0);
	if (rc) {
		fx->r = NULL;
		free(o);
		return rc;
	}
	for (uint32_t i = 0; i < n; i++) {
		struct mfunc *f = &fx->m.f[o[i]];
		f->add = 1 + i;
		rc = add_model(fx->r, f);
		CHECK(rc == 0, "add %#llx+%u: %d", (unsigned long long)f->start,
		      f->size, rc);
	}
	free(o);
	fx->t_all = n;
	/* remove about a tenth, never the first or last (the extent and the
	 * base choice stay those of the whole set) */
	uint64_t now = n;
	for (uint32_t i = 1; i + 1 < n; i++) {
		if (h_below(10))
			continue;
		fx->m.f[i].remove = ++now;
		rc = jsf_region_remove(fx->r, fx->m.f[i].start, now);
		CHECK(rc == 0, "remove %u: %d", i, rc);
	}
	fx->lo = fx->all_lo = UINT64_MAX;
	for (uint32_t i = 0; i < n; i++) {
		const struct mfunc *f = &fx->m.f[i];
		if (f->start < fx->all_lo)
			fx->all_lo = f->start;
		if (f->start + f->size > fx->all_hi)
			fx->all_hi = f->start + f->size;
		if (f->remove)
			continue;
		fx->nlive++;
		if (f->start < fx->lo)
			fx->lo = f->start;
		if (f->start + f->size > fx->hi)
			fx->hi = f->start + f->size;
	}
	return 0;
}

static void fixture_free(struct fixture *fx)
{
	if (fx->r)
		jsf_region_destroy(fx->r);
	unlink(fx->path);
	free((void *)fx->path);
	m_free(&fx->m);
}

/* --------------------------------------------- libsframe vs. model/view */

/*
 * One libsframe FRE against the model's row.
 *
 * Outermost rows are exported as FREs with no data words (fre_info 0x01:
 * offset count 0, size code 0, base register bit 1). libsframe 2.40 reports,
 * for such an FRE (found empirically, asserted for every one):
 *   - sframe_fre_get_base_reg_id: SFRAME_BASE_REG_SP (1), no error;
 *   - sframe_fre_get_cfa_offset / _fp_offset / _ra_offset: SFRAME_ERR (-1)
 *     with *errp = SFRAME_ERR_FREOFFSET_NOPRESENT;
 * (objdump prints such a row as "sp+-1  u  u"). A consumer must therefore
 * test "no CFA offset" to recognise the outermost frame.
 */
static int fre_check(sframe_decoder_ctx *ctx, sframe_frame_row_entry *fre,
		     const struct jsf_row *want, uint64_t pc)
{
	int bad = 0, e_base = 0, e_cfa = 0, e_fp = 0, e_ra = 0;
	unsigned info = fre->fre_info;
	unsigned nw = SFRAME_V1_FRE_OFFSET_COUNT(info);
	unsigned base = sframe_fre_get_base_reg_id(fre, &e_base);
	int32_t cfa = sframe_fre_get_cfa_offset(ctx, fre, &e_cfa);
	int32_t fp = sframe_fre_get_fp_offset(ctx, fre, &e_fp);
	int32_t ra = sframe_fre_get_ra_offset(ctx, fre, &e_ra);
	int e_m = 0;
	bool mangled = sframe_fre_get_ra_mangled_p(ctx, fre, &e_m);

#define FCHK(cond, ...)                           \
	do {                                      \
		if (!(cond)) {                    \
			bad++;                    \
			CHECK(cond, __VA_ARGS__); \
		}                                 \
	} while (0)
	FCHK(fre->fre_start_addr == want->offset,
	     "pc %#llx: FRE start %u, model row offset %u",
	     (unsigned long long)pc, fre->fre_start_addr, want->offset);
	FCHK(!mangled && e_m == 0, "pc %#llx: mangled RA",
	     (unsigned long long)pc);
	/* AMD64: the RA is at the header's fixed offset, never in an FRE */
	FCHK(ra == SFRAME_ERR && e_ra == SFRAME_ERR_FREOFFSET_NOPRESENT,
	     "pc %#llx: RA offset %d err %d", (unsigned long long)pc, ra, e_ra);
	FCHK(e_base == 0, "pc %#llx: base reg err %d", (unsigned long long)pc,
	     e_base);
	if (want->outermost) {
		FCHK(nw == 0, "pc %#llx: outermost row has %u offsets",
		     (unsigned long long)pc, nw);
		FCHK(base == SFRAME_BASE_REG_SP,
		     "pc %#llx: outermost base reg %u", (unsigned long long)pc,
		     base);
		FCHK(cfa == SFRAME_ERR &&
			 e_cfa == SFRAME_ERR_FREOFFSET_NOPRESENT,
		     "pc %#llx: outermost CFA %d err %d",
		     (unsigned long long)pc, cfa, e_cfa);
		FCHK(fp == SFRAME_ERR && e_fp == SFRAME_ERR_FREOFFSET_NOPRESENT,
		     "pc %#llx: outermost FP %d err %d", (unsigned long long)pc,
		     fp, e_fp);
		return bad;
	}
	FCHK(nw == (want->has_fp ? 2u : 1u), "pc %#llx: %u offsets, has_fp %d",
	     (unsigned long long)pc, nw, want->has_fp);
	unsigned want_base =
	    want->cfa_base == JSF_FP ? SFRAME_BASE_REG_FP : SFRAME_BASE_REG_SP;
	FCHK(base == want_base, "pc %#llx: base reg %u, want %u",
	     (unsigned long long)pc, base, want_base);
	FCHK(e_cfa == 0 && cfa == want->cfa_offset,
	     "pc %#llx: CFA offset %d (err %d), want %d",
	     (unsigned long long)pc, cfa, e_cfa, want->cfa_offset);
	if (want->has_fp)
		FCHK(e_fp == 0 && fp == want->fp_offset,
		     "pc %#llx: FP offset %d (err %d), want %d",
		     (unsigned long long)pc, fp, e_fp, want->fp_offset);
	else
		FCHK(e_fp == SFRAME_ERR_FREOFFSET_NOPRESENT,
		     "pc %#llx: FP offset %d present (err %d) without has_fp",
		     (unsigned long long)pc, fp, e_fp);
#undef FCHK
	return bad;
}

/*
 * Look pc up three ways at time t: the model, jsf_view_lookup, and
 * libsframe's sframe_find_fre on the export laid out at `base`.
 */
static int check_pc(const struct model *m, const struct jsf_view *v,
		    sframe_decoder_ctx *ctx, uint64_t base, uint64_t pc,
		    uint64_t t)
{
	const struct mfunc *f = m_find(m, pc, t);
	uint64_t fs = 0;
	uint32_t fz = 0;
	struct jsf_row row;
	int rc = jsf_view_lookup(v, pc, t, &fs, &fz, &row);
	sframe_frame_row_entry fre;
	memset(&fre, 0, sizeof(fre));
	int32_t rel = (int32_t)(int64_t)(pc - base);
	int lrc = sframe_find_fre(ctx, rel, &fre);
	int bad = 0;

	if (!f) {
		bad += rc != -ENOENT || lrc == 0;
		CHECK(rc == -ENOENT,
		      "pc %#llx t %llu: view found %#llx (rc %d), "
		      "model has nothing",
		      (unsigned long long)pc, (unsigned long long)t,
		      (unsigned long long)fs, rc);
		CHECK(lrc != 0,
		      "pc %#llx t %llu: libsframe found an FRE (start "
		      "%u) where the model has nothing",
		      (unsigned long long)pc, (unsigned long long)t,
		      fre.fre_start_addr);
		return bad;
	}
	struct jsf_row want = m_row(f, pc);
	bool ok =
	    rc == 0 && fs == f->start && fz == f->size && row_eq(&row, &want);
	bad += !ok;
	CHECK(ok,
	      "pc %#llx t %llu: view rc %d start %#llx/%#llx size %u/%u "
	      "row off %u/%u",
	      (unsigned long long)pc, (unsigned long long)t, rc,
	      (unsigned long long)fs, (unsigned long long)f->start, fz, f->size,
	      row.offset, want.offset);
	CHECK(lrc == 0,
	      "pc %#llx t %llu: libsframe found nothing (rc %d), "
	      "model: function %#llx+%u",
	      (unsigned long long)pc, (unsigned long long)t, lrc,
	      (unsigned long long)f->start, f->size);
	if (lrc != 0)
		return bad + 1;
	/* the function libsframe's lookup went through */
	int err = 0;
	sframe_func_desc_entry *fde =
	    sframe_get_funcdesc_with_addr(ctx, rel, &err);
	int32_t fde_start = 0;
	if (fde)
		memcpy(&fde_start, &fde->sfde_func_start_address,
		       sizeof(fde_start));
	bool fok = fde && base + (uint64_t)(int64_t)fde_start == f->start;
	bad += !fok;
	CHECK(fok, "pc %#llx: libsframe FDE start %#llx (err %d), model %#llx",
	      (unsigned long long)pc,
	      (unsigned long long)(base + (uint64_t)(int64_t)fde_start), err,
	      (unsigned long long)f->start);
	return bad + fre_check(ctx, &fre, &want, pc);
}

/* The functions live at t, in address order (the model is sorted). */
static uint32_t live_at(const struct model *m, uint64_t t,
			const struct mfunc **out)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < m->n; i++)
		if (m_alive(&m->f[i], t))
			out[n++] = &m->f[i];
	return n;
}

/*
 * The decoded section describes exactly the functions live at t. Returns
 * the number of mismatches.
 */
static int check_funcdescs(const struct model *m, sframe_decoder_ctx *ctx,
			   uint64_t base, uint64_t t)
{
	const struct mfunc **live = calloc(m->n, sizeof(*live));
	uint32_t n = live_at(m, t, live);
	CHECK_EQ(sframe_decoder_get_num_fidx(ctx), n);
	CHECK_EQ(sframe_decoder_get_abi_arch(ctx),
		 SFRAME_ABI_AMD64_ENDIAN_LITTLE);
	CHECK_EQ(sframe_decoder_get_fixed_ra_offset(ctx), -8);
	CHECK_EQ(sframe_decoder_get_fixed_fp_offset(ctx),
		 SFRAME_CFA_FIXED_FP_INVALID);
	CHECK_EQ(sframe_decoder_get_hdr_size(ctx), sizeof(sframe_header));
	int bad = 0;
	for (uint32_t i = 0; i < n && bad < 5; i++) {
		const struct mfunc *f = live[i];
		uint32_t nfres = 0, fsize = 0;
		int32_t fstart = 0;
		unsigned char finfo = 0;
		int rc = sframe_decoder_get_funcdesc(ctx, i, &nfres, &fsize,
						     &fstart, &finfo);
		unsigned fre_type = SFRAME_V1_FUNC_FRE_TYPE(finfo);
		/* the start-offset width must hold every offset < size */
		bool wide = fre_type <= SFRAME_FRE_TYPE_ADDR4 &&
			    (fre_type == SFRAME_FRE_TYPE_ADDR4 ||
			     f->size - 1 < (1u << (8u << fre_type)));
		bool ok =
		    rc == 0 && base + (uint64_t)(int64_t)fstart == f->start &&
		    fsize == f->size && nfres == f->nrows && wide &&
		    SFRAME_V1_FUNC_FDE_TYPE(finfo) == SFRAME_FDE_TYPE_PCINC;
		bad += !ok;
		CHECK(ok,
		      "FDE %u: rc %d start %#llx/%#llx size %u/%u nfres "
		      "%u/%u info %#x",
		      i, rc,
		      (unsigned long long)(base + (uint64_t)(int64_t)fstart),
		      (unsigned long long)f->start, fsize, f->size, nfres,
		      f->nrows, finfo);
		if (!ok)
			continue;
		/* every row, decoded by index */
		for (uint32_t k = 0; k < f->nrows && bad < 5; k++) {
			sframe_frame_row_entry fre;
			memset(&fre, 0, sizeof(fre));
			rc = sframe_decoder_get_fre(ctx, i, k, &fre);
			CHECK(rc == 0, "FDE %u FRE %u: rc %d", i, k, rc);
			if (rc) {
				bad++;
				continue;
			}
			bad += fre_check(ctx, &fre, &f->rows[k],
					 f->start + f->rows[k].offset);
		}
	}
	free(live);
	return bad + (sframe_decoder_get_num_fidx(ctx) != n);
}

/* Every pc worth testing, at time t; returns the number of lookups. */
static uint32_t check_pcs(const struct model *m, const struct jsf_view *v,
			  sframe_decoder_ctx *ctx, uint64_t base, uint64_t t)
{
	uint32_t nlook = 0;
	int bad = 0;
	uint64_t lo = UINT64_MAX, hi = 0;
	const struct mfunc *prev = NULL;
#define LOOK(pc)                                           \
	do {                                               \
		bad += check_pc(m, v, ctx, base, (pc), t); \
		nlook++;                                   \
	} while (0)
	for (uint32_t i = 0; i < m->n && bad < 5; i++) {
		const struct mfunc *f = &m->f[i];
		if (f->start < lo)
			lo = f->start;
		if (f->start + f->size > hi)
			hi = f->start + f->size;
		/* every boundary, of live and removed functions */
		LOOK(f->start - 1);
		LOOK(f->start);
		LOOK(f->start + f->size - 1);
		LOOK(f->start + f->size);
		/* every row start, the byte before and one inside */
		for (uint32_t k = 0; k < f->nrows; k++) {
			uint64_t at = f->start + f->rows[k].offset;
			uint64_t end = k + 1 < f->nrows
					   ? f->start + f->rows[k + 1].offset
					   : f->start + f->size;
			LOOK(at);
			if (k)
				LOOK(at - 1);
			LOOK(at + h_below((uint32_t)(end - at)));
		}
		/* inside the gap before it, if any */
		if (prev && prev->start + prev->size < f->start) {
			uint64_t g0 = prev->start + prev->size;
			LOOK(g0 + h_below((uint32_t)(f->start - g0)));
		}
		prev = f;
	}
	/* random pcs over the whole extent and a little around it */
	for (int k = 0; k < 20000 && bad < 5; k++)
		LOOK(lo - 4096 + h_rand() % (hi - lo + 8192));
	/* far outside (still within libsframe's 32-bit reach of base) */
	LOOK(base - 1);
	LOOK(base - 0x10000000);
	LOOK(hi + 0x10000000);
#undef LOOK
	return nlook;
}

static sframe_decoder_ctx *decode(const void *buf, size_t len)
{
	int err = 0;
	sframe_decoder_ctx *ctx = sframe_decode(buf, len, &err);
	CHECK(ctx && err == 0, "sframe_decode: err %d (%s)", err,
	      err ? sframe_errmsg(err) : "no context");
	return ctx;
}

/* Export V1 with opts, decode with libsframe, check everything at t. */
static void v1_round(const struct fixture *fx, const struct jsf_view *v,
		     const struct jsf_export_opts *o, uint64_t t)
{
	void *buf = NULL;
	size_t len = 0;
	uint64_t base = 0xdeadbeef;
	int rc = jsf_view_export(v, o, &buf, &len, &base);
	CHECK(rc == 0, "export V1: %d (%s)", rc, jsf_strerror(rc));
	if (rc)
		return;
	uint64_t lo = t ? fx->all_lo : fx->lo, hi = t ? fx->all_hi : fx->hi;
	if (o->has_base)
		CHECK_EQ(base, o->base);
	CHECK(base <= lo, "base %#llx above the lowest start %#llx",
	      (unsigned long long)base, (unsigned long long)lo);
	CHECK(hi - base <= INT32_MAX, "base %#llx out of reach of %#llx",
	      (unsigned long long)base, (unsigned long long)hi);
	CHECK(((const uint8_t *)buf)[2] == SFRAME_VERSION_1, "version %u",
	      ((const uint8_t *)buf)[2]);
	sframe_decoder_ctx *ctx = decode(buf, len);
	/* libsframe 2.40 trusts FDE offsets and counts (a wrong one can make
	 * sframe_find_fre read out of bounds): look up pcs only in a section
	 * whose descriptors were all found right. */
	if (ctx && check_funcdescs(&fx->m, ctx, base, t) == 0) {
		uint32_t n = check_pcs(&fx->m, v, ctx, base, t);
		printf("# V1 base %#llx, %u bytes, %u lookups compared (t "
		       "%llu)\n",
		       (unsigned long long)base, (unsigned)len, n,
		       (unsigned long long)t);
	}
	if (ctx)
		sframe_decoder_free(&ctx);
	free(buf);
}

/* Just the return code of an export (the buffer, if any, is freed). */
static int export_rc(const struct jsf_view *v, const struct jsf_export_opts *o)
{
	void *buf = NULL;
	size_t len = 0;
	int rc = jsf_view_export(v, o, &buf, &len, NULL);
	if (rc == 0)
		free(buf);
	return rc;
}

static void v1_agrees(void)
{
	struct fixture fx;
	/* not page-aligned, so that the chosen base differs from it */
	if (fixture_make(&fx, "v1", 700, 0x7f3a00123457ull))
		goto out;
	struct jsf_view *v;
	int rc = jsf_view_open(&v, fx.path);
	CHECK_EQ(rc, 0);
	if (rc)
		goto out;
	/* live now, base chosen by the exporter */
	struct jsf_export_opts o = {.sz = sizeof(o), .version = 1};
	v1_round(&fx, v, &o, 0);
	/* as of before the removals: the removed ones are back */
	o.at_ns = fx.t_all;
	v1_round(&fx, v, &o, fx.t_all);
	/* an explicit base well below the code */
	o.at_ns = 0;
	o.has_base = true;
	o.base = fx.lo - 0x12345678;
	v1_round(&fx, v, &o, 0);
	/* a base above the lowest function cannot reach it */
	o.base = fx.lo + 1;
	CHECK_EQ(export_rc(v, &o), -ERANGE);
	/* nor one too far below for 32-bit starts */
	o.base = fx.lo - 0x80000000ull;
	CHECK_EQ(export_rc(v, &o), -ERANGE);
	jsf_view_close(v);
	/* post-mortem: the same answers from the closed file */
	jsf_region_destroy(fx.r);
	fx.r = NULL;
	rc = jsf_view_open(&v, fx.path);
	CHECK_EQ(rc, 0);
	if (rc)
		goto out;
	o.has_base = false;
	v1_round(&fx, v, &o, 0);
	jsf_view_close(v);
out:
	fixture_free(&fx);
}

static void v1_range(void)
{
	struct jsf_region *r;
	const char *path = tmp_path("range");
	int rc = jsf_region_create(&r, path, NULL);
	CHECK_EQ(rc, 0);
	if (rc)
		return;
	struct jsf_row row = {.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};
	CHECK_EQ(jsf_region_add(r, 0x10000, 16, &row, 1, 1), 0);
	CHECK_EQ(jsf_region_add(r, 0x10000 + 0x90000000ull, 16, &row, 1, 1), 0);
	struct jsf_view *v;
	rc = jsf_view_open(&v, path);
	CHECK_EQ(rc, 0);
	if (rc == 0) {
		struct jsf_export_opts o = {.sz = sizeof(o), .version = 1};
		CHECK_EQ(export_rc(v, &o), -ERANGE);
		o.version = 3; /* V3 starts are 64-bit */
		CHECK_EQ(export_rc(v, &o), 0);
		o.version = 1;
		CHECK_EQ(jsf_region_remove(r, 0x10000, 2), 0);
		CHECK_EQ(export_rc(v, &o), 0);
		CHECK_EQ(jsf_region_remove(r, 0x10000 + 0x90000000ull, 3), 0);
		CHECK_EQ(export_rc(v, &o), -ENOENT);
		jsf_view_close(v);
	}
	jsf_region_destroy(r);
	unlink(path);
}

/* ---------------------------------------------------------- objdump */

/* A minimal ELF64 executable: no segments, sections .sframe + .shstrtab. */
static int write_elf(const char *path, const void *sec, size_t len,
		     uint64_t addr)
{
	static const char shstr[] = "\0.sframe\0.shstrtab";
	Elf64_Ehdr eh;
	Elf64_Shdr sh[3];
	memset(&eh, 0, sizeof(eh));
	memset(sh, 0, sizeof(sh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_ident[EI_OSABI] = ELFOSABI_SYSV;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 3;
	eh.e_shstrndx = 2;
	size_t sec_off = sizeof(eh); /* 64: 8-aligned */
	size_t str_off = sec_off + len;
	size_t sh_off = (str_off + sizeof(shstr) + 7) & ~(size_t)7;
	eh.e_shoff = sh_off;
	sh[1].sh_name = 1; /* ".sframe" */
	sh[1].sh_type = SHT_GNU_SFRAME;
	sh[1].sh_flags = SHF_ALLOC;
	sh[1].sh_addr = addr;
	sh[1].sh_offset = sec_off;
	sh[1].sh_size = len;
	sh[1].sh_addralign = 8;
	sh[2].sh_name = 9; /* ".shstrtab" */
	sh[2].sh_type = SHT_STRTAB;
	sh[2].sh_offset = str_off;
	sh[2].sh_size = sizeof(shstr);
	sh[2].sh_addralign = 1;
	uint8_t *img = calloc(1, sh_off + sizeof(sh));
	if (!img)
		return -ENOMEM;
	memcpy(img, &eh, sizeof(eh));
	memcpy(img + sec_off, sec, len);
	memcpy(img + str_off, shstr, sizeof(shstr));
	memcpy(img + sh_off, sh, sizeof(sh));
	FILE *f = fopen(path, "wb");
	int rc = -errno;
	if (f) {
		rc = fwrite(img, 1, sh_off + sizeof(sh), f) ==
			     sh_off + sizeof(sh)
			 ? 0
			 : -EIO;
		if (fclose(f))
			rc = -EIO;
	}
	free(img);
	return rc;
}

/* "    " 16 hex digits "  ": one FRE of the listing */
static bool is_fre_line(const char *l)
{
	if (strncmp(l, "    ", 4) != 0)
		return false;
	for (int i = 4; i < 20; i++)
		if (!strchr("0123456789abcdef", l[i]) || !l[i])
			return false;
	return l[20] == ' ' && l[21] == ' ';
}

/*
 * objdump 2.40 --sframe prints (found by trying it):
 *     Num FDEs: 3
 *     Num FREs: 9
 *     func idx [0]: pc = 0x7f0000401010, size = 32 bytes
 *     STARTPC         CFA       FP        RA
 *     00007f0000401010  sp+8      u         u
 *     00007f000040101a  fp+16     c-16      u
 * with pc = the FDE's start + the section's sh_addr, one line per FRE, CFA
 * as "<sp|fp>+<offset>", FP as "c<+-offset>" or "u" (untracked), and the
 * columns %-10s wide (a long CFA runs into the FP column).
 */
static void objdump_case(void)
{
	struct fixture fx;
	char line[512];
	FILE *p;
	if (fixture_make(&fx, "od", 300, 0x55d0c0de0000ull + 0x7b1))
		goto out;
	struct jsf_view *v;
	int rc = jsf_view_open(&v, fx.path);
	CHECK_EQ(rc, 0);
	if (rc)
		goto out;
	struct jsf_export_opts o = {.sz = sizeof(o), .version = 1};
	void *buf = NULL;
	size_t len = 0;
	uint64_t base = 0;
	rc = jsf_view_export(v, &o, &buf, &len, &base);
	CHECK_EQ(rc, 0);
	jsf_view_close(v);
	if (rc)
		goto out;
	const char *elf = tmp_path("sframe.elf");
	char *elfpath = strdup(elf);
	CHECK_EQ(write_elf(elfpath, buf, len, base), 0);
	free(buf);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "objdump --sframe=.sframe '%s' 2>&1",
		 elfpath);
	p = popen(cmd, "r");
	CHECK(p != NULL, "popen: %s", strerror(errno));
	if (!p) {
		free(elfpath);
		goto out;
	}
	const struct mfunc **live = calloc(fx.m.n, sizeof(*live));
	uint32_t n = live_at(&fx.m, 0, live), nrows = 0;
	for (uint32_t i = 0; i < n; i++)
		nrows += live[i]->nrows;
	long fi = -1;	/* current function index */
	uint32_t k = 0; /* its next row */
	uint32_t nfunc_lines = 0, nrow_lines = 0, hdr_fdes = 0, hdr_fres = 0;
	int bad = 0;
	char outer_text[256] = "";
	while (fgets(line, sizeof(line), p)) {
		unsigned idx, size;
		unsigned long long pc;
		char rest[256];
		if (sscanf(line, " Num FDEs: %u", &hdr_fdes) == 1 ||
		    sscanf(line, " Num FREs: %u", &hdr_fres) == 1)
			continue;
		CHECK(!strstr(line, "arning") && !strstr(line, "rror"),
		      "objdump says: %s", line);
		if (sscanf(line, " func idx [%u]: pc = %llx, size = %u bytes",
			   &idx, &pc, &size) == 3) {
			nfunc_lines++;
			if (fi >= 0)
				CHECK(k == live[fi]->nrows,
				      "func %ld: %u rows listed, %u in "
				      "the model",
				      fi, k, live[fi]->nrows);
			fi = idx;
			k = 0;
			bool ok = idx == nfunc_lines - 1 && idx < n &&
				  pc == live[idx]->start &&
				  size == live[idx]->size;
			bad += !ok;
			if (bad < 5)
				CHECK(ok,
				      "func idx [%u]: pc %#llx size "
				      "%u, model %#llx+%u",
				      idx, pc, size,
				      idx < n
					  ? (unsigned long long)live[idx]->start
					  : 0,
				      idx < n ? live[idx]->size : 0);
			if (!ok)
				fi = -1;
			continue;
		}
		if (!is_fre_line(line) ||
		    sscanf(line, " %llx %255[^\n]", &pc, rest) != 2)
			continue; /* not an FRE line */
		nrow_lines++;
		if (fi < 0 || k >= live[fi]->nrows) {
			bad++;
			CHECK(0, "FRE line outside a function: %s", line);
			continue;
		}
		const struct mfunc *f = live[fi];
		const struct jsf_row *w = &f->rows[k++];
		bool ok = pc == f->start + w->offset;
		char reg[3] = "", fpcol[32] = "";
		int cfa = 0, fpo = 0, used = 0;
		if (w->outermost) {
			/* whatever it prints, the same for all */
			if (!outer_text[0])
				snprintf(outer_text, sizeof(outer_text), "%s",
					 rest);
			ok = ok && strcmp(rest, outer_text) == 0;
		} else if (sscanf(rest, "%2[spf]+%d%n", reg, &cfa, &used) ==
			   2) {
			ok =
			    ok &&
			    !strcmp(reg, w->cfa_base == JSF_FP ? "fp" : "sp") &&
			    cfa == w->cfa_offset;
			sscanf(rest + used, " %31s", fpcol);
			if (w->has_fp)
				ok = ok && fpcol[0] == 'c' &&
				     sscanf(fpcol + 1, "%d", &fpo) == 1 &&
				     fpo == w->fp_offset;
			else
				ok = ok && !strcmp(fpcol, "u");
		} else {
			ok = false;
		}
		bad += !ok;
		if (bad < 5)
			CHECK(ok,
			      "func %ld row %u (off %u, outermost "
			      "%d, %s%+d fp %d/%d): %s",
			      fi, k - 1, w->offset, w->outermost,
			      w->cfa_base == JSF_FP ? "fp" : "sp",
			      w->cfa_offset, w->has_fp, w->fp_offset, line);
	}
	if (fi >= 0)
		CHECK_EQ(k, live[fi]->nrows);
	int st = pclose(p);
	CHECK(st == 0, "objdump exit status %#x", st);
	CHECK_EQ(hdr_fdes, n);
	CHECK_EQ(hdr_fres, nrows);
	CHECK_EQ(nfunc_lines, n);
	CHECK_EQ(nrow_lines, nrows);
	printf("# objdump listed %u functions, %u rows; first pc %#llx\n",
	       nfunc_lines, nrow_lines,
	       n ? (unsigned long long)live[0]->start : 0);
	free(live);
	unlink(elfpath);
	free(elfpath);
out:
	fixture_free(&fx);
}

static void objdump_lists(void)
{
	FILE *p = popen("objdump --version 2>/dev/null", "r");
	char line[512];
	bool have =
	    p && fgets(line, sizeof(line), p) && strstr(line, "objdump");
	if (p)
		pclose(p);
	if (!have) {
		printf("# SKIP objdump --sframe: no objdump\n");
		return;
	}
	CASE("objdump --sframe lists the V1 export in an ELF file correctly")
	{
		objdump_case();
	}
}

/* ---------------------------------------------------------------- V3 */

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/*
 * Our own reading of the V3 FDEs (PC-relative 64-bit starts, laid out at
 * sec_addr) against the model: the validator alone would accept a wrong
 * but well-formed start.
 */
static void v3_fdes_match(const struct model *m, const uint8_t *b, size_t len,
			  uint64_t sec_addr)
{
	const struct mfunc **live = calloc(m->n, sizeof(*live));
	uint32_t n = live_at(m, 0, live);
	CHECK(len >= 28, "len %zu", len);
	uint32_t nf = rd32(b + 8), fdeoff = rd32(b + 20), freoff = rd32(b + 24);
	CHECK_EQ(nf, n);
	int bad = 0;
	for (uint32_t i = 0; i < nf && i < n && bad < 5; i++) {
		const uint8_t *p = b + 28 + fdeoff + 16 * (size_t)i;
		if ((size_t)(p + 16 - b) > len) {
			CHECK(0, "FDE %u beyond the section", i);
			break;
		}
		uint64_t start = sec_addr + (uint64_t)(p - b) + rd64(p);
		uint32_t size = rd32(p + 8), attr = rd32(p + 12);
		const uint8_t *a = b + 28 + freoff + attr;
		uint32_t nfres =
		    (size_t)(a + 2 - b) <= len ? a[0] | a[1] << 8 : 0;
		bool ok = start == live[i]->start && size == live[i]->size &&
			  nfres == live[i]->nrows;
		bad += !ok;
		CHECK(ok, "V3 FDE %u: %#llx+%u (%u FREs), model %#llx+%u (%u)",
		      i, (unsigned long long)start, size, nfres,
		      (unsigned long long)live[i]->start, live[i]->size,
		      live[i]->nrows);
	}
	free(live);
}

/* FDE i's attribute record (FRE count, FRE type, FREs follow); its size. */
static uint8_t *v3_attr(uint8_t *b, uint32_t i, uint32_t *size)
{
	uint8_t *p = b + 28 + rd32(b + 20) + 16 * (size_t)i;
	*size = rd32(p + 8);
	return b + 28 + rd32(b + 24) + rd32(p + 12);
}

static void expect_rejected(const uint8_t *orig, size_t len, uint64_t sec_addr,
			    void (*corrupt)(uint8_t *b, size_t *len),
			    const char *what, const char *needle)
{
	uint8_t *b = malloc(len);
	memcpy(b, orig, len);
	size_t l = len;
	corrupt(b, &l);
	char msg[512] = "";
	int rc = jsf_validate_sframe(b, l, sec_addr, 0, 0, msg, sizeof(msg));
	CHECK(rc == -EBADMSG, "%s: accepted (rc %d, %s)", what, rc, msg);
	CHECK(msg[0] && strstr(msg, needle), "%s: message \"%s\" lacks \"%s\"",
	      what, msg, needle);
	printf("# %s: rejected: %s\n", what, msg);
	free(b);
}

static void c_flags(uint8_t *b, size_t *len)
{
	(void)len;
	b[3] |= 0x2; /* SFRAME_F_FRAME_POINTER: not for the kernel's V3 */
}

static void c_version(uint8_t *b, size_t *len)
{
	(void)len;
	b[2] = 1;
}

static void c_truncate(uint8_t *b, size_t *len)
{
	(void)b;
	*len -= 1;
}

/* The last FRE start offset of a function with 2+ rows set to its size. */
static void c_fre_offset(uint8_t *b, size_t *len)
{
	(void)len;
	uint32_t nf = rd32(b + 8);
	for (uint32_t i = 0; i < nf; i++) {
		uint32_t size;
		uint8_t *a = v3_attr(b, i, &size);
		uint32_t n = a[0] | a[1] << 8;
		unsigned t = a[2] & 0xf, aw = 1u << t;
		if (n < 2 || (aw < 4 && size >= 1u << (8 * aw)))
			continue; /* size itself must fit the field */
		uint8_t *f = a + 5;
		for (uint32_t k = 0; k + 1 < n; k++) {
			unsigned nw = (f[aw] >> 1) & 0xf,
				 ws = 1u << ((f[aw] >> 5) & 3);
			f += aw + 1 + nw * ws;
		}
		for (unsigned k = 0; k < aw; k++)
			f[k] = (uint8_t)(size >> (8 * k));
		return;
	}
}

/* Three data words in the first FRE (AMD64 has CFA and FP only). */
static void c_words(uint8_t *b, size_t *len)
{
	(void)len;
	uint32_t size;
	uint8_t *a = v3_attr(b, 0, &size);
	unsigned aw = 1u << (a[2] & 0xf);
	a[5 + aw] = (uint8_t)((a[5 + aw] & ~0x1e) | 3 << 1);
}

static void v3_case(void)
{
	struct fixture fx;
	if (fixture_make(&fx, "v3", 500, 0x7f3a00123457ull))
		goto out;
	struct jsf_view *v;
	int rc = jsf_view_open(&v, fx.path);
	CHECK_EQ(rc, 0);
	if (rc)
		goto out;
	char msg[512];
	void *buf = NULL;
	size_t len = 0;
	uint64_t base = 1;
	/* default: laid out for address 0 */
	struct jsf_export_opts o = {.sz = sizeof(o), .version = 3};
	rc = jsf_view_export(v, &o, &buf, &len, &base);
	CHECK_EQ(rc, 0);
	if (rc)
		goto close;
	CHECK_EQ(base, 0);
	const uint8_t *b = buf;
	CHECK_EQ(b[2], 3);
	rc = jsf_validate_sframe(buf, len, 0, fx.lo, fx.hi - fx.lo, msg,
				 sizeof(msg));
	CHECK(rc == 0, "validate at 0: %s", msg);
	printf("# %s\n", msg);
	v3_fdes_match(&fx.m, buf, len, 0);
	/* one byte off: every start moves out of [lo, hi) */
	rc = jsf_validate_sframe(buf, len, 1, fx.lo, fx.hi - fx.lo, msg,
				 sizeof(msg));
	CHECK(rc == -EBADMSG, "validate at 1 accepted: %s", msg);
	expect_rejected(buf, len, 0, c_flags, "flag 0x2 set", "flags");
	expect_rejected(buf, len, 0, c_version, "version 1", "version");
	expect_rejected(buf, len, 0, c_truncate, "truncated by a byte",
			"outside the section");
	expect_rejected(buf, len, 0, c_fre_offset,
			"FRE start offset = function size", "start offset");
	expect_rejected(buf, len, 0, c_words, "3 data words", "data words");
	free(buf);

	/* laid out for the address where it will be mapped */
	uint64_t at = 0x7f3a80000000ull + 0x40;
	o.base = at;
	rc = jsf_view_export(v, &o, &buf, &len, &base);
	CHECK_EQ(rc, 0);
	if (rc)
		goto close;
	CHECK_EQ(base, at);
	rc = jsf_validate_sframe(buf, len, at, fx.lo, fx.hi - fx.lo, msg,
				 sizeof(msg));
	CHECK(rc == 0, "validate at %#llx: %s", (unsigned long long)at, msg);
	v3_fdes_match(&fx.m, buf, len, at);
	rc = jsf_validate_sframe(buf, len, at - 1, fx.lo, fx.hi - fx.lo, msg,
				 sizeof(msg));
	CHECK(rc == -EBADMSG, "validate at %#llx accepted: %s",
	      (unsigned long long)(at - 1), msg);
	free(buf);
close:
	jsf_view_close(v);
out:
	fixture_free(&fx);
}

static void v3_validates(void)
{
	CASE("V3 export passes jsf_validate_sframe at its address; corrupted "
	     "copies are rejected")
	{
		v3_case();
	}
}

int main(void)
{
	h_seed();
	snprintf(dir, sizeof(dir), "/tmp/jsf-t_libsframe-XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	CASE("V1 export decoded by the system libsframe agrees with "
	     "jsf_view_lookup and the model")
	{
		v1_agrees();
	}
	CASE("V1 export refuses what 32-bit starts cannot reach")
	{
		v1_range();
	}
	objdump_lists();
	v3_validates();
	rmdir(dir);
	return h_exit();
}
