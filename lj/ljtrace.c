/* SPDX-License-Identifier: MIT */
/*
 * Raw reads of LuaJIT traces (see ljtrace.h). x86-64 with GC64 only: a
 * GCRef is 8 bytes, lua_State.glref is at offset 16 (GCHeader 10 bytes,
 * two u8, then the 8-byte MRef), and jit_State keeps `GCRef *trace;
 * TraceNo freetrace; MSize sizetrace;` together in every 2.1 version.
 */
#include "ljtrace.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* GCtrace's gct byte: (uint8_t)~LJ_TTRACE, LJ_TTRACE = ~9u */
#define GCT_TRACE 9u
#define SCAN_BYTES (64u << 10) /* from the global state onwards */

const struct ljt_layout ljt_layouts[] = {
    /* 2.1 since 2021 (a32aeadc): SnapShot gained mcofs */
    {"2.1-2021", 10,  12,  32,	40, 48, 56, 84, 88, 96,
     104,	 106, 116, 120, 12, 4,	4,  8,	10, 6},
    /* 2.1 2019-2021 (380e4409): u32 mapofs, nsnap moved to offset 10 */
    {"2.1-2019", 10,  12,  32,	40, 48, 56, 84, 88, 96,
     104,	 106, 116, 120, 12, 4,	4,  6,	8,  0},
    /* 2.1.0-beta3 and before 2019: u16 nsnap/nsnapmap at 44 */
    {"2.1-beta3", 44,  12, 32,	40, 48, 56, 84, 88, 96,
     104,	  106, 11, 120, 8,  2,	2,  4,	6,  0},
    {NULL, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
};

/* ------------------------------------------------- readable memory */

/* Copy len bytes from src, which may point anywhere: with
 * process_vm_readv(2) on ourselves, which reads up to the first
 * unreadable page, or where that call is not allowed (seccomp, old
 * kernels) through a pipe, so that unreadable memory is an EFAULT from
 * write(2), never a signal (the kernel's own access faults are fixed up,
 * even past the end of a mapped file), in pieces of one page, which any
 * pipe holds. The pipe is made on first need (pfd[0] < 0 until then).
 * Returns the bytes copied: all, or the readable prefix. */
static int g_no_vmread; /* process_vm_readv refused once: the pipe */

static size_t copy_safe(int pfd[2], const void *src, void *dst, size_t len)
{
	size_t done = 0;
	if (src && !g_no_vmread) {
		struct iovec lo = {dst, len},
			     re = {(void *)(uintptr_t)src, len};
		ssize_t n = process_vm_readv(getpid(), &lo, 1, &re, 1, 0);
		if (n >= 0)
			return (size_t)n;
		if (errno == EFAULT)
			return 0;
		g_no_vmread = 1; /* ENOSYS, EPERM...: never again */
	}
	if (pfd[0] < 0 && pipe2(pfd, O_CLOEXEC | O_NONBLOCK))
		return 0;
	while (src && done < len) {
		size_t want = len - done < 4096 ? len - done : 4096;
		ssize_t n = write(pfd[1], (const char *)src + done, want);
		if (n <= 0)
			break;
		for (ssize_t got = 0; got < n;) {
			ssize_t r = read(pfd[0], (char *)dst + done + got,
					 (size_t)(n - got));
			if (r <= 0)
				return done;
			got += r;
		}
		done += (size_t)n;
		if ((size_t)n < want)
			break;
	}
	return done;
}

/* n copies of len bytes, src[i] to dst[i]: ok[i] says whether copy i was
 * whole. One process_vm_readv for all where it can (it stops at the first
 * remote piece it cannot read, saying how many bytes it copied: the
 * copies before are whole, that one is not, the call goes on after it),
 * else copy_safe one by one. */
#define CAND_MAX 16

static void copy_many(int pfd[2], unsigned n, const void *const *src,
		      void *const *dst, size_t len, int *ok)
{
	unsigned i = 0;
	while (i < n && !g_no_vmread) {
		struct iovec lo[CAND_MAX], re[CAND_MAX];
		unsigned c = n - i;
		for (unsigned j = 0; j < c; j++) {
			lo[j] = (struct iovec){dst[i + j], len};
			re[j] =
			    (struct iovec){(void *)(uintptr_t)src[i + j], len};
		}
		ssize_t got = process_vm_readv(getpid(), lo, c, re, c, 0);
		if (got < 0 && errno != EFAULT) {
			g_no_vmread = 1; /* ENOSYS, EPERM...: the pipe */
			break;
		}
		size_t whole = got < 0 ? 0 : (size_t)got / len;
		for (size_t j = 0; j < whole; j++)
			ok[i + j] = 1;
		i += (unsigned)whole;
		if (i < n)
			ok[i++] = 0; /* not (all) readable */
	}
	for (; i < n; i++)
		ok[i] = copy_safe(pfd, src[i], dst[i], len) == len;
}

/* ------------------------------------------------------- discovery */

static size_t g_trace_off; /* of `GCRef *trace` from the global state */
static int g_found;
static unsigned g_layouts; /* what the discovery's key trace agreed with */

int ljt_matches(const uint8_t *T, const struct ljt_layout *lay,
		const struct ljt_known *k)
{
	return T[9] == GCT_TRACE && ljt_u16(T, lay->traceno) == k->tr &&
	       ljt_u64(T, lay->mcode) == (uint64_t)k->mcode &&
	       ljt_u32(T, lay->szmcode) == k->szmcode &&
	       ljt_u32(T, lay->mcloop) == k->mcloop &&
	       ljt_u32(T, lay->nins) == k->nins + LJT_REF_BIAS + 1 &&
	       ljt_u32(T, lay->nk) == LJT_REF_BIAS - k->nk &&
	       ljt_u16(T, lay->nsnap) == k->nexit &&
	       ljt_u16(T, lay->link) == k->link;
}

static const uint8_t *G_of(const void *L)
{
	return (const uint8_t *)(uintptr_t)ljt_u64(L, 16);
}

int ljt_discover(const void *L, const struct ljt_known *k, unsigned *layouts,
		 char *why, size_t whylen)
{
	int pfd[2] = {-1, -1};
	*layouts = 0;
	int ret = -1;
	/* the first 8 KiB on the stack; 64 KiB from the heap only when the
	 * array is not there (this runs inside a trace's first stop event:
	 * a fresh 64 KiB block and the system call that read L were some
	 * 7 us of its 25) */
	uint8_t g0[8192], *g = g0, *gbig = NULL;
	size_t scan;
	/* L is the caller's running lua_State (a live object, larger than
	 * its first 24 bytes): read as it is, not through a system call */
	if (!k->tr || !k->mcode || !L) {
		snprintf(why, whylen, "no trace or no lua_State to start from");
		goto out;
	}
	const uint8_t *G = G_of(L);
	/* the first 8 KiB (where every known version keeps it), then 64 */
	scan = copy_safe(pfd, G, g, 8192);
	if (scan < 16) {
		snprintf(why, whylen, "global state not readable");
		goto out;
	}
	size_t hits = 0, at = 0;
	unsigned mask = 0;
again:
	/* the candidates' slots for trace k->tr, then the objects there:
	 * each step one system call for all of them (copy_many), not two
	 * per candidate (some 1 us each in a trace's first stop) */
	for (size_t from = 0; from + 16 <= scan;) {
		const void *src[CAND_MAX];
		size_t offs[CAND_MAX];
		uint8_t tb[CAND_MAX][8], Ts[CAND_MAX][128];
		void *dst[CAND_MAX];
		int ok[CAND_MAX];
		unsigned nc = 0;
		for (; from + 16 <= scan && nc < CAND_MAX; from += 8) {
			/* GCRef *trace; TraceNo freetrace; MSize sizetrace; */
			uint64_t arr = ljt_u64(g, (unsigned)from);
			uint32_t freetr = ljt_u32(g, (unsigned)from + 8);
			uint32_t size = ljt_u32(g, (unsigned)from + 12);
			if (!arr || (arr & 7) || arr >> 47 || size <= k->tr ||
			    size > 65536 || !freetr || freetr > size)
				continue;
			offs[nc] = from;
			src[nc] = (const void *)(uintptr_t)(arr + 8 * k->tr);
			dst[nc] = tb[nc];
			nc++;
		}
		copy_many(pfd, nc, src, dst, 8, ok);
		unsigned nt = 0;
		size_t toff[CAND_MAX];
		for (unsigned i = 0; i < nc; i++) {
			uint64_t t = ok[i] ? ljt_u64(tb[i], 0) : 0;
			if (!t || (t & 7) || t >> 47)
				continue;
			toff[nt] = offs[i];
			src[nt] = (const void *)(uintptr_t)t;
			dst[nt] = Ts[nt];
			nt++;
		}
		copy_many(pfd, nt, src, dst, sizeof(Ts[0]), ok);
		for (unsigned i = 0; i < nt; i++) {
			if (!ok[i])
				continue;
			unsigned mk = 0;
			for (unsigned j = 0; ljt_layouts[j].name; j++)
				if (ljt_matches(Ts[i], &ljt_layouts[j], k))
					mk |= 1u << j;
			if (mk) {
				hits++;
				at = toff[i];
				mask = mk;
			}
		}
	}
	if (!hits && scan == 8192 && g == g0) {
		if (!(gbig = malloc(SCAN_BYTES))) {
			snprintf(why, whylen, "out of memory");
			goto out;
		}
		memcpy(gbig, g0, 8192);
		g = gbig;
		scan = 8192 +
		       copy_safe(pfd, G + 8192, g + 8192, SCAN_BYTES - 8192);
		if (scan > 8192)
			goto again;
	}
	if (hits != 1) {
		snprintf(why, whylen,
			 hits ? "trace array ambiguous (%zu candidates)"
			      : "trace array not found (unknown VM layout)",
			 hits);
		goto out;
	}
	g_trace_off = at;
	g_found = 1;
	g_layouts = mask;
	*layouts = mask;
	ret = 0;
out:
	free(gbig);
	if (pfd[0] >= 0) {
		close(pfd[0]);
		close(pfd[1]);
	}
	return ret;
}

void ljt_prewarm(const void *L)
{
	/* the same read, into a buffer as deep on the stack as the
	 * discovery's: its first read of the global state took some 7 us
	 * in trace 1's stop (the stack pages faulted in, the system call's
	 * first run), 2.5-3.5 us after this */
	int pfd[2] = {-1, -1};
	uint8_t g[12288]; /* the discovery's: 8 KiB, the candidates' */
	memset(g, 0, sizeof(g));
	if (L && G_of(L))
		copy_safe(pfd, G_of(L), g, 8192);
	if (pfd[0] >= 0) {
		close(pfd[0]);
		close(pfd[1]);
	}
	__asm__ volatile("" : : "r"(g) : "memory");
}

int ljt_discovered(const void *L, unsigned *layouts)
{
	(void)L;
	if (!g_found)
		return 0;
	*layouts = g_layouts;
	return 1;
}

const uint8_t *ljt_trace(const void *L, uint32_t tr,
			 const struct ljt_layout *lay)
{
	if (!g_found || !tr)
		return NULL;
	const uint8_t *G = G_of(L);
	if (!G)
		return NULL;
	uint64_t arr = ljt_u64(G, (unsigned)g_trace_off);
	if (!arr || tr >= ljt_u32(G, (unsigned)g_trace_off + 12))
		return NULL;
	const uint8_t *T =
	    (const uint8_t *)(uintptr_t)ljt_u64((const uint8_t *)arr, 8 * tr);
	if (!T || T[9] != GCT_TRACE || ljt_u16(T, lay->traceno) != tr)
		return NULL;
	return T;
}
