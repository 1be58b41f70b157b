/* SPDX-License-Identifier: MIT */
/*
 * Each trace's Lua frames by machine-code offset (vm.h; the map's bytes:
 * docs/ABI.md 1.5). LuaJIT records, for every snapshot, the offset of the
 * machine code that follows it (SnapShot.mcofs: the code of the IR
 * instructions from the snapshot's ref up to the next snapshot's, so a
 * guard's branch to its exit stub lies in its own snapshot's range), and
 * in the snapshot map the frames the trace stands for there: one frame
 * link per inlined call (FR2: the callee's function at slot s-1, its link,
 * the return pc into its caller, at slot s with SNAP_FRAME) and the pc the
 * interpreter resumes at (the 64-bit word after the entries). So range i,
 * [mcofs_i, mcofs_i+1) (the last to the end of the code: the loop's tail
 * or the exit to the interpreter), holds the frames of snapshot i.
 *
 * Read from the trace's own memory in the layout the trace facts were
 * verified in (lj/ljtrace.h), the snapshots checked against
 * jit.util.tracesnap on the first traces and one in 64; the functions and
 * lines from the trace's IR constants and the prototypes through the Lua
 * layout luavm.c verified, once that build gave the same bytes as one
 * through jit.util (tracek, funcinfo, funcbc) on the first traces (and
 * again on one in 64), else through jit.util. Every frame is checked
 * before it is published: its function a Lua function (through jit.util:
 * whose bytecode words agree with funcbc), its pc inside that bytecode, the
 * innermost frame's base equal to the snapshot's own; anything else (a
 * continuation or vararg frame, a function known only by its prototype, a pc
 * outside) makes that range "start only" (no frames: the trace's name says
 * where it started), never a guessed frame.
 */
#include "jitsframe.h"
#include "lj.h"
#include "vm.h"

#include <lauxlib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SNAP_FRAME 0x10000u
#define SNAP_CONT 0x20000u
#define LM_MAXFN 32    /* distinct functions per trace */
#define LM_MAXDEPTH 64 /* frames per snapshot */
#define LM_MAXFR 1024  /* distinct (function, pc) per trace */
#define LM_CHECK 4     /* traces whose snapshots are checked in full */
#define LM_RECHECK 64  /* then one in this many */
#define LM_KC 64       /* k_fn's and k_num's memo (direct-mapped) */
#define LM_FRH 256     /* add_frame's hash heads */

struct lm_fn {
	const void *gcf; /* the GCfunc */
	const void *pt;	 /* its prototype (raw builds) */
	uint64_t bc;	 /* its bytecode */
	uint32_t nbc, first, str;
	int ok;
};

struct lm_frame {
	uint16_t fn;
	uint32_t pc, line;
};

struct lm_build {
	lua_State *L;
	struct lstate *s;
	uint32_t tr;
	/* raw: the constants from the trace's IR (ir, biased, nk its lowest
	 * constant) and the functions through the verified Lua layout, not
	 * jit.util; unsure: a constant of a kind not learnt yet was met */
	int raw, unsure;
	const uint8_t *ir;
	uint32_t nk;
	int base; /* stack index of the first function value */
	struct lm_fn fn[LM_MAXFN];
	uint32_t nfn;
	struct lm_frame fr[LM_MAXFR];
	uint32_t nfr;
	/* add_frame's index of fr: chains by hash of (fn, pc), index + 1
	 * (0 ends a chain) */
	uint16_t frh[LM_FRH], frnext[LM_MAXFR];
	/* k_fn's and k_num's answers by constant ref, each a function of the
	 * ref alone within one build (a snapshot map names the same
	 * constants snapshot after snapshot): tag 0 empty */
	uint16_t kf_ref[LM_KC], kn_ref[LM_KC];
	int16_t kf_res[LM_KC];
	int8_t kn_res[LM_KC];
	uint64_t kn_bits[LM_KC];
	char str[4096];
	uint32_t strlen;
};

static int util(lua_State *L, struct lstate *s, const char *name, int nargs,
		int nres)
{
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->util_ref);
	lua_getfield(L, -1, name);
	lua_remove(L, -2);
	lua_insert(L, -1 - nargs);
	return lua_pcall(L, nargs, nres, 0);
}

static uint32_t intfield(lua_State *L, int idx, const char *k, int *has)
{
	lua_getfield(L, idx, k);
	*has = lua_isnumber(L, -1);
	uint32_t v = (uint32_t)lua_tointeger(L, -1);
	lua_pop(L, 1);
	return v;
}

static uint32_t add_str(struct lm_build *b, const char *src)
{
	if (*src == '@' || *src == '=')
		src++;
	size_t n = strlen(src);
	if (n > 255) /* keep the end of long paths */
		src += n - 255, n = 255;
	for (uint32_t o = 0; o < b->strlen;) { /* the same chunk, again */
		size_t l = strlen(b->str + o);
		if (l == n && !memcmp(b->str + o, src, n))
			return o;
		o += (uint32_t)l + 1;
	}
	if (b->strlen + n + 1 > sizeof(b->str))
		return UINT32_MAX;
	memcpy(b->str + b->strlen, src, n + 1);
	b->strlen += (uint32_t)n + 1;
	return b->strlen - (uint32_t)n - 1;
}

/* The function value at stack top (popped): its index in b->fn, or -1 when
 * it is not a Lua function we can vouch for. */
/* Function p's entry in b->fn: a new one, zeroed, into *f; else (*f NULL)
 * the index of the one already there (-1 when it is not a function we
 * vouch for), or -1 when p is NULL or the table is full. */
static int fn_entry(struct lm_build *b, const void *p, struct lm_fn **f)
{
	*f = NULL;
	if (!p)
		return -1;
	for (uint32_t i = 0; i < b->nfn; i++)
		if (b->fn[i].gcf == p)
			return b->fn[i].ok ? (int)i : -1;
	if (b->nfn == LM_MAXFN)
		return -1;
	*f = &b->fn[b->nfn++];
	memset(*f, 0, sizeof(**f));
	(*f)->gcf = p;
	return (int)(b->nfn - 1);
}

static int add_fn(struct lm_build *b)
{
	lua_State *L = b->L;
	struct lm_fn *f;
	int i = fn_entry(b, lua_isfunction(L, -1) ? lua_topointer(L, -1) : NULL,
			 &f);
	if (!f) {
		lua_pop(L, 1);
		return i;
	}
	/* kept on the stack (b->base + i) for funcinfo of its pcs */
	const void *p = f->gcf;
	int top = lua_gettop(L), has;
	lua_pushvalue(L, -1);
	if (util(L, b->s, "funcinfo", 1, 1) || !lua_istable(L, -1))
		goto out;
	f->nbc = intfield(L, -1, "bytecodes", &has);
	if (!has || !f->nbc)
		goto out; /* a C function or a builtin */
	f->first = intfield(L, -1, "linedefined", &has);
	lua_getfield(L, -1, "source");
	const char *src = lua_tostring(L, -1);
	f->str = src ? add_str(b, src) : UINT32_MAX;
	if (f->str == UINT32_MAX)
		goto out;
	/* GCfuncL (GC64): the bytecode pointer at 32 (lj_obj.h); believed
	 * only when its first and last words are what funcbc reads */
	f->bc = ljt_u64((const uint8_t *)p, 32);
	if (!f->bc || f->bc % 4)
		goto out;
	uint32_t at[2] = {0, f->nbc - 1};
	for (int k = 0; k < 2; k++) {
		lua_settop(L, top);
		lua_pushvalue(L, top);
		lua_pushinteger(L, at[k]);
		if (util(L, b->s, "funcbc", 2, 1) || !lua_isnumber(L, -1))
			goto out;
		uint32_t ins = (uint32_t)(int32_t)lua_tointeger(L, -1);
		if (ins !=
		    ljt_u32((const uint8_t *)(uintptr_t)f->bc, 4 * at[k]))
			goto out;
	}
	f->ok = 1;
out:
	lua_settop(L, top); /* the function stays, at b->base + index */
	return f->ok ? (int)(b->nfn - 1) : -1;
}

/* add_fn for a raw build: the function at p (a GCfunc, or NULL: none),
 * the same entries in the same order as add_fn makes them from jit.util,
 * with the bytecode and prototype from the verified layout (luavm.c). */
static int add_fn_raw(struct lm_build *b, const void *p)
{
	struct lm_fn *f;
	int i = fn_entry(b, p, &f);
	if (!f)
		return i;
	struct vm_fninfo fi;
	if (vm_luavm_fn(b->s->m, p, &fi) || !fi.nbc)
		return -1; /* a C function or a builtin */
	f->nbc = fi.nbc;
	f->first = fi.first;
	f->str = add_str(b, fi.src);
	if (f->str == UINT32_MAX)
		return -1;
	f->bc = fi.bc;
	f->pt = fi.proto;
	f->ok = 1;
	return i;
}

/* The constant at IR ref (biased) of b's trace as its IR holds it: the
 * opcode and type bytes of its IRIns and the 64-bit word after it (where
 * a KGC's pointer and a KNUM's value are, GC64). -1 if ref is not a
 * constant with a slot after it. */
static int k_raw(const struct lm_build *b, uint32_t ref, uint8_t *o, uint8_t *t,
		 uint64_t *v)
{
	if (!b->ir || ref < b->nk || ref + 1 >= LJT_REF_BIAS)
		return -1;
	const uint8_t *ins = b->ir + 8 * (size_t)ref;
	*t = ins[4];
	*o = ins[5];
	*v = ljt_u64(ins, 8);
	return 0;
}

enum { LMK_FN, LMK_NUM };

/* tracek's answer (at stack top) for ref, against the IR's bytes: learn
 * the opcode and type of a function and of a number constant; a second
 * kind of either, or a value that is not the IR's, turns raw builds off. */
static void k_learn(struct lm_build *b, uint32_t ref)
{
	struct vmod *m = b->s->m;
	lua_State *L = b->L;
	uint8_t o, t;
	uint64_t v;
	int kind;
	if (m->lmr == VM_LM_OFF || k_raw(b, ref, &o, &t, &v))
		return;
	if (lua_isfunction(L, -1)) {
		kind = LMK_FN;
		if ((uint64_t)(uintptr_t)lua_topointer(L, -1) != v)
			goto bad;
	} else if (lua_type(L, -1) == LUA_TNUMBER) {
		double d = lua_tonumber(L, -1);
		uint64_t bits;
		memcpy(&bits, &d, 8);
		if (bits != v)
			return; /* a KINT: neither kind */
		kind = LMK_NUM;
	} else {
		return;
	}
	if (!m->lmk[kind].known) {
		m->lmk[kind].o = o;
		m->lmk[kind].t = t;
		m->lmk[kind].known = 1;
		return;
	}
	if (m->lmk[kind].o == o && m->lmk[kind].t == t)
		return;
bad:
	m->lmr = VM_LM_OFF;
	snprintf(m->lmr_why, sizeof(m->lmr_why),
		 "trace %u: IR constant %u is not what jit.util.tracek says",
		 b->tr, ref);
}

/* The constant at IR ref (biased) of trace b->tr, pushed (or nothing and
 * -1). */
static int push_k(struct lm_build *b, uint32_t ref)
{
	lua_pushinteger(b->L, b->tr);
	lua_pushinteger(b->L, (lua_Integer)ref - (lua_Integer)LJT_REF_BIAS);
	if (util(b->L, b->s, "tracek", 2, 1)) {
		lua_pop(b->L, 1);
		return -1;
	}
	k_learn(b, ref);
	return 0;
}

/* Raw builds: the constant at ref of the learnt kind, its 64-bit word
 * into *v: 0; 1 a constant of another kind; -1 no constant there; -2
 * the kind not learnt yet (b->unsure set). */
static int k_kind(struct lm_build *b, uint32_t ref, int kind, uint64_t *v)
{
	const struct vmod *m = b->s->m;
	uint8_t o, t;
	if (k_raw(b, ref, &o, &t, v))
		return -1;
	if (!m->lmk[kind].known) {
		b->unsure = 1;
		return -2;
	}
	return o == m->lmk[kind].o && t == m->lmk[kind].t ? 0 : 1;
}

/* The function constant at ref: its index in b->fn, -1 when it is none we
 * vouch for, -2 when there is no constant there (or, raw, not sure). */
static int k_fn_look(struct lm_build *b, uint32_t ref)
{
	if (!b->raw)
		return push_k(b, ref) ? -2 : add_fn(b);
	uint64_t v;
	int r = k_kind(b, ref, LMK_FN, &v);
	if (r < 0)
		return -2;
	/* another kind: a constant, not a function */
	return r ? -1 : add_fn_raw(b, (const void *)(uintptr_t)v);
}

static int k_fn(struct lm_build *b, uint32_t ref)
{
	uint32_t h = ref & (LM_KC - 1);
	if (ref && b->kf_ref[h] == ref)
		return b->kf_res[h];
	int r = k_fn_look(b, ref);
	b->kf_ref[h] = (uint16_t)ref;
	b->kf_res[h] = (int16_t)r;
	return r;
}

/* The number constant at ref, its bits into *bits: 0, or -1. */
static int k_num_look(struct lm_build *b, uint32_t ref, uint64_t *bits)
{
	if (!b->raw) {
		if (push_k(b, ref))
			return -1;
		double d = lua_tonumber(b->L, -1);
		int isnum = lua_type(b->L, -1) == LUA_TNUMBER;
		lua_pop(b->L, 1);
		memcpy(bits, &d, 8);
		return isnum ? 0 : -1;
	}
	return k_kind(b, ref, LMK_NUM, bits) ? -1 : 0;
}

static int k_num(struct lm_build *b, uint32_t ref, uint64_t *bits)
{
	uint32_t h = ref & (LM_KC - 1);
	if (!ref || b->kn_ref[h] != ref) {
		b->kn_res[h] = (int8_t)k_num_look(b, ref, &b->kn_bits[h]);
		b->kn_ref[h] = (uint16_t)ref;
	}
	*bits = b->kn_bits[h];
	return b->kn_res[h];
}

/* add_frame's hash of (fn, pc) */
static uint32_t fr_hash(int fn, uint32_t pc)
{
	return (pc * 0x9e3779b1u + (uint32_t)fn) >> 24 & (LM_FRH - 1);
}

/* Frame k, just made, into the index */
static void fr_index(struct lm_build *b, uint32_t k)
{
	uint32_t h = fr_hash(b->fr[k].fn, b->fr[k].pc);
	b->frnext[k] = b->frh[h];
	b->frh[h] = (uint16_t)(k + 1);
}

/* The frame (fn, pc): its index in b->fr, or -1. */
static int add_frame(struct lm_build *b, int fn, uint32_t pc)
{
	for (uint32_t k = b->frh[fr_hash(fn, pc)]; k; k = b->frnext[k - 1])
		if (b->fr[k - 1].fn == fn && b->fr[k - 1].pc == pc)
			return (int)k - 1;
	if (b->nfr == LM_MAXFR)
		return -1;
	if (b->raw) { /* funcinfo(fn, pc).currentline, pc < bytecodes */
		uint32_t line = vm_luavm_line(b->s->m, b->fn[fn].pt, pc);
		if (b->s->m->lmr_bug) /* tests only: a planted fault */
			line++;
		b->fr[b->nfr] = (struct lm_frame){(uint16_t)fn, pc, line};
		fr_index(b, b->nfr);
		return (int)b->nfr++;
	}
	lua_State *L = b->L;
	int top = lua_gettop(L), has;
	lua_pushvalue(L, b->base + fn);
	lua_pushinteger(L, pc);
	if (util(L, b->s, "funcinfo", 2, 1) || !lua_istable(L, -1)) {
		lua_settop(L, top);
		return -1;
	}
	uint32_t line = intfield(L, -1, "currentline", &has);
	lua_settop(L, top);
	if (!has)
		return -1;
	b->fr[b->nfr] = (struct lm_frame){(uint16_t)fn, pc, line};
	fr_index(b, b->nfr);
	return (int)b->nfr++;
}

/* jit.util.tracesnap agrees with the raw snapshots of trace tr? */
static int snaps_agree(struct lm_build *b, const uint8_t *snap,
		       const uint8_t *map, uint32_t nsnap,
		       const struct ljt_layout *lay)
{
	lua_State *L = b->L;
	int top = lua_gettop(L), ok = 1;
	for (uint32_t sn = 0; ok && sn <= nsnap; sn++) {
		lua_settop(L, top);
		lua_pushinteger(L, b->tr);
		lua_pushinteger(L, sn);
		if (util(L, b->s, "tracesnap", 2, 1))
			return 0;
		if (sn == nsnap) { /* one past the last: nothing */
			ok = lua_isnil(L, -1);
			break;
		}
		if (!lua_istable(L, -1))
			return 0;
		const uint8_t *S = snap + (size_t)sn * lay->snap_size;
		uint32_t mapofs =
		    lay->mapofs_w == 4 ? ljt_u32(S, 0) : ljt_u16(S, 0);
		uint32_t nent = S[lay->snap_nent];
		lua_rawgeti(L, -1, 0);
		lua_rawgeti(L, -2, 1);
		ok = (uint32_t)lua_tointeger(L, -2) + LJT_REF_BIAS ==
			 ljt_u16(S, lay->snap_ref) &&
		     (uint32_t)lua_tointeger(L, -1) == S[lay->snap_nslots];
		lua_pop(L, 2);
		for (uint32_t e = 0; ok && e <= nent; e++) {
			lua_rawgeti(L, -1, (int)e + 2);
			uint32_t v = (uint32_t)(int32_t)lua_tointeger(L, -1);
			lua_pop(L, 1);
			ok = e == nent ? v == 0xff000000u /* SNAP(255,0,0) */
				       : v == ljt_u32(map, 4 * (mapofs + e));
		}
	}
	lua_settop(L, top);
	return ok;
}

/* The frames of one snapshot, outermost first, into st (indexes of
 * b->fr): how many, or 0 when not sure. */
static uint32_t snap_frames(struct lm_build *b, const uint8_t *S,
			    const uint8_t *map, const struct ljt_layout *lay,
			    int basefn, uint16_t *st)
{
	uint32_t mapofs = lay->mapofs_w == 4 ? ljt_u32(S, 0) : ljt_u16(S, 0);
	uint32_t nent = S[lay->snap_nent];
	const uint8_t *ent = map + 4 * (size_t)mapofs;
	/* FR2: the 64-bit (pc << 8 | baseslot - 2) after the entries */
	uint64_t pcbase =
	    ljt_u32(ent, 4 * nent) | (uint64_t)ljt_u32(ent, 4 * nent + 4) << 32;
	uint64_t pc = pcbase >> 8;
	uint32_t baseslot = (uint32_t)(pcbase & 0xff) + 2;
	int fns[LM_MAXDEPTH];
	uint64_t links[LM_MAXDEPTH];
	uint32_t n = 0, lastframe = 1;
	fns[0] = basefn;
	for (uint32_t e = 0; e < nent; e++) {
		uint32_t sn = ljt_u32(ent, 4 * e), slot = sn >> 24,
			 ref = sn & 0xffff;
		if (slot == 1)
			continue; /* FR2's slot 1: a tail call's marker */
		if (sn & SNAP_CONT)
			return 0; /* a continuation frame: not ours to say */
		if (slot == 0) {
			if (ref >= LJT_REF_BIAS ||
			    (fns[0] = k_fn(b, ref)) == -2)
				return 0; /* the function is not a constant */
			continue;
		}
		if (!(sn & SNAP_FRAME))
			continue;
		/* slot s: a frame link; its function at s - 1 (the entry
		 * just before, entries being sorted by slot) */
		uint32_t pf = e ? ljt_u32(ent, 4 * (e - 1)) : 0;
		if (!e || pf >> 24 != slot - 1 ||
		    (pf & 0xffff) >= LJT_REF_BIAS || ref >= LJT_REF_BIAS ||
		    ++n >= LM_MAXDEPTH)
			return 0;
		if ((fns[n] = k_fn(b, pf & 0xffff)) == -2 ||
		    k_num(b, ref, &links[n]))
			return 0;
		lastframe = slot;
	}
	/* the innermost frame's base must be the snapshot's */
	if (lastframe + 1 != baseslot)
		return 0;
	for (uint32_t k = 0; k <= n; k++) {
		if (fns[k] < 0)
			return 0;
		const struct lm_fn *f = &b->fn[fns[k]];
		uint64_t at = k == n ? pc : links[k + 1];
		if ((at & 3) || at < f->bc || at > f->bc + 4 * (uint64_t)f->nbc)
			return 0; /* not a Lua frame, or not in it */
		uint64_t i = (at - f->bc) / 4;
		if (k < n) { /* a return pc: the call before it */
			if (i == 0)
				return 0;
			i--;
		}
		if (i >= f->nbc)
			return 0;
		int fr = add_frame(b, fns[k], (uint32_t)i);
		if (fr < 0)
			return 0;
		st[k] = (uint16_t)fr;
	}
	return n + 1;
}

/* A map's header (docs/ABI.md 1.5): version 1, map flag LOOPS (every map
 * of this module marks its trace's loop), the counts; past it. */
static inline uint8_t *map_head(uint8_t *p, uint32_t nr, uint32_t nfr,
				uint32_t nst, uint32_t strlen)
{
	alog_st16(p, 1);
	alog_st16(p + 2, 1);
	alog_st16(p + 4, nr);
	alog_st16(p + 6, nfr);
	alog_st32(p + 8, nst);
	alog_st32(p + 12, strlen);
	return p + 16;
}

/* A range from code offset lo: its depth frames from stack entry stack
 * on (EXACT when it has any), LOOP from the trace's loop offset on (loop
 * 0: a trace without one); past it. */
static inline uint8_t *map_range(uint8_t *p, uint32_t lo, uint32_t stack,
				 uint32_t depth, uint32_t loop)
{
	alog_st32(p, lo);
	alog_st16(p + 4, stack);
	p[6] = (uint8_t)depth;
	p[7] = (depth ? 1 : 0) | (loop && lo >= loop ? 2 : 0);
	return p + 8;
}

/* Build trace b->tr's map into *outp, *lenp (NULL, 0: none): 0, or -1
 * when its snapshots' offsets are not what we understand. A jit.util
 * build leaves the functions it met on L's stack. */
static int build_map(struct lm_build *b, const uint8_t *snap,
		     const uint8_t *map, uint32_t nsnap, uint32_t szmc,
		     uint32_t loop, const struct ljt_layout *lay,
		     uint8_t **outp, uint32_t *lenp)
{
	struct vmod *m = b->s->m;
	lua_State *L = b->L;
	int ret = 0;
	uint8_t *out = NULL;
	uint16_t(*stk)[LM_MAXDEPTH] = NULL;
	uint32_t *lo = NULL, *depth = NULL, *rlo = NULL, *rsn = NULL;
	*outp = NULL;
	*lenp = 0;
	/* the function the trace's base frame runs (its start event) */
	lua_rawgeti(L, LUA_REGISTRYINDEX, b->s->basefn_ref);
	if (lua_istable(L, -1))
		lua_rawgeti(L, -1, (int)b->tr);
	else
		lua_pushnil(L);
	lua_remove(L, -2);
	int basefn;
	if (b->raw) {
		const void *p =
		    lua_isfunction(L, -1) ? lua_topointer(L, -1) : NULL;
		lua_pop(L, 1);
		basefn = add_fn_raw(b, p);
	} else {
		b->base = lua_gettop(L);
		basefn = add_fn(b); /* (a nil is popped: b->base stays right) */
	}
	stk = malloc((size_t)nsnap * sizeof(*stk));
	lo = malloc((size_t)nsnap * sizeof(*lo));
	depth = malloc((size_t)nsnap * sizeof(*depth));
	if (!stk || !lo || !depth)
		goto out;
	uint32_t prev = 0;
	for (uint32_t i = 0; i < nsnap; i++) {
		const uint8_t *S = snap + (size_t)i * lay->snap_size;
		lo[i] = ljt_u16(S, lay->snap_mcofs);
		if ((i == 0 && lo[i] != 0) || lo[i] < prev || lo[i] >= szmc) {
			ret = -1;
			goto out; /* offsets we do not understand: no map */
		}
		prev = lo[i];
		depth[i] = snap_frames(b, S, map, lay, basefn, stk[i]);
	}
	if (m->lm_shift) /* tests only: every range one snapshot late */
		for (uint32_t i = nsnap; i-- > 1;) {
			depth[i] = depth[i - 1];
			memcpy(stk[i], stk[i - 1], sizeof(stk[i]));
		}
	/* ranges: non-empty, a change of frames (or of loop) each; one
	 * boundary more at the trace's loop offset (range flag bit 1 from
	 * there on, header flag bit 0: the map marks its loop) */
	rlo = malloc((size_t)(nsnap + 1) * sizeof(*rlo));
	rsn = malloc((size_t)(nsnap + 1) * sizeof(*rsn));
	if (!rlo || !rsn)
		goto out;
	uint32_t nr = 0, nst = 0;
	for (uint32_t i = 0; i < nsnap; i++) {
		uint32_t hi = i + 1 < nsnap ? lo[i + 1] : szmc;
		for (int part = 0; part < 2; part++) {
			uint32_t a = lo[i], z = hi;
			if (loop > a && loop < z) {
				if (part == 0)
					z = loop;
				else
					a = loop;
			} else if (part) {
				break;
			}
			if (z == a)
				continue;
			if (nr && depth[rsn[nr - 1]] == depth[i] &&
			    (rlo[nr - 1] >= loop) == (a >= loop || !loop) &&
			    !memcmp(stk[rsn[nr - 1]], stk[i], depth[i] * 2))
				continue;
			rlo[nr] = a;
			rsn[nr] = i;
			nst += depth[i];
			nr++;
		}
	}
	uint32_t len = 16 + 8 * nr + 20 * b->nfr + 2 * nst + b->strlen;
	len = (len + 3) & ~3u;
	if (nr > 0xffff || b->nfr > 0xffff || !(out = calloc(1, len)))
		goto out;
	uint8_t *p = map_head(out, nr, b->nfr, nst, b->strlen);
	uint32_t so = 0;
	for (uint32_t r = 0; r < nr; r++) {
		uint32_t d = depth[rsn[r]];
		p = map_range(p, rlo[r], so, d, loop);
		so += d;
	}
	for (uint32_t k = 0; k < b->nfr; k++, p += 20) {
		const struct lm_fn *f = &b->fn[b->fr[k].fn];
		alog_st32(p, f->str);
		alog_st32(p + 4, UINT32_MAX); /* names: not known */
		alog_st32(p + 8, b->fr[k].line);
		alog_st32(p + 12, f->first);
		alog_st32(p + 16, b->fr[k].pc);
	}
	for (uint32_t r = 0; r < nr; r++)
		for (uint32_t k = 0; k < depth[rsn[r]]; k++, p += 2)
			alog_st16(p, stk[rsn[r]][k]);
	memcpy(p, b->str, b->strlen);
	*outp = out;
	*lenp = len;
	out = NULL;
out:
	free(out);
	free(stk);
	free(lo);
	free(depth);
	free(rlo);
	free(rsn);
	return ret;
}

static void lm_init(struct lm_build *b, lua_State *L, struct lstate *s,
		    uint32_t tr, const uint8_t *T, const struct ljt_layout *lay)
{
	b->L = L;
	b->s = s;
	b->tr = tr;
	b->raw = b->unsure = 0;
	b->ir = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->ir);
	b->nk = ljt_u32(T, lay->nk);
	b->base = 0;
	b->nfn = b->nfr = b->strlen = 0;
	memset(b->frh, 0, sizeof(b->frh));
	memset(b->kf_ref, 0, sizeof(b->kf_ref));
	memset(b->kn_ref, 0, sizeof(b->kn_ref));
}

static int same_map(const uint8_t *a, uint32_t alen, const uint8_t *b,
		    uint32_t blen)
{
	return alen == blen && (!alen || !memcmp(a, b, alen));
}

VM_HOT void vm_luamap(struct vmod *m, lua_State *L, struct lstate *s,
		      uint32_t tr, struct tinfo *ti)
{
	if (!m->want_luamap || m->lm == VM_LM_OFF ||
	    (m->raw != VM_RAW_ON && m->raw != VM_RAW_CHECKING))
		return;
	uint64_t t0 = jsf_now_ns();
	const struct ljt_layout *lay = &ljt_layouts[__builtin_ctz(m->raw_mask)];
	const uint8_t *T = ljt_trace(L, tr, lay);
	if (!lay->snap_mcofs) {
		m->lm = VM_LM_OFF;
		snprintf(m->lm_why, sizeof(m->lm_why),
			 "layout %s has no snapshot offsets", lay->name);
		return;
	}
	if (!T || (uint64_t)(uintptr_t)ljt_u64(T, lay->mcode) != ti->start)
		return;
	uint32_t nsnap = ljt_u16(T, lay->nsnap),
		 szmc = ljt_u32(T, lay->szmcode);
	const uint8_t *snap = (const uint8_t *)(uintptr_t)ljt_u64(T, lay->snap);
	const uint8_t *map =
	    (const uint8_t *)(uintptr_t)ljt_u64(T, lay->snapmap);
	if (!nsnap || !snap || !map || szmc != ti->size)
		return;
	uint32_t loop = ti->loop < szmc ? ti->loop : 0;
	/* (only the counts and the indexes' heads are set, the tables
	 * fill up) */
	if (!s->lmb && !(s->lmb = malloc(sizeof(*s->lmb))))
		return;
	struct lm_build *b = s->lmb;
	lm_init(b, L, s, tr, T, lay);
	int top = lua_gettop(L);
	uint8_t *out = NULL, *rout = NULL;
	uint32_t len = 0, rlen = 0;
	int check = m->lm != VM_LM_ON || ++m->lm_stops % LM_RECHECK == 0;
	if (check) {
		if (!snaps_agree(b, snap, map, nsnap, lay)) {
			m->lm = VM_LM_OFF;
			snprintf(m->lm_why, sizeof(m->lm_why),
				 "trace %u: its snapshots and "
				 "jit.util.tracesnap disagree",
				 tr);
			goto out;
		}
		m->lm_checked++;
		if (m->lm_checked >= LM_CHECK)
			m->lm = VM_LM_ON;
	}
	/* Without jit.util where the Lua layout is verified: the same bytes
	 * as jit.util's build on LM_CHECK traces first, then on one in
	 * LM_RECHECK (and on every trace the raw build was unsure of). */
	int rawbuilt = 0;
	if (m->lmr != VM_LM_OFF && m->lv_state == 1 && b->ir) {
		b->raw = 1;
		if (build_map(b, snap, map, nsnap, szmc, loop, lay, &rout,
			      &rlen)) {
			m->lm_bad++;
			goto out;
		}
		rawbuilt = !b->unsure;
		if (rawbuilt && m->lmr == VM_LM_ON && !check) {
			out = rout, len = rlen, rout = NULL;
			m->lmr_traces++;
			goto publish;
		}
		lm_init(b, L, s, tr, T, lay); /* for the jit.util build */
	}
	if (build_map(b, snap, map, nsnap, szmc, loop, lay, &out, &len)) {
		m->lm_bad++;
		goto out;
	}
	if (rawbuilt && m->lmr != VM_LM_OFF) {
		if (!same_map(out, len, rout, rlen)) {
			m->lmr = VM_LM_OFF;
			snprintf(m->lmr_why, sizeof(m->lmr_why),
				 "trace %u: its map from memory and from "
				 "jit.util differ",
				 tr);
		} else if (m->lmr == VM_LM_CHECKING &&
			   ++m->lmr_checked >= LM_CHECK) {
			m->lmr = VM_LM_ON;
		}
	}
publish:
	if (!out)
		goto out;
	free(ti->lmap);
	ti->lmap = out;
	ti->lmap_len = len;
	out = NULL;
	m->lm_traces++;
	m->lm_bytes += len;
out:
	free(out);
	free(rout);
	lua_settop(L, top);
	m->lm_ns += jsf_now_ns() - t0;
}

/* A map of trace ti's loop alone, where it has no map of its Lua frames
 * (luamap off, refused, or not built for this trace): one range, or two
 * split at its loop offset (the second with the LOOP bit), no frames
 * (depth 0, EXACT clear), map flag LOOPS (docs/ABI.md 1.5): the VM-state
 * profile's head and loop for every trace. Into out (VM_LOOPMAP_MAX
 * bytes); its length, 24 or 32. The offset is the trace's own (tracemc's
 * third result, or the GCtrace's once checked against it), as exact as
 * its rows. */
VM_HOT uint32_t vm_loop_map(const struct tinfo *ti, uint8_t *out)
{
	uint32_t loop = ti->loop < ti->size ? ti->loop : 0;
	uint32_t nr = loop ? 2 : 1;
	uint8_t *p = map_head(out, nr, 0, 0, 0);
	p = map_range(p, 0, 0, 0, loop);
	if (loop)
		map_range(p, loop, 0, 0, loop);
	return 16 + 8 * nr;
}

/* "start": remember the function the trace's base frame runs: the start
 * event's for a root or stitched trace, its parent's for a side trace. */
VM_HOT void vm_luamap_start(lua_State *L, struct lstate *s, uint32_t tr)
{
	if (s->basefn_ref == LUA_NOREF) {
		lua_newtable(L);
		s->basefn_ref = luaL_ref(L, LUA_REGISTRYINDEX);
	}
	int top = lua_gettop(L);
	lua_rawgeti(L, LUA_REGISTRYINDEX, s->basefn_ref);
	lua_Integer parent = lua_tointeger(L, 5), exitno = lua_tointeger(L, 6);
	if (parent > 0 && exitno >= 0 && !lua_isnil(L, 5))
		lua_rawgeti(L, -1, (int)parent);
	else
		lua_pushvalue(L, 3);
	lua_rawseti(L, -2, (int)tr);
	lua_settop(L, top);
}
