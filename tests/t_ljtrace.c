/* SPDX-License-Identifier: MIT */
/*
 * lj/ljtrace.c on hand-built VM memory: a fake lua_State -> global state ->
 * trace array -> GCtrace, in each known layout. The search must find the
 * trace array only when every field agrees with what jit.util said, name
 * exactly the layouts that agree, refuse two candidates, survive pointers
 * to nowhere in the scanned memory, and the per-trace lookup must refuse
 * a wrong trace number or an index beyond the array. (That the layouts are
 * LuaJIT's own is shown on the real VMs: tests/t_audit_raw.sh.)
 */
#include "harness.h"
#include "ljtrace.h"

#include <string.h>
#include <sys/mman.h>

#define GSIZE (64u << 10)

struct fake {
	uint8_t *mem;  /* G region, then a PROT_NONE page */
	uint8_t L[64]; /* lua_State: glref at 16 */
	uint64_t arr[64];
	uint8_t T[128];
	struct ljt_known k;
};

static void put16(uint8_t *p, unsigned off, uint32_t v)
{
	uint16_t x = (uint16_t)v;
	memcpy(p + off, &x, 2);
}
static void put32(uint8_t *p, unsigned off, uint32_t v)
{
	memcpy(p + off, &v, 4);
}
static void put64(uint8_t *p, unsigned off, uint64_t v)
{
	memcpy(p + off, &v, 8);
}

/* trace 7 in layout lay; the trace array pointer at G + at */
static void build(struct fake *f, const struct ljt_layout *lay, size_t at)
{
	memset(f->mem, 0, GSIZE);
	memset(f->T, 0, sizeof(f->T));
	memset(f->arr, 0, sizeof(f->arr));
	f->k = (struct ljt_known){.tr = 7,
				  .nins = 40,
				  .nk = 9,
				  .nexit = 5,
				  .link = 7,
				  .mcode = (uintptr_t)0x7f0012345000ull,
				  .szmcode = 321,
				  .mcloop = 200};
	f->T[9] = 9; /* gct: ~LJ_TTRACE */
	put16(f->T, lay->traceno, 7);
	put64(f->T, lay->mcode, f->k.mcode);
	put32(f->T, lay->szmcode, 321);
	put32(f->T, lay->mcloop, 200);
	put32(f->T, lay->nins, 40 + LJT_REF_BIAS + 1);
	put32(f->T, lay->nk, LJT_REF_BIAS - 9);
	put16(f->T, lay->nsnap, 5);
	put16(f->T, lay->link, 7);
	f->arr[7] = (uint64_t)(uintptr_t)f->T;
	put64(f->mem, (unsigned)at, (uint64_t)(uintptr_t)f->arr);
	put32(f->mem, (unsigned)at + 8, 1);   /* freetrace */
	put32(f->mem, (unsigned)at + 12, 64); /* sizetrace */
	put64(f->L, 16, (uint64_t)(uintptr_t)f->mem);
}

static unsigned layout_bit(const char *name)
{
	for (unsigned i = 0; ljt_layouts[i].name; i++)
		if (!strcmp(ljt_layouts[i].name, name))
			return 1u << i;
	return 0;
}

int main(void)
{
	struct fake *fp = calloc(1, sizeof(*fp));
	if (!fp)
		return 1;
#define f (*fp)
	uint8_t *m = mmap(NULL, GSIZE + 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	mprotect(m + GSIZE, 4096, PROT_NONE);
	f.mem = m;
	char why[160];
	unsigned mask;
	const unsigned n21 = layout_bit("2.1-2021") | layout_bit("2.1-2019");
	const unsigned b3 = layout_bit("2.1-beta3");

	for (unsigned i = 0; ljt_layouts[i].name; i++) {
		const struct ljt_layout *lay = &ljt_layouts[i];
		CASE(lay->name)
		{
			build(&f, lay, 0x1238);
			/* garbage pointers before it: to nowhere, odd, into
			 * the guard page */
			put64(f.mem, 0x100, 0x10);
			put64(f.mem, 0x108, 0x7fff0001);
			put64(f.mem, 0x110, (uint64_t)(uintptr_t)(m + GSIZE));
			put32(f.mem, 0x11c, 100);
			int r =
			    ljt_discover(f.L, &f.k, &mask, why, sizeof(why));
			CHECK(r == 0, "%s", why);
			unsigned want = (n21 & (1u << i)) ? n21 : b3;
			CHECK_EQ(mask, want);
			CHECK(ljt_trace(f.L, 7, lay) == f.T, "lookup");
			CHECK(ljt_trace(f.L, 6, lay) == NULL, "empty slot");
			f.arr[6] = (uint64_t)(uintptr_t)f.T; /* says 7 */
			CHECK(ljt_trace(f.L, 6, lay) == NULL,
			      "wrong traceno accepted");
			CHECK(ljt_trace(f.L, 64, lay) == NULL,
			      "beyond sizetrace");
			f.T[9] = 8;
			CHECK(ljt_trace(f.L, 7, lay) == NULL,
			      "not a trace object");
		}
	}

	/* every known field, one at a time, off by one: not found */
	static const char *const fields[] = {"tr",	"nins",	  "nk",
					     "nexit",	"link",	  "mcode",
					     "szmcode", "mcloop", "gct"};
	for (unsigned j = 0; j < sizeof(fields) / sizeof(fields[0]); j++) {
		char name[64];
		snprintf(name, sizeof(name), "%s disagrees: refused",
			 fields[j]);
		CASE(name)
		{
			for (unsigned i = 0; ljt_layouts[i].name; i++) {
				build(&f, &ljt_layouts[i], 0x800);
				switch (j) {
				case 0:
					f.k.tr = 8;
					f.arr[8] = f.arr[7];
					break;
				case 1:
					f.k.nins++;
					break;
				case 2:
					f.k.nk++;
					break;
				case 3:
					f.k.nexit++;
					break;
				case 4:
					f.k.link++;
					break;
				case 5:
					f.k.mcode += 16;
					break;
				case 6:
					f.k.szmcode++;
					break;
				case 7:
					f.k.mcloop++;
					break;
				default:
					f.T[9] = 8;
					break;
				}
				int r = ljt_discover(f.L, &f.k, &mask, why,
						     sizeof(why));
				CHECK(r == -1 && mask == 0, "%s: r=%d mask=%u",
				      ljt_layouts[i].name, r, mask);
				CHECK(strstr(why, "not found"), "%s", why);
			}
		}
	}

	CASE("trace array beyond the first 8 KiB: found")
	{
		build(&f, &ljt_layouts[0], 0x9a08);
		int r = ljt_discover(f.L, &f.k, &mask, why, sizeof(why));
		CHECK(r == 0, "%s", why);
		CHECK(ljt_trace(f.L, 7, &ljt_layouts[0]) == f.T, "lookup");
	}

	CASE("two trace arrays: ambiguous, refused")
	{
		build(&f, &ljt_layouts[0], 0x800);
		put64(f.mem, 0x900, (uint64_t)(uintptr_t)f.arr);
		put32(f.mem, 0x908, 1);
		put32(f.mem, 0x90c, 64);
		int r = ljt_discover(f.L, &f.k, &mask, why, sizeof(why));
		CHECK(r == -1, "found");
		CHECK(strstr(why, "ambiguous"), "%s", why);
	}

	CASE("sizetrace not beyond the trace: refused")
	{
		build(&f, &ljt_layouts[0], 0x800);
		put32(f.mem, 0x80c, 7);
		int r = ljt_discover(f.L, &f.k, &mask, why, sizeof(why));
		CHECK(r == -1, "found");
	}

	CASE("global state pointer to nowhere: refused, no fault")
	{
		build(&f, &ljt_layouts[0], 0x800);
		put64(f.L, 16, (uint64_t)(uintptr_t)(m + GSIZE));
		int r = ljt_discover(f.L, &f.k, &mask, why, sizeof(why));
		CHECK(r == -1 && strstr(why, "not readable"), "%s", why);
	}
	free(fp);
	return h_exit();
}
