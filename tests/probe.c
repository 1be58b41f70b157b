/* SPDX-License-Identifier: MIT */
/*
 * libprobe.so: checks, from inside LuaJIT trace code, the unwind rows the
 * `jitsframe` module published for that trace (tests/t_vm.sh runs it).
 *
 * Loaded twice by the same process (one dlopen handle):
 *   ffi.load(path)                     jsf_probe_*: called through the FFI
 *   package.loadlib(path, "luaopen_probe")   C hosts that enter the VM
 *
 * jsf_probe(kind) is called from hot Lua loops, so mostly from trace code.
 * Its return address RA is then inside a trace, the trace's rsp at the call
 * is __builtin_frame_address(0) + 16, and the row the region holds for RA-1
 * gives CFA = rsp + cfa_offset. The ground truth does not come from the code
 * that made the rows: [CFA-8] must be a return address into the C code that
 * entered the VM in this scenario (`kind`), found from the binary itself:
 *
 *   PCALL     main chunk (luajit.c docall): just after lua_pcall's call to
 *             the VM entry (the `call rel32` in lua_pcall whose target starts
 *             with the entry prologue push rbp,rbx,r15,r14; sub rsp,40)
 *   RESUME    coroutine.resume from Lua: after a call to the VM entry that
 *             lua_resume tail-jumps to (a call from inside the interpreter)
 *   CALL      string.gsub with a function: after a call to the VM entry that
 *             lua_call tail-jumps to (lua_call is inlined in the library)
 *   LIBC      an FFI callback called by libc's qsort: inside libc.so, just
 *             after a call instruction
 *   HOST_*    one of the C hosts below (lua_call, lua_resume, or a callback
 *             called through a function pointer): inside that host, just
 *             after a call instruction (not, say, the host's own address
 *             left in a saved register by the interpreter), and
 *             [CFA-16] must equal the host's own rbp (the VM entry pushes
 *             it first), read here with __builtin_frame_address
 *
 * and the first 8-byte slot upwards holding such a value must be CFA-8
 * itself: the CFA is exact, not merely plausible. The scan starts at rsp
 * when the stack is known clean, else at CFA-88, the frame the VM entry and
 * the trace entry wrote (r13, r12 from the trace entry; TMP, SAVE_*, r14,
 * r15, rbx, rbp). Why: below it, a trace's spill slots that the trace has
 * not written yet hold whatever deeper frames left there (seen: copies of
 * the main chunk's return address 376 to 456 bytes below the CFA, in a
 * trace with a 416-byte spill area). Two sources: compiling a trace runs
 * the module's event handler, whose lua_pcall pushes that very return
 * address; and this probe, called from another trace, copies it into its
 * own frames. So jsf_probe() zeroes the stack below its caller's frame
 * when it is done, jsf_probe_dirty() (a Lua "trace" event handler calls
 * it) marks the stack dirty, and scrub() (from luaopen_probe; the scenario
 * calls it from interpreted code between a warm-up run and the measured
 * run) zeroes what lies below the interpreter's frame and marks it clean.
 * For LIBC the scan always starts at CFA-88: qsort's recursion leaves libc
 * return addresses at every depth.
 *
 * JSF_PROBE_SKEW=N adds N to every CFA: the test's check that the probe
 * does notice a wrong row.
 */
#include "jitsframe.h"

#include <dlfcn.h>
#include <errno.h>
#include <lauxlib.h>
#include <link.h>
#include <lua.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

enum {
	K_PCALL = 1,
	K_RESUME = 2,
	K_CALL = 3,
	K_LIBC = 4,
	K_HOST_CALL = 5,
	K_HOST_RESUME = 6,
	K_HOST_CB = 7,
	K_MAX
};

struct jsf_probe_stats {
	uint64_t calls;		/* every jsf_probe call */
	uint64_t from_trace;	/* RA inside a published function */
	uint64_t not_trace;	/* RA not published (the interpreter) */
	uint64_t ok;		/* from trace, every check passed */
	uint64_t mismatches;	/* from trace, some check failed */
	uint64_t lookup_errors; /* jsf_view_lookup failed other than -ENOENT */
	uint64_t rbp_checked;	/* [CFA-16] compared with a host's rbp */
	uint64_t slots_scanned; /* stack slots below CFA-8 checked */
	uint64_t max_cfa;	/* largest cfa_offset seen */
	uint64_t min_cfa;
	uint64_t
	    full_scans; /* scans from rsp (clean stack), else from CFA-88 */
};

static struct jsf_view *g_view;
static struct jsf_probe_stats g_st;
static char g_details[2048];
static size_t g_dlen;
static char g_err[256];

/* What the binary says (found once by jsf_probe_init). */
static uintptr_t g_vm_pcall, g_vm_call, g_vm_resume; /* VM entries */
static uintptr_t g_lua_pcall;
static uintptr_t g_host_rbp; /* rbp of the active C host, 0 if none */
static intptr_t g_skew; /* JSF_PROBE_SKEW: added to every CFA (self-test) */
static int g_dirty = 1; /* trace events since the last scrub */
static uintptr_t g_scrub_fp; /* frame of the last scrub (diagnostics) */

/* Executable PT_LOAD segments of every loaded object. */
struct seg {
	uintptr_t lo, hi;
	unsigned char main, libc;
};
static struct seg g_segs[64];
static int g_nsegs;

static const uint8_t PROLOGUE[10] = {0x55, 0x53, 0x41, 0x57, 0x41,
				     0x56, 0x48, 0x83, 0xec, 0x28};

static void detail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void detail(const char *fmt, ...)
{
	if (g_dlen >= sizeof(g_details) - 200)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n =
	    vsnprintf(g_details + g_dlen, sizeof(g_details) - g_dlen, fmt, ap);
	va_end(ap);
	if (n > 0)
		g_dlen += (size_t)n < sizeof(g_details) - g_dlen
			      ? (size_t)n
			      : sizeof(g_details) - g_dlen - 1;
}

static int seg_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	(void)size;
	int *first = ctx;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	int is_main = *first && !*name; /* the executable comes first */
	*first = 0;
	const char *slash = strrchr(name, '/');
	int is_libc = !strncmp(slash ? slash + 1 : name, "libc.so", 7);
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		if (g_nsegs == (int)(sizeof(g_segs) / sizeof(g_segs[0])))
			return 1;
		struct seg *s = &g_segs[g_nsegs++];
		s->lo = info->dlpi_addr + ph->p_vaddr;
		s->hi = s->lo + ph->p_memsz;
		s->main = (unsigned char)is_main;
		s->libc = (unsigned char)is_libc;
	}
	return 0;
}

static const struct seg *find_seg(uintptr_t a)
{
	for (int i = 0; i < g_nsegs; i++)
		if (a >= g_segs[i].lo && a < g_segs[i].hi)
			return &g_segs[i];
	return NULL;
}

static int32_t rd32(uintptr_t a)
{
	int32_t v;
	memcpy(&v, (const void *)a, 4);
	return v;
}

/* The target of a `call rel32` ending at v (v: a return address), 0 if the
 * 5 bytes before v are not one. */
static uintptr_t call_target(const struct seg *s, uintptr_t v)
{
	if (v - 5 < s->lo || *(const uint8_t *)(v - 5) != 0xe8)
		return 0;
	return v + (uintptr_t)(intptr_t)rd32(v - 4);
}

static int is_vm_entry(uintptr_t t)
{
	const struct seg *s = find_seg(t);
	return s && s->main && t + sizeof(PROLOGUE) <= s->hi &&
	       !memcmp((const void *)t, PROLOGUE, sizeof(PROLOGUE));
}

/* In [fn, fn+len): the target of the first `call rel32` (op 0xe8) or
 * `jmp rel32` (0xe9) that lands on a VM entry prologue. */
static uintptr_t find_entry(uintptr_t fn, uint8_t op)
{
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1((void *)fn, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym)
		return 0;
	uintptr_t len = sym->st_size ? sym->st_size : 256;
	for (uintptr_t p = fn; p + 5 <= fn + len; p++) {
		if (*(const uint8_t *)p != op)
			continue;
		uintptr_t t = p + 5 + (uintptr_t)(intptr_t)rd32(p + 1);
		if (is_vm_entry(t))
			return t;
	}
	return 0;
}

/* The C hosts (luaopen_probe). */
EXPORT int jsf_probe_host_call(lua_State *L);
EXPORT int jsf_probe_host_resume(lua_State *L);
EXPORT int jsf_probe_host_cb(int (*cb)(int), int n);

static uintptr_t host_fn(int kind)
{
	switch (kind) {
	case K_HOST_CALL:
		return (uintptr_t)jsf_probe_host_call;
	case K_HOST_RESUME:
		return (uintptr_t)jsf_probe_host_resume;
	case K_HOST_CB:
		return (uintptr_t)jsf_probe_host_cb;
	}
	return 0;
}

/* Does a call instruction end at v (v: a return address)? `call rel32`, or
 * `call r/m64` (FF /2, optional REX) in any ModRM form. */
static int after_call(const struct seg *s, uintptr_t v)
{
	if (call_target(s, v))
		return 1;
	for (uintptr_t k = 2; k <= 8; k++) {
		uintptr_t at = v - k;
		if (at < s->lo)
			break;
		const uint8_t *p = (const uint8_t *)at;
		if ((p[0] & 0xf0) == 0x40) /* REX */
			p++;
		if (p[0] != 0xff || ((p[1] >> 3) & 7) != 2)
			continue;
		uint8_t mod = p[1] >> 6, rm = p[1] & 7;
		uintptr_t len = (uintptr_t)(p - (const uint8_t *)at) + 2;
		if (mod != 3 && rm == 4)
			len++; /* SIB */
		if (mod == 1)
			len += 1;
		else if (mod == 2 || (mod == 0 && rm == 5))
			len += 4;
		else if (mod == 0 && rm == 4 && (p[2] & 7) == 5)
			len += 4; /* SIB with no base: disp32 */
		if (len == k)
			return 1;
	}
	return 0;
}

/* Is v a return address into the code that entered the VM for `kind`? */
static int expected(int kind, uintptr_t v)
{
	const struct seg *s = find_seg(v);
	if (!s)
		return 0;
	Dl_info di;
	switch (kind) {
	case K_PCALL:
		return s->main && call_target(s, v) == g_vm_pcall &&
		       dladdr((void *)v, &di) &&
		       (uintptr_t)di.dli_saddr == g_lua_pcall;
	case K_RESUME:
		return s->main && call_target(s, v) == g_vm_resume;
	case K_CALL:
		return s->main && call_target(s, v) == g_vm_call;
	case K_LIBC:
		return s->libc && after_call(s, v);
	default: /* inside the host, just after a call (not its address) */
		return dladdr((void *)v, &di) &&
		       (uintptr_t)di.dli_saddr == host_fn(kind) &&
		       v != host_fn(kind) && after_call(s, v);
	}
}

/* Open the region (live) and read the binary: 0, or -1 (jsf_probe_error). */
EXPORT int jsf_probe_init(const char *region)
{
	int first = 1;
	g_nsegs = 0;
	dl_iterate_phdr(seg_cb, &first);
	void *f;
	g_lua_pcall = (uintptr_t)(f = dlsym(RTLD_DEFAULT, "lua_pcall"));
	g_vm_pcall = f ? find_entry((uintptr_t)f, 0xe8) : 0;
	f = dlsym(RTLD_DEFAULT, "lua_call");
	g_vm_call = f ? find_entry((uintptr_t)f, 0xe9) : 0;
	f = dlsym(RTLD_DEFAULT, "lua_resume");
	g_vm_resume = f ? find_entry((uintptr_t)f, 0xe9) : 0;
	if (!g_vm_pcall || !g_vm_call || !g_vm_resume) {
		snprintf(
		    g_err, sizeof(g_err),
		    "VM entries not found: pcall %#lx call %#lx resume %#lx",
		    (unsigned long)g_vm_pcall, (unsigned long)g_vm_call,
		    (unsigned long)g_vm_resume);
		return -1;
	}
	if (g_view)
		jsf_view_close(g_view);
	g_view = NULL;
	int err = jsf_view_open(&g_view, region);
	if (err) {
		snprintf(g_err, sizeof(g_err), "jsf_view_open %s: %s (%s)",
			 region, jsf_strerror(err), jsf_view_error());
		return -1;
	}
	const char *skew = getenv("JSF_PROBE_SKEW");
	g_skew = skew ? strtol(skew, NULL, 0) : 0;
	memset(&g_st, 0, sizeof(g_st));
	g_st.min_cfa = UINT64_MAX;
	g_dlen = 0;
	g_details[0] = 0;
	return 0;
}

EXPORT const char *jsf_probe_error(void)
{
	return g_err;
}
EXPORT const char *jsf_probe_details(void)
{
	return g_details;
}
EXPORT void jsf_probe_get(struct jsf_probe_stats *out)
{
	*out = g_st;
}
EXPORT uint64_t jsf_probe_now(void)
{
	return jsf_now_ns();
}

/* Entry counts per published function start (open addressing). */
#define NHITS 4096
static struct {
	uint64_t start, n;
} g_hits[NHITS];

static void hit(uint64_t start)
{
	for (uint32_t i = (uint32_t)(start >> 4) % NHITS, k = 0; k < NHITS;
	     k++, i = (i + 1) % NHITS) {
		if (g_hits[i].start == start || !g_hits[i].start) {
			g_hits[i].start = start;
			g_hits[i].n++;
			return;
		}
	}
}

/* Calls checked from the published function at `start` (a number, for Lua). */
EXPORT double jsf_probe_hits(double start)
{
	uint64_t s = (uint64_t)start;
	for (uint32_t i = (uint32_t)(s >> 4) % NHITS, k = 0; k < NHITS;
	     k++, i = (i + 1) % NHITS) {
		if (!g_hits[i].start)
			return 0;
		if (g_hits[i].start == s)
			return (double)g_hits[i].n;
	}
	return 0;
}

EXPORT void jsf_probe_reset_hits(void)
{
	memset(g_hits, 0, sizeof(g_hits));
}

/* Distinct return addresses that were not in any published function. */
static uint64_t g_nt[32];
static int g_nnt;
EXPORT int jsf_probe_not_traced(double *out, int max)
{
	int n = g_nnt < max ? g_nnt : max;
	for (int i = 0; i < n; i++)
		out[i] = (double)g_nt[i];
	return n;
}

static void mismatch(int kind, uintptr_t ra, uint64_t fs, uintptr_t rsp,
		     const struct jsf_row *r, const char *what, uintptr_t val)
{
	if (g_st.mismatches++ < 6)
		detail(
		    "[kind %d ra %#lx = func %#lx+%lu cfa=sp+%d rsp %#lx: %s "
		    "(%#lx)] ",
		    kind, (unsigned long)ra, (unsigned long)fs,
		    (unsigned long)(ra - fs), r->cfa_offset, (unsigned long)rsp,
		    what, (unsigned long)val);
}

/* The checks of one call: ra, the return address into the caller; rsp,
 * the caller's rsp at the call. */
static __attribute__((noinline)) int check_call(int kind, uintptr_t ra,
						uintptr_t rsp)
{
	g_st.calls++;
	if (!g_view || kind <= 0 || kind >= K_MAX)
		return 0;
	uint64_t fs = 0;
	uint32_t fz = 0;
	struct jsf_row r;
	int rc = jsf_view_lookup(g_view, ra - 1, 0, &fs, &fz, &r);
	if (rc == -ENOENT) {
		g_st.not_trace++;
		int known = 0;
		for (int i = 0; i < g_nnt; i++)
			known |= g_nt[i] == ra;
		if (!known && g_nnt < (int)(sizeof(g_nt) / sizeof(g_nt[0])))
			g_nt[g_nnt++] = ra;
		return 1;
	}
	if (rc) {
		g_st.lookup_errors++;
		return 1;
	}
	g_st.from_trace++;
	hit(fs);
	if (r.outermost || r.cfa_base != JSF_SP || !r.has_fp ||
	    r.fp_offset != -16 || r.cfa_offset < 16 || r.cfa_offset % 8 ||
	    r.cfa_offset > 65536) {
		mismatch(kind, ra, fs, rsp, &r, "row shape", 0);
		return 1;
	}
	if ((uint64_t)r.cfa_offset > g_st.max_cfa)
		g_st.max_cfa = (uint64_t)r.cfa_offset;
	if ((uint64_t)r.cfa_offset < g_st.min_cfa)
		g_st.min_cfa = (uint64_t)r.cfa_offset;
	uintptr_t cfa = rsp + (uintptr_t)r.cfa_offset + (uintptr_t)g_skew;
	uintptr_t slot = *(const uintptr_t *)(cfa - 8);
	int bad = 0;
	if (!expected(kind, slot)) {
		mismatch(kind, ra, fs, rsp, &r,
			 "[CFA-8] not the expected caller", slot);
		bad = 1;
	}
	/* The first slot upwards holding such a return address. */
	uintptr_t from = cfa - 88;
	if (!g_dirty && kind != K_LIBC) {
		from = rsp;
		g_st.full_scans++;
	}
	for (uintptr_t a = from < rsp ? rsp : from; !bad && a < cfa - 8;
	     a += 8) {
		g_st.slots_scanned++;
		uintptr_t v = *(const uintptr_t *)a;
		if (expected(kind, v)) {
			char what[160];
			snprintf(
			    what, sizeof(what),
			    "the expected return address %#lx (at CFA-8: "
			    "%#lx) sits below CFA-8 at rsp+%#lx; last scrub "
			    "from CFA-%ld",
			    (unsigned long)v, (unsigned long)slot,
			    (unsigned long)(a - rsp), (long)(cfa - g_scrub_fp));
			mismatch(kind, ra, fs, rsp, &r, what, v);
			bad = 1;
		}
	}
	if (!bad && kind >= K_HOST_CALL) {
		g_st.rbp_checked++;
		uintptr_t rbp = *(const uintptr_t *)(cfa - 16);
		if (rbp != g_host_rbp) {
			mismatch(kind, ra, fs, rsp, &r,
				 "[CFA-16] is not the host's rbp", rbp);
			bad = 1;
		}
	}
	if (!bad)
		g_st.ok++;
	return 1;
}

/* Zero the stack below the caller's frame. check_call and what it called
 * (dladdr, the view) left copies of the return addresses it looks for
 * there, where a later trace's spill slots go: seen, a trace with a
 * 416-byte spill area found the main chunk's return address 408 bytes
 * below its CFA, left by the probe called from another trace. */
static __attribute__((noinline)) void wipe_below(void)
{
	size_t n = 16 * 1024;
	uint8_t *buf = __builtin_alloca(n);
	memset(buf, 0, n);
	__asm__ volatile("" : : "r"(buf) : "memory");
}

/* Called through the FFI, mostly from trace code. Returns 1. */
EXPORT __attribute__((noinline)) int jsf_probe(int kind)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	int ret = check_call(kind, ra, fp + 16); /* rsp at the call */
	wipe_below();
	return ret;
}

/* A trace event happened: compiling ran C code below the interpreter's
 * frame, where trace spill slots go. */
EXPORT void jsf_probe_dirty(void)
{
	g_dirty = 1;
}

/* scrub(): a lua_CFunction, so the interpreter calls it directly and its
 * frame sits right below the interpreter's (an FFI call would go through
 * the ffi __call metamethod's C frames, whose unwritten parts keep old
 * garbage alive above the scrubbed area: seen). Zeroes 256 KiB below its
 * own frame and marks the stack clean. */
static int l_scrub(lua_State *L)
{
	uintptr_t fp = (uintptr_t)__builtin_frame_address(0);
	size_t n = 256 * 1024;
	uint8_t *buf = __builtin_alloca(n);
	memset(buf, 0, n);
	__asm__ volatile("" : : "r"(buf) : "memory");
	g_dirty = 0;
	g_scrub_fp = fp;
	lua_pushboolean(L, 1);
	return 1;
}

/* ---------------------------------------------------------- the C hosts
 * Each keeps its frame pointer (-fno-omit-frame-pointer), so its rbp is
 * __builtin_frame_address(0) when it calls into the VM. */

/* host_call(fn, ...): lua_call(fn, ...) (LuaJIT: a tail jump to the VM). */
EXPORT int jsf_probe_host_call(lua_State *L)
{
	luaL_checktype(L, 1, LUA_TFUNCTION);
	uintptr_t saved = g_host_rbp;
	g_host_rbp = (uintptr_t)__builtin_frame_address(0);
	lua_call(L, lua_gettop(L) - 1, 1);
	g_host_rbp = saved;
	return 1;
}

/* host_resume(co): lua_resume(co, 0); returns the status, yielded values
 * dropped. */
EXPORT int jsf_probe_host_resume(lua_State *L)
{
	lua_State *co = lua_tothread(L, 1);
	luaL_argcheck(L, co != NULL, 1, "coroutine expected");
	uintptr_t saved = g_host_rbp;
	g_host_rbp = (uintptr_t)__builtin_frame_address(0);
	int st = lua_resume(co, 0);
	g_host_rbp = saved;
	if (st > LUA_YIELD) {
		lua_pushinteger(L, st);
		lua_xmove(co, L, 1); /* the error */
		return 2;
	}
	lua_settop(co, 0);
	lua_pushinteger(L, st);
	return 1;
}

/* Called through the FFI (from the interpreter): cb(0) + ... + cb(n-1). */
EXPORT int jsf_probe_host_cb(int (*cb)(int), int n)
{
	uintptr_t saved = g_host_rbp;
	g_host_rbp = (uintptr_t)__builtin_frame_address(0);
	int sum = 0;
	for (int i = 0; i < n; i++)
		sum += cb(i);
	g_host_rbp = saved;
	return sum;
}

EXPORT int luaopen_probe(lua_State *L)
{
	lua_newtable(L);
	lua_pushcfunction(L, jsf_probe_host_call);
	lua_setfield(L, -2, "host_call");
	lua_pushcfunction(L, jsf_probe_host_resume);
	lua_setfield(L, -2, "host_resume");
	lua_pushcfunction(L, l_scrub);
	lua_setfield(L, -2, "scrub");
	return 1;
}
