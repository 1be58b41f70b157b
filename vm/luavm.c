/* SPDX-License-Identifier: MIT */
/*
 * What an out-of-process reader needs to walk the Lua stack (vm.h; the
 * bytes: docs/ABI.md 1.6, "LJVM"): the VM's global_State, the offsets of
 * the fields a walk reads (g->vmstate, g->cur_L, g->jit_base; lua_State's
 * base, stack and cframe; the C frame's saved PC; GCfunc's ffid and pc;
 * GCproto's size, sizebc, chunkname, firstline, numline, lineinfo;
 * GCstr's len and size), the interpreter's code range and the frame-link
 * encoding (two-slot frames, GC64 values).
 *
 * Nothing is taken on trust. The struct offsets are LuaJIT 2.1's GC64
 * ones (lj_obj.h; OpenResty's luajit2 has the same) and each is checked on
 * the running VM before anything is published:
 * - lua_State: in a C function called with known arguments, top - base is
 *   lua_gettop and base[0] the number passed; stack <= base; the C frame
 *   L->cframe points at holds L (CFRAME_OFS_L);
 * - the C frame chain (lj_frame.h, x64 GC64: CFRAME_OFS_PREV 32, the
 *   int32 CFRAME_OFS_NRES 8): in the check's lua_pcall(L, 1, 1, 0) the C
 *   frame's nres is 2 (nresults + 1, vm_pcall's) and its previous one the
 *   L->cframe its caller saw; in lua_load's reader (lua_load runs the
 *   parser under lj_vm_cpcall(L, NULL, ...), as the FFI's type parser and
 *   the JIT compiler do) the C frame's nres is -(L->top - L->stack) as the
 *   caller left it, in bytes (vm_cpcall's "C frame without a Lua frame"
 *   mark), its previous one the same, and the caller's frame lies below
 *   that top (err_unwind's "frame reached", the sampler's test);
 * - global_State: cur_L is the one word of g that holds the running
 *   coroutine inside a coroutine and the main thread outside; vmstate
 *   the one int32 that reads ~LJ_VMST_C (-2) in a C function and
 *   ~LJ_VMST_INTERP (-1) in a count hook (the interpreter's state);
 *   jit_base the word after cur_L, 0 outside traces, and the interpreter's
 *   machine code stores BASE (rdx) there and 0 (`mov [r14+d], rdx`,
 *   `mov qword [r14+d], 0`) at the displacement its vmstate stores use
 *   plus the distance of the two fields;
 * - frames: from a C function reached through Lua calls, a pcall and a
 *   C-to-Lua call, the walk with these offsets yields, level by level,
 *   the functions lua_getstack/lua_getinfo give (the same GCfunc, and for
 *   Lua functions the same source, linedefined and currentline read
 *   through the prototype and its line table), and in a count hook the
 *   line of the saved PC is the hooked function's currentline.
 * Any difference: nothing is published, one message (m->lv_why), and the
 * sampler does no Lua walk for this process.
 */
#include "jitsframe.h"
#include "jsfenv.h"
#include "vm.h"
#include "vmcheck.h"

#include <errno.h>
#include <lauxlib.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* LuaJIT 2.1 GC64 (lj_obj.h, lj_frame.h) */
#define L_GLREF 16
#define L_BASE 32
#define L_TOP 40
#define L_STACK 56
#define L_CFRAME 80
#define CF_L 16
#define CF_PC 24
#define CF_NRES 8
#define CF_PREV 32
#define FN_FFID 10
#define FN_PC 32
#define PT_SIZE 104
#define PT_SIZEBC 12
#define PT_CHUNKNAME 64
#define PT_FIRSTLINE 72
#define PT_NUMLINE 76
#define PT_LINEINFO 80
#define STR_LEN 20
#define STR_SIZE 24
#define GCVMASK ((1ull << 47) - 1)
#define ITYPE_FUNC (-9) /* ~LJ_TFUNC... ~8 */
#define GSCAN 4096	/* bytes of global_State searched */
#define LV_MAXLEV 64

static uint64_t rd64(uintptr_t a)
{
	uint64_t v;
	memcpy(&v, (const void *)a, 8);
	return v;
}
static uint32_t rd32(uintptr_t a)
{
	uint32_t v;
	memcpy(&v, (const void *)a, 4);
	return v;
}

/* The check's state (one check at a time: m->mu held by l_start). */
struct lvck {
	struct vmod *m;
	struct lv_layout lv;
	lua_State *mainL;
	int ncur, nvm;
	uint8_t cur_main[GSCAN / 8], cur_co[GSCAN / 8];
	uint8_t vm_c[GSCAN / 4], vm_i[GSCAN / 4];
	int hooked, hook_ok, walk_ok;
	uint64_t outer_cf, top_b; /* L->cframe, L->top - L->stack: the
				     caller's, before the checks' calls */
	int cf_ok, cp_ok;
	char why[160];
};
static struct lvck *g_ck; /* for the C callbacks (the hook has no upvalue) */

static void fail(struct lvck *c, const char *why)
{
	if (!c->why[0])
		snprintf(c->why, sizeof(c->why), "%s", why);
}

/* The line of bytecode position pos in prototype pt (lj_debug_line). */
static int64_t pt_line(const struct lv_layout *lv, uintptr_t pt, uint32_t pos)
{
	uint32_t sizebc = rd32(pt + lv->pt_sizebc);
	uint32_t first = rd32(pt + lv->pt_firstline);
	uint32_t num = rd32(pt + lv->pt_numline);
	uintptr_t li = (uintptr_t)rd64(pt + lv->pt_lineinfo);
	if (pos > sizebc || !li)
		return -1;
	if (pos == sizebc)
		return first + num;
	if (pos == 0)
		return first;
	pos--;
	if (num < 256)
		return first + ((const uint8_t *)li)[pos];
	if (num < 65536)
		return first + ((const uint16_t *)li)[pos];
	return first + ((const uint32_t *)li)[pos];
}

int vm_luavm_fn(const struct vmod *m, const void *fn, struct vm_fninfo *fi)
{
	const struct lv_layout *lv = &m->lv;
	if (m->lv_state != 1 || !fn)
		return -1;
	uintptr_t f = (uintptr_t)fn;
	if (*(const uint8_t *)(f + lv->fn_ffid) != 0) /* C or builtin */
		return -1;
	uintptr_t bc = (uintptr_t)rd64(f + lv->fn_pc), pt = bc - lv->pt_size;
	uintptr_t str = (uintptr_t)rd64(pt + lv->pt_chunkname);
	if (!str)
		return -1;
	fi->proto = (const void *)pt;
	fi->bc = bc;
	fi->nbc = rd32(pt + lv->pt_sizebc);
	fi->first = rd32(pt + lv->pt_firstline);
	fi->src = (const char *)(str + lv->str_data);
	return 0;
}

/* The prototype of Lua function fn through the layout verified at
 * start(), when vm_luavm_pos will find bytecode position pos in it (its
 * header says so: a prototype never changes); else NULL (the layout is
 * not verified, fn is no Lua function, pos is outside it, no line
 * numbers or chunk name). */
const void *vm_luavm_proto(const struct vmod *m, const void *fn, uint32_t pos)
{
	struct vm_fninfo fi;
	if (vm_luavm_fn(m, fn, &fi) || pos > fi.nbc ||
	    (pos < fi.nbc && !rd64((uintptr_t)fi.proto + m->lv.pt_lineinfo)))
		return NULL;
	return fi.proto;
}

/* Where bytecode position pos of prototype proto (vm_luavm_proto) begins
 * in the source: the chunk name (its '@' or '=' dropped; the end of a
 * long one kept) into file, the line (as funcinfo's currentline) into
 * *line. 0, or -1 (no prototype, pos outside it): then ask jit.util. */
int vm_luavm_pos(const struct vmod *m, const void *proto, uint32_t pos,
		 char *file, size_t filelen, uint32_t *line)
{
	const struct lv_layout *lv = &m->lv;
	if (m->lv_state != 1 || !proto || filelen < 2)
		return -1;
	uintptr_t pt = (uintptr_t)proto;
	/* funcinfo gives a currentline for pos < sizebc only */
	int64_t ln = pos < rd32(pt + lv->pt_sizebc) ? pt_line(lv, pt, pos) : 0;
	uintptr_t str = (uintptr_t)rd64(pt + lv->pt_chunkname);
	if (ln < 0 || !str)
		return -1;
	const char *src = (const char *)(str + lv->str_data);
	size_t n = rd32(str + lv->str_len);
	if (n && (*src == '@' || *src == '='))
		src++, n--;
	if (n >= filelen) /* keep the end of long paths */
		src += n - (filelen - 1), n = filelen - 1;
	memcpy(file, src, n);
	file[n] = 0;
	*line = (uint32_t)ln;
	return 0;
}

uint32_t vm_luavm_line(const struct vmod *m, const void *proto, uint32_t pos)
{
	/* lj_debug_line: 0 where the prototype has no line info */
	int64_t ln = pt_line(&m->lv, (uintptr_t)proto, pos);
	return ln < 0 ? 0 : (uint32_t)ln;
}

/* Level lev of the Lua API against frame f of our walk. */
static int same_level(struct lvck *c, lua_State *L, int lev, uintptr_t fn,
		      uint64_t pc)
{
	const struct lv_layout *lv = &c->lv;
	lua_Debug ar;
	if (!lua_getstack(L, lev, &ar) || !lua_getinfo(L, "Slf", &ar))
		return 0;
	uintptr_t api = (uintptr_t)lua_topointer(L, -1);
	lua_pop(L, 1);
	if (api != fn)
		return 0;
	uint8_t ffid = *(const uint8_t *)(fn + lv->fn_ffid);
	if (ffid != 0) /* a C function or a builtin */
		return !strcmp(ar.what, "C");
	if (strcmp(ar.what, "Lua") && strcmp(ar.what, "main"))
		return 0;
	uintptr_t bc = (uintptr_t)rd64(fn + lv->fn_pc);
	uintptr_t pt = bc - lv->pt_size;
	uint32_t sizebc = rd32(pt + lv->pt_sizebc);
	if ((int64_t)rd32(pt + lv->pt_firstline) != ar.linedefined)
		return 0;
	uintptr_t s = (uintptr_t)rd64(pt + lv->pt_chunkname);
	uint32_t sl = s ? rd32(s + lv->str_len) : 0;
	if (!s || sl != strlen(ar.source) ||
	    memcmp((const void *)(s + lv->str_data), ar.source, sl))
		return 0;
	if (!pc) /* the walk does not know this frame's pc */
		return 1;
	if (pc < bc + 4 || pc > bc + 4ull * sizebc || pc % 4)
		return 0;
	return pt_line(lv, pt, (uint32_t)((pc - bc) / 4 - 1)) == ar.currentline;
}

/* Walk L's frames from L->base (a C function's) with the layout and
 * compare every level with the Lua API. */
static int walk_check(struct lvck *c, lua_State *L)
{
	const struct lv_layout *lv = &c->lv;
	uintptr_t Lp = (uintptr_t)L;
	uintptr_t base = (uintptr_t)rd64(Lp + lv->L_base);
	uintptr_t stack = (uintptr_t)rd64(Lp + lv->L_stack);
	uintptr_t f = base - 8;
	uint64_t pc = 0; /* the pc in the frame at f, from its callee's link */
	int lev = 0, skip = 0;
	while (f > stack + 8 && lev < LV_MAXLEV) {
		uint64_t tv = rd64(f - 8), link = rd64(f);
		if ((int64_t)tv >> 47 != ITYPE_FUNC)
			return 0;
		uintptr_t fn = (uintptr_t)(tv & GCVMASK);
		if (!skip) {
			if (!same_level(c, L, lev, fn, pc))
				return 0;
			lev++;
		}
		skip = 0;
		uintptr_t nf;
		if ((link & 3) == 0) { /* a Lua frame's return pc */
			uint32_t ins = rd32((uintptr_t)link - 4);
			nf = f - 8 * (2 + ((ins >> 8) & 0xff));
			pc = link;
		} else {
			nf = f - (link & ~7ull);
			pc = 0;
			skip = (link & 7) == 3; /* vararg: the same call */
		}
		if (nf >= f)
			return 0;
		f = nf;
	}
	lua_Debug ar;
	return lev > 0 && lev < LV_MAXLEV && !lua_getstack(L, lev, &ar);
}

/* Where g's words hold v: marks in out (one per 8 bytes). */
static void scan_ptr(uintptr_t g, uintptr_t v, uint8_t *out)
{
	for (unsigned i = 0; i < GSCAN / 8; i++)
		out[i] = rd64(g + 8 * i) == v;
}
static void scan_i32(uintptr_t g, int32_t v, uint8_t *out)
{
	for (unsigned i = 0; i < GSCAN / 4; i++)
		out[i] = (int32_t)rd32(g + 4 * i) == v;
}

static int ck_co(lua_State *L)
{
	struct lvck *c = g_ck;
	uintptr_t g = (uintptr_t)rd64((uintptr_t)L + L_GLREF);
	scan_ptr(g, (uintptr_t)L, c->cur_co);
	return 0;
}

static void ck_hook(lua_State *L, lua_Debug *ar)
{
	struct lvck *c = g_ck;
	(void)ar;
	if (!c || c->hooked)
		return;
	c->hooked = 1;
	const struct lv_layout *lv = &c->lv;
	uintptr_t g = (uintptr_t)rd64((uintptr_t)L + L_GLREF);
	scan_i32(g, -1, c->vm_i);
	/* the saved PC of the hooked (innermost) frame: its line */
	uintptr_t cf = (uintptr_t)rd64((uintptr_t)L + lv->L_cframe) & ~3ull;
	uintptr_t base = (uintptr_t)rd64((uintptr_t)L + lv->L_base);
	uint64_t tv = rd64(base - 16), pc = rd64(cf + lv->cf_pc);
	lua_Debug d;
	if ((int64_t)tv >> 47 != ITYPE_FUNC || !lua_getstack(L, 0, &d) ||
	    !lua_getinfo(L, "l", &d))
		return;
	uintptr_t fn = (uintptr_t)(tv & GCVMASK);
	uintptr_t bc = (uintptr_t)rd64(fn + lv->fn_pc);
	uintptr_t pt = bc - lv->pt_size;
	uint32_t sizebc = rd32(pt + lv->pt_sizebc);
	if (pc < bc + 4 || pc > bc + 4ull * sizebc)
		return;
	c->hook_ok =
	    pt_line(lv, pt, (uint32_t)((pc - bc) / 4 - 1)) == d.currentline;
}

/* ck(x, s): called through Lua frames, a pcall and lua_pcall from C */
static int ck_walk(lua_State *L)
{
	struct lvck *c = g_ck;
	const struct lv_layout *lv = &c->lv;
	uintptr_t Lp = (uintptr_t)L;
	uintptr_t base = (uintptr_t)rd64(Lp + lv->L_base);
	uintptr_t top = (uintptr_t)rd64(Lp + L_TOP);
	uintptr_t stack = (uintptr_t)rd64(Lp + lv->L_stack);
	double d;
	memcpy(&d, (const void *)base, 8);
	uintptr_t cf = (uintptr_t)rd64(Lp + lv->L_cframe) & ~3ull;
	if (top < base || (top - base) / 8 != (uintptr_t)lua_gettop(L) ||
	    d != 12345.5 || stack > base || !cf ||
	    rd64(cf + CF_L) != (uint64_t)Lp) {
		fail(c, "lua_State's base/top/stack/cframe are not where "
			"LuaJIT 2.1 GC64 keeps them");
		return 0;
	}
	uintptr_t g = (uintptr_t)rd64(Lp + L_GLREF);
	scan_i32(g, -2, c->vm_c);
	scan_ptr(g, Lp, c->cur_main);
	c->walk_ok = walk_check(c, L);
	/* lua_pcall(L, 1, 1, 0)'s C frame (ck_walk is a C function called
	 * from Lua: no C frame of its own) */
	c->cf_ok = (int32_t)rd32(cf + lv->cf_nres) == 2 &&
		   rd64(cf + lv->cf_prev) == c->outer_cf;
	return 0;
}

/* lua_load's reader: it runs under lj_vm_cpcall(L, NULL, &ls, cpparser),
 * a C frame without a Lua frame, whose nres is -(L->top - L->stack) in
 * bytes as lua_load's caller left it, and the caller's frame (L->base) is
 * below that top: the sampler's test for such a frame */
static const char *ck_reader(lua_State *L, void *ud, size_t *sz)
{
	struct lvck *c = g_ck;
	const struct lv_layout *lv = &c->lv;
	int *calls = ud;
	if ((*calls)++) {
		*sz = 0;
		return NULL;
	}
	uintptr_t Lp = (uintptr_t)L;
	uintptr_t cf = (uintptr_t)rd64(Lp + lv->L_cframe) & ~3ull;
	uintptr_t base = (uintptr_t)rd64(Lp + lv->L_base);
	uintptr_t stack = (uintptr_t)rd64(Lp + lv->L_stack);
	c->cp_ok = cf && rd64(cf + CF_L) == (uint64_t)Lp &&
		   (int32_t)rd32(cf + lv->cf_nres) == -(int32_t)c->top_b &&
		   rd64(cf + lv->cf_prev) == c->outer_cf &&
		   base - 8 < stack + c->top_b;
	*sz = 6;
	return "return";
}

static const char ck_chunk[] =
    "local ck = ...\n"
    "local function c(x) local r = ck(x, 's'); return r end\n"
    "local function b(x) local ok, r = pcall(c, x); return r end\n"
    "local function a(x, ...) local r = b(x); return r end\n"
    "local x = 0\n"
    "for i = 1, 3 do x = x + i end\n"
    "a(12345.5, 1, 2)\n"
    "return x\n";

/* The interpreter's machine code: the displacement of its vmstate stores
 * (mov dword [r14+d], -2: set_vmstate C), the same for every one; then
 * the stores of BASE and 0 at d + delta (jit_base). */
static int code_check(const struct lj_layout *vl, int32_t delta)
{
	const uint8_t *p = (const uint8_t *)vl->vm_start;
	size_t n = vl->vm_end - vl->vm_start;
	int32_t d = 0;
	int nd = 0, nb = 0, nz = 0;
	for (size_t i = 0; i + 11 <= n; i++) {
		if (p[i] == 0x41 && p[i + 1] == 0xc7 && p[i + 2] == 0x86 &&
		    rd32((uintptr_t)(p + i + 7)) == 0xfffffffeu) {
			int32_t v = (int32_t)rd32((uintptr_t)(p + i + 3));
			if (nd && v != d)
				return 0;
			d = v;
			nd++;
		}
	}
	if (!nd)
		return 0;
	uint32_t want = (uint32_t)(d + delta);
	for (size_t i = 0; i + 11 <= n; i++) {
		if (p[i] != 0x49 || rd32((uintptr_t)(p + i + 3)) != want)
			continue;
		if (p[i + 1] == 0x89 && p[i + 2] == 0x96) /* mov [r14+d], rdx */
			nb++;
		else if (p[i + 1] == 0xc7 && p[i + 2] == 0x86 &&
			 !rd32((uintptr_t)(p + i + 7))) /* mov qword .., 0 */
			nz++;
	}
	return nb > 0 && nz > 0;
}

/* The one marked index of a (n entries), -1 if none or several. */
static int only(const uint8_t *a, const uint8_t *b, unsigned n)
{
	int k = -1;
	for (unsigned i = 0; i < n; i++)
		if (a[i] && (!b || b[i])) {
			if (k >= 0)
				return -1;
			k = (int)i;
		}
	return k;
}

void vm_luavm_check(struct vmod *m, lua_State *L, const struct lj_layout *vl)
{
	if (m->lv_state)
		return;
	m->lv_state = -1;
	struct lvck *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(m->lv_why, sizeof(m->lv_why), "out of memory");
		goto out;
	}
	c->m = m;
	struct lv_layout *lv = &c->lv;
	lv->fr2_gc64 = 1;
	lv->L_base = L_BASE;
	lv->L_stack = L_STACK;
	lv->L_cframe = L_CFRAME;
	lv->cf_pc = CF_PC;
	lv->cf_prev = CF_PREV;
	lv->cf_nres = CF_NRES;
	lv->fn_ffid = FN_FFID;
	lv->fn_pc = FN_PC;
	lv->pt_size = PT_SIZE;
	lv->pt_sizebc = PT_SIZEBC;
	lv->pt_chunkname = PT_CHUNKNAME;
	lv->pt_firstline = PT_FIRSTLINE;
	lv->pt_numline = PT_NUMLINE;
	lv->pt_lineinfo = PT_LINEINFO;
	lv->str_len = STR_LEN;
	lv->str_data = STR_SIZE;
	if (getenv(JSF_ENV_VM_LUAVM_FAULT)) /* tests only: one offset off */
		lv->pt_firstline += 4;
	lv->vm_start = vl->vm_start;
	lv->vm_end = vl->vm_end;
	g_ck = c;
	int top = lua_gettop(L);
	/* the walk, and the count hook's view of the interpreter */
	lua_Hook oh = lua_gethook(L);
	int omask = lua_gethookmask(L), ocount = lua_gethookcount(L);
	if (luaL_loadbuffer(L, ck_chunk, sizeof(ck_chunk) - 1, "=jitsframe")) {
		fail(c, "cannot load the check");
		goto done;
	}
	/* the check's code stays interpreted, and never touches the hot
	 * counters the program's own loops and calls share (they are hashed
	 * by pc): jit.off(chunk, true) makes its loops and functions the
	 * counting-free I-variants, so the JIT's decisions in the program are
	 * the same with the module as without it (tests/t_coexist.sh) */
	int chunk = lua_gettop(L);
	if (vm_require(L, "jit") == 0 && lua_istable(L, -1)) {
		lua_getfield(L, -1, "off");
		lua_pushvalue(L, chunk);
		lua_pushboolean(L, 1);
		if (lua_pcall(L, 2, 0, 0))
			lua_pop(L, 1);
	}
	lua_settop(L, chunk);
	lua_pushcfunction(L, ck_walk);
	c->outer_cf = rd64((uintptr_t)L + L_CFRAME);
	lua_sethook(L, ck_hook, LUA_MASKCOUNT, 1);
	int e = lua_pcall(L, 1, 1, 0);
	lua_sethook(L, oh, omask, ocount);
	if (e) {
		fail(c, "the check failed to run");
		goto done;
	}
	lua_settop(L, top);
	if (c->why[0])
		goto done;
	/* a coroutine's view of cur_L */
	lua_State *co = lua_newthread(L);
	lua_pushcfunction(co, ck_co);
	if (lua_resume(co, 0) != 0) {
		fail(c, "the coroutine check failed to run");
		goto done;
	}
	lua_settop(L, top);
	/* a C frame without a Lua frame */
	c->outer_cf = rd64((uintptr_t)L + L_CFRAME);
	c->top_b = rd64((uintptr_t)L + L_TOP) - rd64((uintptr_t)L + L_STACK);
	int calls = 0;
	if (lua_load(L, ck_reader, &calls, "=jitsframe") != 0) {
		fail(c, "the lua_load check failed to run");
		goto done;
	}
	lua_settop(L, top);
	if (!c->cf_ok || !c->cp_ok) {
		fail(c, "the C frames' previous frame and nres are not where "
			"LuaJIT 2.1 GC64 keeps them");
		goto done;
	}
	if (!c->walk_ok) {
		fail(c, "the frame walk does not give lua_getstack's "
			"functions and lines");
		goto done;
	}
	if (!c->hooked || !c->hook_ok) {
		fail(c, "the C frame's saved PC does not give the hooked "
			"function's line");
		goto done;
	}
	int kc = only(c->cur_co, NULL, GSCAN / 8);
	int kv = only(c->vm_c, c->vm_i, GSCAN / 4);
	if (kc < 0 || !c->cur_main[kc]) {
		fail(c, "no single word of global_State holds the running "
			"thread (cur_L)");
		goto done;
	}
	if (kv < 0) {
		fail(c, "no single int32 of global_State reads C in a C "
			"function and INTERP in a hook (vmstate)");
		goto done;
	}
	uintptr_t g = (uintptr_t)rd64((uintptr_t)L + L_GLREF);
	lv->g = g;
	lv->g_cur_L = (uint16_t)(8 * kc);
	lv->g_vmstate = (uint16_t)(4 * kv);
	lv->g_jit_base = (uint16_t)(8 * kc + 8);
	if (rd64(g + lv->g_jit_base) != 0 ||
	    !code_check(vl, (int32_t)lv->g_jit_base - (int32_t)lv->g_vmstate)) {
		fail(c, "the interpreter's code does not store BASE at "
			"jit_base (cur_L + 8)");
		goto done;
	}
	m->lv = *lv;
	m->lv_state = 1;
done:
	lua_settop(L, top);
	g_ck = NULL;
	if (c->why[0])
		snprintf(m->lv_why, sizeof(m->lv_why), "%s", c->why);
	free(c);
out:
	if (m->lv_state < 0)
		vm_log(m, "Lua stack walk for samplers off: %s; not published",
		       m->lv_why);
}

/* Under `profile -- CMD` (JSF_ENV_PROFILE_SYNC), at the end of the first
 * start() (the layout published): the profiler is told and answers once
 * the sampler has the layout (up to 1 s), so that the script's first
 * samples get their Lua frames (and start()'s own none: its caller, a
 * LUA_INIT chunk, is no part of the script). Once per process; the pipe
 * ends must be pipes (never a byte into another file). */
void vm_luavm_sync(void)
{
	const char *e = getenv(JSF_ENV_PROFILE_SYNC);
	int w = -1, r = -1;
	if (!e)
		return;
	int ok = sscanf(e, "%d,%d", &w, &r) == 2;
	unsetenv(JSF_ENV_PROFILE_SYNC);
	struct stat sw, sr;
	if (!ok || fstat(w, &sw) || fstat(r, &sr) || !S_ISFIFO(sw.st_mode) ||
	    !S_ISFIFO(sr.st_mode))
		return;
	char b = 'r';
	if (write(w, &b, 1) == 1) {
		struct pollfd p = {.fd = r, .events = POLLIN};
		if (poll(&p, 1, 1000) == 1 && read(r, &b, 1) < 0)
			b = 0;
	}
	close(w);
	close(r);
}

void vm_luavm_publish(struct vmod *m)
{
	if (m->lv_state != 1 || !m->region || m->lv_epoch == m->epoch)
		return;
	const struct lv_layout *lv = &m->lv;
	uint8_t b[LV_AREA_SIZE] = {0};
	static const uint8_t magic[4] = {'L', 'J', 'V', 'M'}; /* no NUL */
	for (int i = 0; i < 4; i++)
		b[i] = magic[i];
	alog_st16(b + 4, 1);
	alog_st16(b + 6, LV_AREA_SIZE);
	alog_st64(b + 8, lv->g);
	alog_st64(b + 16, lv->vm_start);
	alog_st64(b + 24, lv->vm_end);
	const uint16_t o[] = {
	    lv->g_vmstate,    lv->g_cur_L,    lv->g_jit_base,
	    lv->L_base,	      lv->L_stack,    lv->L_cframe,
	    lv->cf_pc,	      lv->fn_ffid,    lv->fn_pc,
	    lv->pt_size,      lv->pt_sizebc,  lv->pt_chunkname,
	    lv->pt_firstline, lv->pt_numline, lv->pt_lineinfo,
	    lv->str_len,      lv->str_data,   lv->fr2_gc64 ? 3 : 0,
	};
	alog_st16(b + 72, lv->cf_prev);
	alog_st16(b + 74, lv->cf_nres);
	for (unsigned i = 0; i < sizeof(o) / sizeof(o[0]); i++)
		alog_st16(b + 32 + 2 * i, o[i]);
	int err = jsf_region_set_runtime(m->region, b, sizeof(b));
	if (!err || err == -EEXIST) {
		m->lv_epoch = m->epoch;
	} else
		vm_log(m, "cannot publish the VM's layout: %s",
		       jsf_strerror(err));
}
