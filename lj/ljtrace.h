/* SPDX-License-Identifier: MIT */
/*
 * Raw reads of a LuaJIT trace (GCtrace) for the auditlog: the IR,
 * constants, snapshots and machine code straight from the VM's memory
 * instead of one jit.util call (and often one Lua table) per instruction.
 *
 * Nothing here is taken on trust. The trace array is found once by
 * searching the VM's global state for the one pointer through which trace
 * N's object carries exactly what jit.util said about trace N (number,
 * machine-code address and size, loop offset, IR and constant counts,
 * exits); while searching, memory is read through a pipe (write(2)
 * says EFAULT where a load would fault), so no pointer is trusted. The
 * struct layouts come from a short list of LuaJIT's known ones (GC64
 * x86-64 only); the caller (vm/audit_raw.c) keeps a layout only
 * after the records it builds from it are byte for byte the ones built
 * through jit.util, over several traces, and checks again now and then.
 */
#ifndef LJ_LJTRACE_H
#define LJ_LJTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LJT_REF_BIAS 0x8000u

/* Offsets into GCtrace and SnapShot of one LuaJIT version family. */
struct ljt_layout {
	const char *name;
	uint8_t nsnap, nins, ir, nk, snap, snapmap, szmcode, mcode, mcloop,
	    traceno, link, linktype;
	uint8_t size; /* bytes of GCtrace read */
	/* SnapShot: size, mapofs width (2 or 4), field offsets */
	uint8_t snap_size, mapofs_w, snap_ref, snap_nslots, snap_nent;
	/* SnapShot.mcofs (u16: the snapshot's machine-code offset from the
	 * trace's start), 0 in layouts without it (before 2021) */
	uint8_t snap_mcofs;
};

/* The candidate layouts (a NULL name ends the list). */
extern const struct ljt_layout ljt_layouts[];

/* What jit.util says about trace tr (the search's key). */
struct ljt_known {
	uint32_t tr, nins, nk, nexit, link; /* traceinfo (nins/nk unbiased) */
	uintptr_t mcode;		    /* tracemc: addr, #mcode, loop */
	uint32_t szmcode, mcloop;
};

/* Search the VM state behind L (a lua_State *) for the trace array, with
 * trace k->tr as the key. 0 and a bitmask of the layouts that agree with
 * every field of k; -1 with a reason in why. Call once (a few dozen
 * system calls). */
int ljt_discover(const void *L, const struct ljt_known *k, unsigned *layouts,
		 char *why, size_t whylen);

/* Before the first trace (a module's start()): do once what makes the
 * first ljt_discover slow (its first system call, its stack pages). */
void ljt_prewarm(const void *L);

/* Has an earlier ljt_discover (by any caller: the rows' reader in
 * vm/traces.c runs first) found the trace array? 1 and the layouts its key
 * trace agreed with, else 0 (then call ljt_discover). */
int ljt_discovered(const void *L, unsigned *layouts);

/* The GCtrace of trace tr through the discovered trace array, or NULL when
 * not discovered or the object there is not trace tr (layout lay). */
const uint8_t *ljt_trace(const void *L, uint32_t tr,
			 const struct ljt_layout *lay);

/* Field readers (unaligned-safe; inline: the raw reader calls them for
 * every IR field). */
static inline uint32_t ljt_u8(const uint8_t *p, unsigned off)
{
	return p[off];
}
static inline uint32_t ljt_u16(const uint8_t *p, unsigned off)
{
	uint16_t v;
	memcpy(&v, p + off, 2);
	return v;
}
static inline uint32_t ljt_u32(const uint8_t *p, unsigned off)
{
	uint32_t v;
	memcpy(&v, p + off, 4);
	return v;
}
static inline uint64_t ljt_u64(const uint8_t *p, unsigned off)
{
	uint64_t v;
	memcpy(&v, p + off, 8);
	return v;
}

/* Does trace T (layout lay) agree with every field of k? */
int ljt_matches(const uint8_t *T, const struct ljt_layout *lay,
		const struct ljt_known *k);

#endif
