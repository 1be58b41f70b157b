/* SPDX-License-Identifier: MIT OR GPL-2.0-only */
/*
 * The in-kernel stack sampler (docs/PROFILE.md): a perf_event program on
 * cpu-clock. For a sampled task of a watched process (or any, with
 * cfg_all) it walks the user stack from the task's user registers, one
 * frame per bpf_loop step: the pc's mapping (procs), then its row — an ELF
 * object's from the rows map, anonymous code's from the process's own live
 * region read by the protocol of docs/ABI.md §3.5 with bpf_probe_read_user
 * (bounded retries; an odd or changing seq is "busy", never waited for: the
 * interrupted thread may be the writer) — and the caller's CFA, rbp and
 * return address from it. One struct smp_sample per sample to the ring
 * buffer, and a struct smp_raw (registers and stack) before it in debug
 * mode or when the walk met an unknown mapping (rate-limited).
 * Dual-licensed with the GPL: bpf_probe_read_user is GPL-only.
 */
#include "vmlinux.h"

#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "smp_abi.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

const volatile __u32 cfg_max_frames = SMP_MAX_FRAMES;
const volatile __u32 cfg_raw_every = 0;
const volatile __u32 cfg_all = 0;
const volatile __u32 cfg_follow = 0;

#define PF_KTHREAD 0x00200000
#define EEXIST_ 17
#define PROT_EXEC_ 4
#define RAW_GAP_NS                                                       \
	2000000ull /* at most one unknown-mapping copy per 2 ms and CPU: \
		      the user side unwinds those samples from the copy */
#define RAW_BURST                                                         \
	64 /* ... after a burst of 64 (a token bucket): a command's first \
	      samples, taken before the user side has read its mappings   \
	      and found its region, are all copied */
#define REGION_TRIES 3
#define WAKE_BYTES (256 << 10)
#define FRE_BUF 256 /* bytes of one function's FREs read at once */
#define FRE_MAX 64  /* FREs scanned per function */
#define ROWC_N 256  /* ELF row answers remembered per CPU (direct-mapped) */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct smp_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SMP_MAX_OBJS);
	__type(key, __u32);
	__type(value, struct smp_obj);
} objs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SMP_MAX_ROWS);
	__type(key, __u32);
	__type(value, struct smp_row);
} rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} rb SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, 127 * sizeof(__u64));
} kstacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct smp_counters);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct smp_luavm);
} luavms SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct smp_vmkey);
	__type(value, struct smp_vmval);
} vmprof SEC(".maps");

/* per thread: the trace it last ran (interpreter time is charged to it) */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, __u32);
} lasttr SEC(".maps");

/* A row as the walk applies it. */
struct xrow {
	__s32 cfa_off, fp_off, ra_off;
	__u8 rule, fp_saved, outermost, plt_k;
};

/* The inner searches' state lives in the map value, not on the stack:
 * the verifier does not track map memory, so their steps converge. */
struct rsearch {
	__u32 first, lo, hi, pc;
	int err;
};
struct fsearch {
	__u64 fdes, pc;
	__u32 a, e;
	int err;
};
struct frescan {
	__u32 aw, q, fo, size, len, nfres, prev, i;
	__s32 fixed_ra;
	int err, found, done;
	struct xrow x;
};

/* An ELF row answer by (object, address): rows and objects are only ever
 * appended (sampler.c: an object's rows are written before its objs entry,
 * ids and row indices never reused), so an answer once found holds for as
 * long as the program runs. The outer frames of a process's samples (main,
 * the VM's entry, the interpreter's) are the same return addresses sample
 * after sample: a hit is one compare instead of a binary search. */
struct rowc {
	__u32 obj1; /* obj + 1; 0: empty */
	__u32 vaddr;
	struct xrow x;
};

#define LCH_N 32 /* C frames remembered per sample */
#define LTH_N 8	 /* threads (a coroutine, its resumers) */
/* The Lua walk's state. */
struct lwalk {
	__u64 f, stack, pc;
	__u64 L, cf;	 /* the thread walked; cf != 0: following its cframes */
	__u64 lcf, ltop; /* the C frame of the frames walked (0: unknown),
			    ltop the stack top it was made at when it has no
			    Lua frame (nres < 0; else 0) */
	__u32 seg, skip, inner, flags, stop;
	/* the C frames met, in order (ch[ci] is lcf), per thread walked
	 * (th): how many C frames its chain had left at its first frame
	 * (thsh, see lstep) */
	__u64 ch[LCH_N];
	__u32 ci, nch, th;
	__u8 thsh[LTH_N];
};

/* The walk's state, per CPU (too big for the 512-byte stack). */
struct walk {
	struct smp_sample s;
	struct smp_lua lua;
	struct lwalk lw;
	__u64 fsp[SMP_MAX_FRAMES]; /* each native frame's sp */
	__u8 lfci[SMP_MAX_LFRAMES], lfth[SMP_MAX_LFRAMES]; /* each Lua frame's
					       lw.ci and lw.th */
	/* lplace: the next Lua frame, native frame, VM entry count; the
	 * VM entry's native frame: its index among them, its sp and the
	 * next frame's (have: found) */
	__u32 mj, mi, me, mcur, mhave;
	__u64 msp, mup;
	__u64 pc, sp, bp;
	__u32 stop, max;
	__u32 mlo, mhi; /* the mapping search's bounds (see step) */
	struct rsearch rs;
	struct fsearch fsr;
	struct frescan fr;
	__u8 fre[2 * FRE_BUF];
	/* a row lookup's answer (elf_row, region_row: global functions) */
	struct xrow rx;
	__u64 rfs;
	struct rowc rowc[ROWC_N];
};
struct wctx {
	struct walk *w;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct walk);
} scratch SEC(".maps");

struct loopctx {
	struct walk *w;
	struct smp_proc *p;
	struct smp_counters *c;
};

/* ---- ELF rows */
/* one step of the search for the last row with row.pc <= pc */
static long row_step(__u32 i, void *vctx)
{
	struct walk *w = ((struct wctx *)vctx)->w;
	if (!w)
		return 1;
	struct rsearch *rs = &w->rs;
	if (rs->lo >= rs->hi)
		return 1;
	__u32 m = rs->lo + (rs->hi - rs->lo) / 2, k = rs->first + m;
	struct smp_row *r = bpf_map_lookup_elem(&rows, &k);
	if (!r) {
		rs->err = 1;
		return 1;
	}
	if (r->pc <= rs->pc)
		rs->lo = m + 1;
	else
		rs->hi = m;
	return 0;
}

static __always_inline struct walk *walk_of(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&scratch, &zero);
}

/* The row of object obj at vaddr into the walk's rx: 0 or a stop reason.
 * A global function (scalar arguments, the state in the per-CPU scratch):
 * the verifier checks it once on its own, not once per state of each
 * frame walk step that calls it. */
__noinline int elf_row(__u32 obj, __u64 vaddr)
{
	struct walk *w = walk_of();
	if (!w)
		return SMP_STOP_NO_ROWS;
	if (vaddr >= 0xffffffffull)
		return SMP_STOP_NO_ROW;
	__u32 h = (((__u32)vaddr * 2654435761u) ^ (obj * 40503u)) >> 24;
	struct rowc *rc = &w->rowc[h & (ROWC_N - 1)];
	if (rc->obj1 == obj + 1 && rc->vaddr == (__u32)vaddr) {
		w->rx = rc->x;
		return 0;
	}
	struct smp_obj *o = bpf_map_lookup_elem(&objs, &obj);
	if (!o || !o->n)
		return SMP_STOP_NO_ROWS;
	struct rsearch *rs = &w->rs;
	rs->first = o->first;
	rs->lo = 0;
	rs->hi = o->n;
	rs->pc = (__u32)vaddr;
	rs->err = 0;
	struct wctx wc = {.w = w};
	bpf_loop(32, row_step, &wc, 0);
	if (rs->err || rs->lo < rs->hi)
		return SMP_STOP_NO_ROW;
	__u32 lo = rs->lo, first = rs->first;
	if (!lo)
		return SMP_STOP_NO_ROW;
	__u32 k = first + lo - 1;
	struct smp_row *r = bpf_map_lookup_elem(&rows, &k);
	if (!r || r->rule == SMP_RULE_NONE)
		return SMP_STOP_NO_ROW;
	if (r->rule == SMP_RULE_UNSUP)
		return SMP_STOP_UNSUP_RULE;
	struct xrow *x = &w->rx;
	x->rule = r->rule;
	x->cfa_off = r->cfa_off;
	x->fp_off = r->fp_off;
	x->ra_off = r->ra_off;
	x->fp_saved = r->flags & SMP_ROW_FP_SAVED;
	x->outermost = (r->flags & SMP_ROW_RA_UNDEF) != 0;
	x->plt_k = r->plt_k;
	rc->x = *x;
	rc->obj1 = obj + 1;
	rc->vaddr = (__u32)vaddr;
	return 0;
}

/* ---- the live region (docs/ABI.md §1-§3) */
struct rhdr { /* header bytes 32..88 */
	__u64 file_size, producer_base, create_ns, create_real;
	__u32 pid, pad;
	__u64 seq, sec_off;
};
struct bhdr {			/* section block header + SFrame header */
	__u64 magic, total;	/* 0, 8 */
	__u32 fde_cap, fre_cap; /* 16, 20 */
	__u32 log_cap, log_n, log_off, sec_len; /* 24..36 */
	__u8 res[24];				/* 40..63 */
	__u16 sf_magic;				/* 64 */
	__u8 sf_version, sf_flags, sf_abi;
	__s8 fixed_fp, fixed_ra;
	__u8 auxhdr_len;
	__u32 num_fdes, num_fres, fre_len, fdeoff, freoff; /* 72..91 */
} __attribute__((packed));

static __always_inline __u32 ldu(const __u8 *b, __u32 p, __u32 n)
{
	__u32 v = b[p & (FRE_BUF - 1)];
	if (n >= 2)
		v |= (__u32)b[(p + 1) & (FRE_BUF - 1)] << 8;
	if (n >= 4) {
		v |= (__u32)b[(p + 2) & (FRE_BUF - 1)] << 16;
		v |= (__u32)b[(p + 3) & (FRE_BUF - 1)] << 24;
	}
	return v;
}
static __always_inline __s32 lds(const __u8 *b, __u32 p, __u32 n)
{
	__u32 v = ldu(b, p, n);
	if (n == 1)
		return (__s8)v;
	if (n == 2)
		return (__s16)v;
	return (__s32)v;
}

/* one step of the search for the first FDE whose start > pc */
static long fde_step(__u32 i, void *vctx)
{
	struct walk *w = ((struct wctx *)vctx)->w;
	if (!w)
		return 1;
	struct fsearch *fs = &w->fsr;
	if (fs->a >= fs->e)
		return 1;
	__u32 m = fs->a + (fs->e - fs->a) / 2;
	__u64 p = fs->fdes + (__u64)m * 16;
	__s64 rel;
	if (bpf_probe_read_user(&rel, 8, (void *)p)) {
		fs->err = 1;
		return 1;
	}
	if (p + rel <= fs->pc)
		fs->a = m + 1;
	else
		fs->e = m;
	return 0;
}

/* one FRE of the function (docs/ABI.md §2): the last whose start offset
 * is <= fo wins */
static long fre_step(__u32 i, void *vctx)
{
	struct walk *w = ((struct wctx *)vctx)->w;
	if (!w)
		return 1;
	struct frescan *fr = &w->fr;
	if (i >= fr->nfres) {
		fr->done = 1;
		return 1;
	}
	const __u8 *bf = w->fre;
	__u32 q = fr->q, aw = fr->aw, len = fr->len;
	if (q + aw + 1 > len) {
		fr->err =
		    len == FRE_BUF ? SMP_STOP_UNSUP_RULE : SMP_STOP_CORRUPT;
		return 1;
	}
	__u32 so = ldu(bf, q, aw);
	__u32 fi = bf[(q + aw) & (FRE_BUF - 1)];
	__u32 base_sp = fi & 1, nw = (fi >> 1) & 0xf, sc = (fi >> 5) & 3;
	if (sc > 2 || nw > 2 || (fi & 0x80) || so >= fr->size ||
	    (i && so <= fr->prev)) {
		fr->err = SMP_STOP_CORRUPT;
		return 1;
	}
	__u32 ws = 1u << sc, fl = aw + 1 + nw * ws;
	if (q + fl > len) {
		fr->err =
		    len == FRE_BUF ? SMP_STOP_UNSUP_RULE : SMP_STOP_CORRUPT;
		return 1;
	}
	fr->prev = so;
	fr->i = i + 1;
	if (so > fr->fo) {
		fr->done = 1;
		return 1;
	}
	fr->found = 1;
	fr->x.outermost = nw == 0;
	fr->x.rule = base_sp ? SMP_RULE_SP : SMP_RULE_FP;
	fr->x.cfa_off = nw ? lds(bf, q + aw + 1, ws) : 0;
	fr->x.fp_saved = nw == 2;
	fr->x.fp_off = nw == 2 ? lds(bf, q + aw + 1 + ws, ws) : 0;
	fr->x.ra_off = fr->fixed_ra;
	fr->q = q + fl;
	return 0;
}

/* One attempt: 0 with the row and function start, or a stop reason;
 * the caller's seq check decides whether it counts. */
static __always_inline int region_once(struct walk *w, __u64 base, __u64 rsize,
				       const struct rhdr *h, __u64 pc,
				       struct xrow *x, __u64 *fs)
{
	__u64 fsz = h->file_size < rsize ? h->file_size : rsize;
	__u64 off = h->sec_off;
	struct bhdr b;
	if (off < 4096 || (off & 7) || off + sizeof(b) > fsz)
		return SMP_STOP_CORRUPT;
	if (bpf_probe_read_user(&b, sizeof(b), (void *)(base + off)))
		return SMP_STOP_NOT_RESIDENT;
	__u64 fde_cap = b.fde_cap, fre_cap = b.fre_cap;
	if (b.total > fsz - off ||
	    64 + 28 + 4 + fde_cap * 16 + fre_cap > b.total)
		return SMP_STOP_CORRUPT;
	__u64 fdeoff = b.fdeoff, freoff = b.freoff, nf = b.num_fdes;
	__u32 fre_len = b.fre_len;
	if (freoff != 4 + fde_cap * 16 || fre_len > fre_cap ||
	    fdeoff % 16 != 4 || fdeoff + nf * 16 > freoff)
		return SMP_STOP_CORRUPT;
	__u64 sf = base + off + 64;
	__u64 fdes = sf + 28 + fdeoff;
	struct fsearch *fsr = &w->fsr;
	fsr->fdes = fdes;
	fsr->pc = pc;
	fsr->a = 0;
	fsr->e = (__u32)nf;
	fsr->err = 0;
	struct wctx wc = {.w = w};
	bpf_loop(32, fde_step, &wc, 0);
	if (fsr->err)
		return SMP_STOP_NOT_RESIDENT;
	__u32 a = fsr->a;
	if (a == 0 || a < fsr->e)
		return a ? SMP_STOP_CORRUPT : SMP_STOP_NO_TRACE;
	__u64 p = fdes + (__u64)(a - 1) * 16;
	struct {
		__s64 rel;
		__u32 size, attr;
	} f;
	if (bpf_probe_read_user(&f, sizeof(f), (void *)p))
		return SMP_STOP_NOT_RESIDENT;
	__u64 start = p + f.rel;
	if (pc - start >= f.size)
		return SMP_STOP_NO_TRACE;
	__u32 fo = (__u32)(pc - start);
	if (f.attr > fre_len || fre_len - f.attr < 5)
		return SMP_STOP_CORRUPT;
	__u32 len = fre_len - f.attr;
	if (len > FRE_BUF)
		len = FRE_BUF;
	barrier_var(len);
	__u64 fres = sf + 28 + freoff + f.attr;
	if (bpf_probe_read_user(w->fre, len & (2 * FRE_BUF - 1), (void *)fres))
		return SMP_STOP_NOT_RESIDENT;
	const __u8 *bf = w->fre;
	__u32 nfres = ldu(bf, 0, 2), info = bf[2], info2 = bf[3];
	__u32 t = info & 0xf;
	if (t > 2 || (info & 0x70) || (info2 & 0x0f) || !nfres ||
	    nfres > f.size)
		return SMP_STOP_CORRUPT;
	struct frescan *fr = &w->fr;
	__builtin_memset(fr, 0, sizeof(*fr));
	fr->aw = 1u << t;
	fr->q = 5;
	fr->fo = fo;
	fr->size = f.size;
	fr->len = len;
	fr->nfres = nfres;
	fr->fixed_ra = b.fixed_ra;
	bpf_loop(FRE_MAX, fre_step, &wc, 0);
	if (fr->err)
		return fr->err;
	if (!fr->done && fr->i < nfres)
		return SMP_STOP_UNSUP_RULE; /* more FREs than scanned */
	if (!fr->found)
		return SMP_STOP_CORRUPT;
	*x = fr->x;
	*fs = start;
	return 0;
}

/* The row of anonymous code at pc from the region mapped at base (rsize
 * bytes) into the walk's rx, its function's start into rfs: 0 or a stop
 * reason. A global function, as elf_row. */
__noinline int region_row(__u64 base, __u64 rsize, __u64 pc)
{
	struct walk *w = walk_of();
	if (!w)
		return SMP_STOP_NO_REGION;
	if (!base)
		return SMP_STOP_NO_REGION;
	int rc = SMP_STOP_BUSY;
	for (int i = 0; i < REGION_TRIES; i++) {
		struct rhdr h;
		if (bpf_probe_read_user(&h, sizeof(h), (void *)(base + 32)))
			return SMP_STOP_NOT_RESIDENT;
		if (h.seq & 1) {
			w->s.retries++;
			continue;
		}
		rc = region_once(w, base, rsize, &h, pc, &w->rx, &w->rfs);
		__u64 s2;
		if (bpf_probe_read_user(&s2, 8, (void *)(base + 72)))
			return SMP_STOP_NOT_RESIDENT;
		if (s2 == h.seq)
			return rc;
		w->s.retries++;
		rc = SMP_STOP_BUSY;
	}
	return SMP_STOP_BUSY;
}

/* ---- one frame per step */
static long step(__u32 i, void *vctx)
{
	struct loopctx *lc = vctx;
	struct walk *w = lc->w;
	struct smp_proc *p = lc->p;
	if (!w || !p)
		return 1;
	__u32 n = w->s.nframes;
	if (n >= SMP_MAX_FRAMES || n >= w->max) {
		w->stop = SMP_STOP_DEPTH;
		return 1;
	}
	struct smp_frame *fr = &w->s.frames[n & (SMP_MAX_FRAMES - 1)];
	fr->pc = w->pc;
	fr->fn_start = 0;
	w->fsp[n & (SMP_MAX_FRAMES - 1)] = w->sp;
	w->s.nframes = n + 1;
	__u64 pc = w->pc, look = n ? pc - 1 : pc;
	/* the mapping: the last one with start <= look. The bounds live in
	 * the map value, not in registers: each step reads them back as
	 * unknown scalars, so the verifier's states after either branch are
	 * the same and prune (in registers, each path's bounds were exact
	 * and precise: 2^9 paths, each walked through the rest of the step) */
	w->mlo = 0;
	w->mhi = p->nmaps < SMP_MAX_MAPS ? p->nmaps : SMP_MAX_MAPS;
	for (int k = 0; k < 9; k++) {
		__asm__ __volatile__("" ::
					 : "memory"); /* read back, each time */
		__u32 lo = w->mlo, hi = w->mhi;
		if (lo >= hi)
			break;
		__u32 m = lo + (hi - lo) / 2;
		if (p->maps[m & (SMP_MAX_MAPS - 1)].start <= look)
			w->mlo = m + 1;
		else
			w->mhi = m;
	}
	__u32 lo = w->mlo;
	struct smp_map *m = 0;
	if (lo) {
		m = &p->maps[(lo - 1) & (SMP_MAX_MAPS - 1)];
		if (look >= m->end)
			m = 0;
	}
	int rc;
	w->rfs = 0;
	if (!m || m->obj == SMP_OBJ_ANON) {
		/* anonymous code, or a pc in no mapping the tables know yet
		 * (a code area the JIT mapped since they were read): the
		 * region decides. A live function of the process's own region
		 * covering pc is its JIT code whatever the tables say. */
		rc = region_row(p->region_base, p->region_size, look);
		if (!m && rc) {
			w->stop = SMP_STOP_NO_MAPPING;
			return 1;
		}
		/* only a verified answer names the frame: a first try
		 * that matched and was then discarded (the seq changed,
		 * later tries busy) leaves fs set */
		fr->fn_start = rc ? 0 : w->rfs;
	} else if (m->obj == SMP_OBJ_NONE) {
		rc = SMP_STOP_NO_ROWS;
	} else {
		rc = elf_row(m->obj, look - m->bias);
	}
	if (rc) {
		w->stop = rc;
		return 1;
	}
	struct xrow x = w->rx;
	if (x.outermost) {
		w->stop = SMP_STOP_OUTERMOST;
		return 1;
	}
	__u64 cfa;
	if (x.rule == SMP_RULE_FP)
		cfa = w->bp + x.cfa_off;
	else if (x.rule == SMP_RULE_PLT)
		cfa = w->sp + x.cfa_off + ((pc & 15) >= x.plt_k ? 8 : 0);
	else
		cfa = w->sp + x.cfa_off;
	__u64 ra, bp = w->bp;
	if (bpf_probe_read_user(&ra, 8, (void *)(cfa + x.ra_off))) {
		w->stop = SMP_STOP_READ;
		return 1;
	}
	if (x.fp_saved &&
	    bpf_probe_read_user(&bp, 8, (void *)(cfa + x.fp_off))) {
		w->stop = SMP_STOP_READ;
		return 1;
	}
	if (!ra) {
		w->stop = SMP_STOP_OUTERMOST;
		return 1;
	}
	if (cfa <= w->sp) {
		w->stop = SMP_STOP_LOOP;
		return 1;
	}
	w->pc = ra;
	w->sp = cfa;
	w->bp = bp;
	return 0;
}

/* ---- Lua frames (docs/ABI.md 1.6): one per step, innermost first */
#define GCVMASK ((1ull << 47) - 1)

/* What prototype pt is at the sample (smp_lframe.name ..): its chunk
 * name's GCstr, first line, sizebc, the name's hash and length and its
 * first and last 8 bytes; name 0 when any of it cannot be read (user
 * space then does not name the frame). */
static __always_inline void lframe_ident(struct smp_lframe *o,
					 const struct smp_luavm *v, __u64 pt,
					 __u32 sizebc)
{
	__u64 cn = 0;
	__u32 len;
	o->sizebc = sizebc;
	o->firstline = o->namehash = o->namelen = 0;
	__builtin_memset(o->head, 0, 8);
	__builtin_memset(o->tail, 0, 8);
	if (bpf_probe_read_user(&cn, 8, (void *)(pt + v->pt_chunkname)) ||
	    bpf_probe_read_user(&o->firstline, 4,
				(void *)(pt + v->pt_firstline)))
		goto none;
	cn &= GCVMASK;
	if (!cn || v->str_len < 4 ||
	    bpf_probe_read_user(&o->namehash, 8, (void *)(cn + v->str_len - 4)))
		goto none;
	len = o->namelen;
	if (bpf_probe_read_user(o->head, len < 8 ? (len & 7) : 8,
				(void *)(cn + v->str_data)))
		goto none;
	if (len > 8 && bpf_probe_read_user(
			   o->tail, 8, (void *)(cn + v->str_data + len - 8)))
		goto none;
	o->name = cn;
	return;
none:
	o->name = 0;
}
struct lctx {
	struct walk *w;
	struct smp_luavm *v;
};

/* The C frame (L->cframe's chain) whose VM entry the frames walked next
 * run in: lj_frame.h's cframe_raw of cf, and the stack top it was made at
 * when it is a C frame without a Lua frame (vm_cpcall's negative nres:
 * -savestack(L, L->top); err_unwind's "frame reached" test is frame < that
 * top). 0 when the layout gives no C frame offsets. */
static __always_inline void lcf_set(struct lwalk *lw, struct smp_luavm *v,
				    __u64 cf)
{
	__s32 nres = 0;
	cf &= ~3ull;
	lw->lcf = v->cf_prev ? cf : 0;
	lw->ltop = 0;
	lw->ci = lw->nch;
	lw->ch[lw->nch & (LCH_N - 1)] = lw->lcf;
	if (lw->nch < LCH_N - 1)
		lw->nch++;
	if (lw->lcf &&
	    !bpf_probe_read_user(&nres, 4, (void *)(cf + v->cf_nres)) &&
	    nres < 0)
		lw->ltop = lw->stack + (__u64)(-(__s64)nres);
}
/* past the C frame's VM entry: its previous one */
static __always_inline void lcf_pop(struct lwalk *lw, struct smp_luavm *v)
{
	__u64 prev = 0;
	if (lw->lcf &&
	    bpf_probe_read_user(&prev, 8, (void *)(lw->lcf + v->cf_prev)))
		prev = 0;
	lcf_set(lw, v, prev);
}

/* At a thread's first frame, every C frame of its chain should have been
 * passed at a link (a C or CP frame, an FFI callback's continuation) or as
 * a frameless one (ltop). One left over (lcf != 0) is a VM entry whose
 * frames are not built yet or already gone: an FFI callback's C frame
 * that lj_ccallback_enter set before callback_conv_args built its
 * continuation frame, or that lj_ccallback_leave pops after the callback
 * returned; a lua_pcall/lua_call entry between its C frame and its first
 * frame. Its frames were then paired with the C frame one newer than
 * their own, each of them: counted from the bottom instead (the thread's
 * first VM entry is its outermost C frame), a frame at chain index ci
 * runs in the C frame k further on, k the C frames left (appended to the
 * chain here). */
static __always_inline void lch_left(struct lwalk *lw, struct smp_luavm *v)
{
	__u64 c = lw->lcf;
	__u32 k = 0;
	for (int i = 0; i < 4 && c; i++) {
		__u64 prev = 0;
		k++;
		if (bpf_probe_read_user(&prev, 8, (void *)(c + v->cf_prev)))
			prev = 0;
		prev &= ~3ull;
		if (prev) {
			lw->ch[lw->nch & (LCH_N - 1)] = prev;
			if (lw->nch < LCH_N - 1)
				lw->nch++;
		}
		c = prev;
	}
	if (c)
		k = 0xff; /* a longer chain: no C frame is sure */
	lw->thsh[lw->th & (LTH_N - 1)] = (__u8)k;
}

/* At a thread's first frame: one step along its chain of C frames
 * (lj_frame.h, x86-64 SysV: the previous one at CFRAME_OFS_PREV, 32). The
 * last is the thread's first VM entry; one marked CFRAME_RESUME (bit 0) is
 * a coroutine's, made by vm_resume, which the resumer's interpreter called
 * from its own C frame: that frame is just above it (CFRAME_SIZE, 80 or
 * 96 with LJ_NO_UNWIND, the return address included), its lua_State at
 * CFRAME_OFS_L (the saved PC's offset less one pointer), and that thread
 * is the resumer only if its own L->cframe is that frame. Then the walk
 * goes on in the resumer from its L->base (coroutine.resume's or the wrap
 * function's frame), in the VM entry below (the coroutine's first frame's
 * CP link already counted it). */
static __always_inline long cfstep(struct lwalk *lw, struct smp_luavm *v)
{
	__u64 cf = lw->cf, c = cf & ~3ull, prev = 0;
	lw->cf = 0;
	if (!c || bpf_probe_read_user(&prev, 8, (void *)(c + 32)))
		return 1;
	if (!(cf & 1)) {
		if (!prev)
			return 1; /* the thread's first VM entry: the bottom */
		lw->cf = prev;
		return 0;
	}
	__u32 gc64 = v->flags & 2;
	__u32 lofs = gc64 ? v->cf_pc - 8 : v->cf_pc - 4;
	for (__u32 k = 0; k < 2; k++) {
		__u64 rf = c + (k ? 96 : 80), rl = 0, rcf = 0, st[2] = {};
		if (bpf_probe_read_user(&rl, gc64 ? 8 : 4, (void *)(rf + lofs)))
			continue;
		if (!rl ||
		    bpf_probe_read_user(&rcf, 8, (void *)(rl + v->L_cframe)))
			continue;
		if ((rcf & ~3ull) != rf)
			continue;
		if (bpf_probe_read_user(&st[0], 8, (void *)(rl + v->L_base)) ||
		    bpf_probe_read_user(&st[1], 8, (void *)(rl + v->L_stack)) ||
		    !st[0])
			return 1;
		lw->L = rl;
		lw->f = st[0] - 8;
		lw->stack = st[1];
		if (lw->th < LTH_N - 1)
			lw->th++;
		lcf_set(lw, v, rf);
		lw->pc = 0; /* (the first frame's CP link counted the entry) */
		lw->skip = 0;
		lw->inner = 0;
		lw->flags = 0;
		lw->stop = SMP_LSTOP_DEPTH;
		return 0;
	}
	return 1;
}
static long lstep(__u32 i, void *vctx)
{
	struct lctx *lc = vctx;
	struct walk *w = lc->w;
	struct smp_luavm *v = lc->v;
	if (!w || !v)
		return 1;
	struct lwalk *lw = &w->lw;
	__u32 n = w->lua.nlframes;
	__u64 f = lw->f;
	if (lw->cf)
		return cfstep(lw, v);
	if (lw->ltop && f < lw->ltop) {
		/* a VM entry without a Lua frame between this frame and the
		 * last (lj_vm_cpcall(L, NULL, ...): the FFI's type parser, the
		 * JIT compiler, lua_load): its native interpreter frame gets
		 * a segment of its own, empty */
		lw->seg++;
		lcf_pop(lw, v);
		return 0;
	}
	if (f <= lw->stack + 8) {
		/* the thread's first frame: a coroutine's resumer next */
		__u64 cf = 0;
		lw->stop = SMP_LSTOP_BOTTOM;
		lch_left(lw, v);
		if (!lw->L ||
		    bpf_probe_read_user(&cf, 8, (void *)(lw->L + v->L_cframe)))
			return 1;
		if (!cf)
			return 1;
		lw->cf = cf;
		return 0;
	}
	if (n >= SMP_MAX_LFRAMES) {
		lw->stop = SMP_LSTOP_DEPTH;
		return 1;
	}
	__u64 fr[2];
	if (bpf_probe_read_user(fr, 16, (void *)(f - 8))) {
		lw->stop = SMP_LSTOP_READ;
		return 1;
	}
	__u64 tv = fr[0], link = fr[1];
	if ((__s64)tv >> 47 != -9) {
		/* BC_RET to a Lua caller copying the results down over the
		 * returning frame (its function slot the first): PC, the
		 * interpreter's register, is already that frame's link. The
		 * frame is gone, its function unknown: the walk goes on at
		 * the caller, the frame left out */
		if (!lw->inner || !lw->pc || lw->pc != link || (link & 3)) {
			lw->stop = SMP_LSTOP_BAD_FUNC;
			return 1;
		}
		lw->skip = 1;
	}
	__u64 fn = tv & GCVMASK;
	if (!lw->skip) {
		struct smp_lframe *o = &w->lua.lf[n & (SMP_MAX_LFRAMES - 1)];
		__u8 ffid;
		if (bpf_probe_read_user(&ffid, 1, (void *)(fn + v->fn_ffid))) {
			lw->stop = SMP_LSTOP_READ;
			return 1;
		}
		o->seg = lw->seg;
		o->flags = (__u8)lw->flags;
		w->lfci[n & (SMP_MAX_LFRAMES - 1)] = (__u8)lw->ci;
		w->lfth[n & (SMP_MAX_LFRAMES - 1)] = (__u8)lw->th;
		o->ffid = ffid;
		o->pad = 0;
		o->cf = 0;
		if (!ffid) {
			__u64 bc;
			__u32 sizebc;
			if (bpf_probe_read_user(&bc, 8,
						(void *)(fn + v->fn_pc))) {
				lw->stop = SMP_LSTOP_READ;
				return 1;
			}
			__u64 pt = bc - v->pt_size, pc = lw->pc;
			if (bpf_probe_read_user(&sizebc, 4,
						(void *)(pt + v->pt_sizebc))) {
				lw->stop = SMP_LSTOP_READ;
				return 1;
			}
			if (pc && (pc < bc + 4 || pc > bc + 4ull * sizebc ||
				   (pc & 3))) {
				if (!lw->inner) {
					lw->stop = SMP_LSTOP_BAD_LINK;
					return 1;
				}
				pc = 0; /* the interpreter between states */
			}
			o->pt = pt;
			o->pc = pc;
			lframe_ident(o, v, pt, sizebc);
		} else {
			o->pt = 0;
			o->pc = fn;
			o->name = 0;
		}
		w->lua.nlframes = n + 1;
	}
	lw->skip = 0;
	lw->inner = 0;
	lw->flags = 0;
	__u64 nf;
	if ((link & 3) == 0) { /* a Lua frame: the return pc in its caller */
		__u32 ins;
		if (bpf_probe_read_user(&ins, 4, (void *)(link - 4))) {
			lw->stop = SMP_LSTOP_BAD_LINK;
			return 1;
		}
		nf = f - 8 * (2 + ((ins >> 8) & 0xff));
		lw->pc = link;
	} else {
		nf = f - (link & ~7ull);
		lw->pc = 0;
		if ((link & 7) == 3)
			lw->skip = 1; /* vararg: the same call below */
		else if ((link & 3) == 1) {
			lw->seg++; /* C or CP: entered from C */
			lcf_pop(lw, v);
		} else if ((link & 7) == 2) {
			/* a continuation: LJ_CONT_FFI_CALLBACK (1) is an FFI
			 * callback, entered from C (lj_frame.h's frame_contv,
			 * FR2: 3 slots below the link) */
			__u64 cont = 0;
			if (!bpf_probe_read_user(&cont, 8, (void *)(f - 24)) &&
			    cont == 1) {
				lw->seg++;
				lcf_pop(lw, v);
			}
		}
	}
	if (nf >= f) {
		lw->stop = SMP_LSTOP_BAD_LINK;
		return 1;
	}
	lw->f = nf;
	return 0;
}

/* The C frame a walked Lua frame runs in (0: not known). */
static __always_inline __u64 lframe_cf(struct walk *w, __u32 j)
{
	struct lwalk *lw = &w->lw;
	__u32 sh = lw->thsh[w->lfth[j & (SMP_MAX_LFRAMES - 1)] & (LTH_N - 1)];
	__u32 ci = w->lfci[j & (SMP_MAX_LFRAMES - 1)] + sh;
	if (sh == 0xff || ci >= lw->nch)
		return 0;
	return lw->ch[ci & (LCH_N - 1)];
}
#define LSEG_NONE 0xffff /* no native frame known (smp_lframe.seg) */
/* The Lua frames onto the native frames their VM entries run in, by
 * address: a VM entry's native frame — the interpreter's (or a frame in
 * it, as vm_cpcall's), or the trace's it runs — holds the entry's C frame
 * in its stack: at or above its sp (the interpreter runs with rsp the C
 * frame; a trace below it by its spill area, 32 bytes here), below the
 * next frame's sp. smp_lframe.seg becomes the index of that native frame
 * among the VM entries of the native walk (the frames sampler.c's
 * smp_lua_frames counts: trace code, or a pc in the VM's code); a frame
 * whose C frame is not known, or no walked native frame's (the walk
 * ended before it, or the VM entry has no frame of its own yet: an FFI
 * callback before lj_ccallback_enter set its C frame, whose native frame
 * holds no Lua frame then) gets LSEG_NONE. One step: one native frame
 * looked at or one Lua frame placed. */
static long lplace(__u32 i, void *vctx)
{
	struct lctx *lc = vctx;
	struct walk *w = lc->w;
	struct smp_luavm *v = lc->v;
	if (!w || !v)
		return 1;
	__u32 nf = w->s.nframes, nl = w->lua.nlframes, j = w->mj;
	if (j >= nl)
		return 1;
	j &= SMP_MAX_LFRAMES - 1;
	if (!w->mhave) { /* the next VM entry's native frame */
		__u32 k = w->mi;
		if (k >= nf) { /* beyond the walk */
			w->lua.lf[j].seg = LSEG_NONE;
			w->lua.lf[j].cf = lframe_cf(w, j);
			w->mj = j + 1;
			return 0;
		}
		w->mi = k + 1;
		k &= SMP_MAX_FRAMES - 1;
		struct smp_frame *fr = &w->s.frames[k];
		__u64 look = k ? fr->pc - 1 : fr->pc;
		if (!fr->fn_start && (look < v->vm_start || look >= v->vm_end))
			return 0;
		w->msp = w->fsp[k];
		w->mup = w->msp + 256;
		if (k + 1 < nf)
			w->mup = w->fsp[(k + 1) & (SMP_MAX_FRAMES - 1)];
		w->mcur = w->me++;
		w->mhave = 1;
		return 0;
	}
	__u64 c = lframe_cf(w, j);
	if (c >= w->mup) { /* an outer entry's */
		w->mhave = 0;
		return 0;
	}
	w->lua.lf[j].seg = c && c >= w->msp ? w->mcur : LSEG_NONE;
	w->lua.lf[j].cf = c;
	w->mj = j + 1;
	return 0;
}

static __always_inline void vm_count(struct walk *w, __u32 tgid, __s32 vms)
{
	__u32 tr, slot, tid = w->s.tid, in_trace = 0, any_trace = 0;
	w->lua.vmtrace = 0;
	w->lua.vmslot = SMP_VM__N;
	if (w->s.nframes)
		in_trace = w->s.frames[0].fn_start != 0;
	if (w->s.nframes == 1 &&
	    (w->stop == SMP_STOP_BUSY || w->stop == SMP_STOP_NOT_RESIDENT ||
	     w->stop == SMP_STOP_CORRUPT))
		in_trace = 1; /* the leaf's region lookup failed: JIT code */
	if (vms == -3) /* GC: from trace code when a trace frame calls it */
		for (int k = 1; k < 16; k++)
			if (k < w->s.nframes &&
			    w->s.frames[k & (SMP_MAX_FRAMES - 1)].fn_start)
				any_trace = 1;
	if (vms > 0) {
		tr = (__u32)vms;
		slot = in_trace ? SMP_VM_TRACE : SMP_VM_FFI;
		bpf_map_update_elem(&lasttr, &tid, &tr, BPF_ANY);
	} else {
		__u32 *lt = bpf_map_lookup_elem(&lasttr, &tid);
		if (!lt)
			return;
		tr = *lt;
		slot = vms == -1   ? SMP_VM_INTERP
		       : vms == -2 ? SMP_VM_C
		       : vms == -3 ? (any_trace ? SMP_VM_JGC : SMP_VM_GC)
		       : vms == -4 ? SMP_VM_EXIT
				   : SMP_VM_JIT;
	}
	struct smp_vmkey k = {.pid = tgid, .trace = tr};
	struct smp_vmval *val = bpf_map_lookup_elem(&vmprof, &k);
	if (!val) {
		struct smp_vmval z = {};
		bpf_map_update_elem(&vmprof, &k, &z, BPF_NOEXIST);
		val = bpf_map_lookup_elem(&vmprof, &k);
		if (!val)
			return;
	}
	if (slot < SMP_VM__N) {
		__sync_fetch_and_add(&val->n[slot], 1);
		w->lua.vmtrace = tr;
		w->lua.vmslot = slot;
	}
}

/* The VM state and the Lua frames of a process whose region published
 * its VM's layout: 1 when a record was made. */
static __always_inline int lua_walk(struct walk *w, struct pt_regs *regs,
				    __u32 tgid)
{
	struct smp_luavm *v = bpf_map_lookup_elem(&luavms, &tgid);
	if (!v)
		return 0;
	struct smp_lua *o = &w->lua;
	o->kind = SMP_REC_LUA;
	o->cpu = w->s.cpu;
	o->id = w->s.id;
	o->nlframes = 0;
	o->lstop = SMP_LSTOP_NO_STATE;
	o->L = 0;
	o->vmtrace = 0;
	o->vmslot = SMP_VM__N;
	__s32 vms = 0;
	__u64 L = 0, g = v->g;
	if (bpf_probe_read_user(&vms, 4, (void *)(g + v->g_vmstate)) ||
	    bpf_probe_read_user(&L, 8, (void *)(g + v->g_cur_L))) {
		o->lstop = SMP_LSTOP_READ;
		return 1;
	}
	o->vmstate = vms;
	o->L = L;
	vm_count(w, tgid, vms);
	if (!L)
		return 1;
	struct lwalk *lw = &w->lw;
	__u64 st[2] = {}; /* base .. (L_base), stack (L_stack) */
	__u64 base = 0, pc = 0, ip = regs->ip;
	if (bpf_probe_read_user(&st[0], 8, (void *)(L + v->L_base)) ||
	    bpf_probe_read_user(&st[1], 8, (void *)(L + v->L_stack))) {
		o->lstop = SMP_LSTOP_READ;
		return 1;
	}
	lw->flags = 0;
	/* in a trace: its frame's base. Also with the pc in trace code
	 * and vmstate still the interpreter's: a trace just entered
	 * (BC_JLOOP set jit_base and jumped; the trace sets vmstate), whose
	 * L->base frame is the trace's own function (its map gives it) */
	if (vms > 0 || (vms == -1 && w->s.nframes && w->s.frames[0].fn_start)) {
		if (bpf_probe_read_user(&base, 8, (void *)(g + v->g_jit_base)))
			base = 0;
		if (!base)
			base = st[0];
		lw->flags = SMP_LF_TRACE;
	} else if (vms == -1 && ip >= v->vm_start && ip < v->vm_end) {
		/* BASE and PC: the interpreter's registers, where it runs on
		 * L->cframe (rsp is the C frame; 8 below in the subroutines
		 * it calls, vm_mod...). Elsewhere in the VM's code they are
		 * not set yet or no longer: an FFI callback's entry before
		 * lj_ccallback_enter, its exit after lj_ccallback_leave
		 * (vmstate still the interpreter's, left from the callback
		 * before), a VM entry's prologue. There the frames are those
		 * of L->base, which the VM stored before it called the C
		 * code that entered it; lplace puts them on the native frame
		 * whose C frame they run in, none on the entry being made */
		__u64 cf = 0;
		bpf_probe_read_user(&cf, 8, (void *)(L + v->L_cframe));
		cf &= ~3ull;
		if (v->cf_prev && (cf < regs->sp || cf - regs->sp > 8)) {
			base = st[0];
		} else {
			base = regs->dx;
			pc = regs->bx;
		}
	} else {
		base = st[0];
		if (vms != -2) { /* a helper, GC, the compiler: SAVE_PC */
			__u64 cf = 0;
			bpf_probe_read_user(&cf, 8, (void *)(L + v->L_cframe));
			cf &= ~3ull;
			if (!cf || bpf_probe_read_user(&pc, 8,
						       (void *)(cf + v->cf_pc)))
				pc = 0;
		}
	}
	if (!base) {
		o->lstop = SMP_LSTOP_NO_STATE;
		return 1;
	}
	lw->f = base - 8;
	lw->L = L;
	lw->cf = 0;
	lw->stack = st[1];
	lw->nch = 0;
	lw->th = 0;
	for (int k = 0; k < LTH_N; k++)
		lw->thsh[k] = 0;
	__u64 lcf = 0;
	if (bpf_probe_read_user(&lcf, 8, (void *)(L + v->L_cframe)))
		lcf = 0;
	lcf_set(lw, v, lcf);
	lw->pc = pc;
	lw->seg = 0;
	lw->skip = 0;
	lw->inner = 1;
	lw->stop = SMP_LSTOP_DEPTH;
	struct lctx lc = {.w = w, .v = v};
	bpf_loop(SMP_MAX_LFRAMES + 32, lstep, &lc, 0);
	o->lstop = (__u16)lw->stop;
	if (v->cf_prev) {
		w->mj = w->mi = w->me = w->mhave = 0;
		bpf_loop(2 * SMP_MAX_FRAMES + SMP_MAX_LFRAMES, lplace, &lc, 0);
	}
	return 1;
}

static __always_inline void raw_copy(struct walk *w, struct pt_regs *regs,
				     struct smp_counters *c)
{
	struct smp_raw *r = bpf_ringbuf_reserve(&rb, sizeof(*r), 0);
	if (!r) {
		c->raw_lost++;
		return;
	}
	r->kind = SMP_REC_RAW;
	r->cpu = w->s.cpu;
	r->id = w->s.id;
	r->pid = w->s.pid;
	r->tid = w->s.tid;
	r->ip = regs->ip;
	r->sp = regs->sp;
	r->bp = regs->bp;
	r->bx = regs->bx;
	r->r12 = regs->r12;
	r->r13 = regs->r13;
	r->r14 = regs->r14;
	r->r15 = regs->r15;
	r->pad = 0;
	/* the whole copy, else up to the end of the page of sp plus fewer
	 * whole pages (the stack's top is a page boundary) */
	__u64 sp = regs->sp;
	__u32 len = 0;
	if (!bpf_probe_read_user(r->stack, SMP_RAW_STACK, (void *)sp)) {
		len = SMP_RAW_STACK;
	} else {
		__u32 head = 4096 - (sp & 4095);
		for (int k = 3; k >= 0; k--) {
			__u32 sz = head + (__u32)k * 4096;
			if (sz > SMP_RAW_STACK)
				continue;
			if (!bpf_probe_read_user(r->stack, sz, (void *)sp)) {
				len = sz;
				break;
			}
		}
	}
	r->len = len;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
	c->raw++;
	w->s.flags |= SMP_F_RAW;
}

/* /proc/PID/stat's start time (field 22): the group leader's boot-time
 * start in USER_HZ ticks */
static __always_inline __u64 start_ticks(struct task_struct *t)
{
	return t->group_leader->start_boottime / (1000000000ull / SMP_USER_HZ);
}

SEC("perf_event")
int smp_on_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pt = bpf_get_current_pid_tgid();
	__u32 tgid = pt >> 32, zero = 0;
	if (!tgid)
		return 0; /* idle */
	struct smp_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p && !cfg_all)
		return 0;
	struct walk *w = bpf_map_lookup_elem(&scratch, &zero);
	struct smp_counters *c = bpf_map_lookup_elem(&counters, &zero);
	if (!w || !c)
		return 0;
	c->samples++;
	w->s.kind = SMP_REC_SAMPLE;
	w->s.cpu = bpf_get_smp_processor_id();
	w->s.id = (c->seq++ << 8) | (w->s.cpu & 0xff);
	w->s.time_ns = bpf_ktime_get_ns();
	w->s.pid = tgid;
	w->s.tid = (__u32)pt;
	w->s.nframes = 0;
	w->s.flags = 0;
	w->s.retries = 0;
	w->s.kstack = -1;
	if ((ctx->regs.csx & 3) == 0) {
		w->s.flags |= SMP_F_IN_KERNEL;
		w->s.kstack = bpf_get_stackid(ctx, &kstacks, 0);
		if (w->s.kstack < 0) {
			c->kstack_err++;
			if (w->s.kstack == -EEXIST_)
				c->kstack_collide++;
		}
	}
	struct task_struct *task = bpf_get_current_task_btf();
	if (p && p->start_ticks && start_ticks(task) != p->start_ticks) {
		/* another process with the pid of one that was watched (its
		 * exit missed): never walked through the old one's tables */
		bpf_map_delete_elem(&procs, &tgid);
		c->reused++;
		p = 0;
		if (!cfg_all) {
			c->samples--;
			return 0;
		}
	}
	struct pt_regs *regs = 0;
	if ((task->flags & PF_KTHREAD) || !task->mm) {
		w->stop = SMP_STOP_KERNEL_ONLY;
	} else {
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		w->pc = regs->ip;
		w->sp = regs->sp;
		w->bp = regs->bp;
		w->max = cfg_max_frames;
		if (!p) {
			/* not watched (cfg_all): the leaf alone */
			w->s.frames[0].pc = w->pc;
			w->s.frames[0].fn_start = 0;
			w->s.nframes = 1;
			w->s.flags |= SMP_F_UNWATCHED;
			w->stop = SMP_STOP_NO_MAPPING;
		} else {
			struct loopctx lc = {.w = w, .p = p, .c = c};
			w->stop = SMP_STOP_DEPTH;
			bpf_loop(SMP_MAX_FRAMES + 1, step, &lc, 0);
			if (w->stop == SMP_STOP_NO_MAPPING &&
			    (p->flags & SMP_PROC_MAPS_CHANGED))
				w->s.flags |= SMP_F_MAPS_CHANGED;
		}
	}
	__u32 stop = w->stop;
	w->s.stop = stop;
	if (stop < SMP_STOP__N)
		c->stop[stop]++;
	c->retries += w->s.retries;
	if (regs) {
		int want = 0;
		if (cfg_raw_every && (c->seq - 1) % cfg_raw_every == 0)
			want = 1;
		else if ((stop == SMP_STOP_NO_MAPPING ||
			  stop == SMP_STOP_NO_ROWS ||
			  stop == SMP_STOP_NO_REGION) &&
			 w->s.time_ns >= RAW_GAP_NS) {
			/* last_raw_ns: when the bucket would be full */
			__u64 now = w->s.time_ns;
			__u64 floor = now - RAW_BURST * RAW_GAP_NS;
			if (now < RAW_BURST * RAW_GAP_NS)
				floor = 0;
			if (c->last_raw_ns < floor)
				c->last_raw_ns = floor;
			if (c->last_raw_ns + RAW_GAP_NS <= now) {
				want = 1;
				c->last_raw_ns += RAW_GAP_NS;
			}
		}
		if (want)
			raw_copy(w, regs, c);
	}
	if (regs && p && lua_walk(w, regs, tgid)) {
		__u32 nl = w->lua.nlframes;
		if (nl > SMP_MAX_LFRAMES)
			nl = SMP_MAX_LFRAMES;
		__u64 ll = sizeof(w->lua) - sizeof(w->lua.lf) +
			   (__u64)nl * sizeof(struct smp_lframe);
		if (!bpf_ringbuf_output(&rb, &w->lua, ll, BPF_RB_NO_WAKEUP))
			w->s.flags |= SMP_F_LUA;
		else
			c->lost++;
	}
	__u32 nf = w->s.nframes;
	if (nf > SMP_MAX_FRAMES)
		nf = SMP_MAX_FRAMES;
	__u64 len = sizeof(w->s) - sizeof(w->s.frames) +
		    (__u64)nf * sizeof(struct smp_frame);
	/* no wakeup per record: a wakeup is an irq_work, a self-IPI (a VM
	 * exit under virtualization, microseconds); the reader is woken once
	 * WAKE_BYTES wait, and otherwise drains at its poll timeout */
	__u64 fl = bpf_ringbuf_query(&rb, BPF_RB_AVAIL_DATA) >= WAKE_BYTES
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&rb, &w->s, len, fl))
		c->lost++;
	return 0;
}

/* ---- process lifecycle: the tables follow exec, exit and fork by
 * themselves; a small record tells the user side */
static __always_inline void emit_ev(__u32 ev, __u32 pid, __u32 ppid,
				    struct task_struct *t,
				    struct smp_counters *c)
{
	struct smp_proc_ev *e = bpf_ringbuf_reserve(&rb, sizeof(*e), 0);
	if (!e) {
		if (c)
			c->ev_lost++;
		return;
	}
	e->kind = SMP_REC_PROC;
	e->ev = ev;
	e->pid = pid;
	e->ppid = ppid;
	e->time_ns = bpf_ktime_get_ns();
	e->start_ticks = start_ticks(t);
	bpf_probe_read_kernel(e->comm, sizeof(e->comm), &t->comm);
	/* an exec cleared the process's tables: until the reader reads the
	 * new image's mappings every sample of it stops "no mapping", so it
	 * is woken now (one irq_work per exec), not at its poll's timeout */
	bpf_ringbuf_submit(e, ev == SMP_EV_EXEC ? BPF_RB_FORCE_WAKEUP
						: BPF_RB_NO_WAKEUP);
}

static __always_inline struct smp_counters *counters_of(void)
{
	__u32 zero = 0;
	return bpf_map_lookup_elem(&counters, &zero);
}

/* a new image: the old one's mappings and region are no longer its own */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(smp_on_exec, struct task_struct *t, pid_t old_pid,
	     struct linux_binprm *bprm)
{
	__u32 tgid = t->tgid;
	struct smp_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	if (!p)
		return 0;
	bpf_map_delete_elem(&luavms, &tgid); /* the old image's VM */
	p->nmaps = 0;
	p->region_base = 0;
	p->region_size = 0;
	p->flags = 0;
	struct smp_counters *c = counters_of();
	if (c)
		c->execs++;
	emit_ev(SMP_EV_EXEC, tgid, (__u32)old_pid, t, c);
	return 0;
}

/* the last thread gone: the entry freed */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(smp_on_exit, struct task_struct *t, bool group_dead)
{
	if (!group_dead)
		return 0;
	__u32 tgid = t->tgid;
	bpf_map_delete_elem(&luavms, &tgid);
	if (bpf_map_delete_elem(&procs, &tgid))
		return 0; /* not watched */
	struct smp_counters *c = counters_of();
	if (c)
		c->exits++;
	emit_ev(SMP_EV_EXIT, tgid, 0, t, c);
	return 0;
}

/* a child of a watched process (cfg_follow, cfg_all): the parent's
 * mappings (fork copies them), no region (the parent's serves the parent
 * only); the child does not run before this returns */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(smp_on_fork, struct task_struct *parent, struct task_struct *child)
{
	if (!cfg_follow && !cfg_all)
		return 0;
	__u32 ptgid = parent->tgid, ctgid = child->tgid;
	if (ctgid == ptgid)
		return 0; /* a thread */
	struct smp_proc *p = bpf_map_lookup_elem(&procs, &ptgid);
	if (!p)
		return 0;
	struct smp_counters *c = counters_of();
	if (bpf_map_update_elem(&procs, &ctgid, p, BPF_ANY)) {
		if (c)
			c->fork_full++;
	} else {
		struct smp_proc *q = bpf_map_lookup_elem(&procs, &ctgid);
		if (q) {
			q->region_base = 0;
			q->region_size = 0;
			q->flags = 0;
			q->start_ticks = start_ticks(child);
		}
	}
	if (c)
		c->forks++;
	emit_ev(SMP_EV_FORK, ctgid, ptgid, child, c);
	return 0;
}

/* executable code mapped or made executable: the process's table may
 * lack it; its next unknown pc says so (SMP_F_MAPS_CHANGED) */
static __always_inline void maps_changed(void)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct smp_proc *p = bpf_map_lookup_elem(&procs, &tgid);
	if (p)
		p->flags |= SMP_PROC_MAPS_CHANGED;
}

SEC("fentry/do_mmap")
int BPF_PROG(smp_on_mmap, struct file *file, unsigned long addr,
	     unsigned long len, unsigned long prot)
{
	if (prot & PROT_EXEC_)
		maps_changed();
	return 0;
}

SEC("fentry/do_mprotect_pkey")
int BPF_PROG(smp_on_mprotect, unsigned long start, size_t len,
	     unsigned long prot)
{
	if (prot & PROT_EXEC_)
		maps_changed();
	return 0;
}
