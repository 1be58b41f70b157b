/* SPDX-License-Identifier: MIT */
/*
 * The unwinder as a library (unwind/): synthetic samples built in memory
 * (struct pd_event with registers and a fabricated stack copy; mappings by
 * PD_MMAP events) walked by uw_event, for every row kind and every stop
 * reason.
 *
 * Ground truth is how this test built each stack, not the unwinder: the
 * ELF objects are assembled here at test time (cc) from a source whose
 * every stack adjustment and CFI directive this file states, in three
 * forms (.eh_frame; .cfi_sections .debug_frame; -Wa,--gsframe for
 * .sframe), linked as a shared object calling an undefined function
 * (hence a PLT, whose CFA the linker describes by a DWARF expression and,
 * with --gsframe, by a pc-masked SFrame FDE). Trace code comes from a
 * region made with jsf_region_create. For each row kind the stack is laid
 * out by hand from the frame sizes of the source; and each row kind is
 * also walked over the same stack with the return address moved by 8,
 * which must give other frames.
 *
 * And a real program whose one assembly function has its CFI in
 * .debug_frame only, the rest in .eh_frame (RaptorJIT's layout): its
 * captured stack unwinds through it to main (issue 14, item 3).
 *
 * Also: every stop reason has a distinct name; two contexts in one
 * process share nothing (their options, statistics and kernel symbols
 * differ; freed in either order, under ASan no leak).
 */
#include "harness.h"
#include "jitsframe.h"
#include "unwind.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[] = "/tmp/t_unwind-XXXXXX";
static char path_eh[256], path_df[256], path_sf[256], path_reg[256];
static char path_ks1[256], path_ks2[256];

/*
 * The program. Frame sizes (what the hand-made stacks follow):
 *  outer: RA undefined (the outermost frame); calls mid, then caller.
 *  mid:   push rbp; mov rsp,rbp; sub 48: CFA = rbp+16, rbp saved at
 *         CFA-16, so rbp = CFA-16 and, at the call, rsp = rbp-48.
 *  leaf:  push rbp; sub 32: at leaf_body CFA = rsp+48, RA at CFA-8, rbp
 *         saved at CFA-16 (mid's rbp comes from there, not the sample).
 *  caller: sub 24: CFA = rsp+32 at the call of ext_fn (through the PLT).
 *  nocfi: no CFI at all.  badcfa: CFA from rbx (outside the row form).
 *  ra16:  CFA = rsp+24 with the RA at CFA-16 (not the usual CFA-8).
 */
static const char prog[] = "	.text\n"
			   "	.globl outer\n"
			   "	.type outer,@function\n"
			   "outer:\n"
			   "	.cfi_startproc\n"
			   "	.cfi_undefined rip\n"
			   "	xor %ebp, %ebp\n"
			   "	call mid\n"
			   "outer_ret:\n"
			   "	nop\n"
			   "	call caller\n"
			   "caller_ret_o:\n"
			   "	hlt\n"
			   "	.cfi_endproc\n"
			   "	.size outer, .-outer\n"
			   "	.type mid,@function\n"
			   "mid:\n"
			   "	.cfi_startproc\n"
			   "	push %rbp\n"
			   "	.cfi_def_cfa_offset 16\n"
			   "	.cfi_offset %rbp, -16\n"
			   "	mov %rsp, %rbp\n"
			   "	.cfi_def_cfa_register %rbp\n"
			   "	sub $48, %rsp\n"
			   "	call leaf\n"
			   "mid_ret:\n"
			   "	leave\n"
			   "	.cfi_def_cfa %rsp, 8\n"
			   "	ret\n"
			   "	.cfi_endproc\n"
			   "	.size mid, .-mid\n"
			   "	.type leaf,@function\n"
			   "leaf:\n"
			   "	.cfi_startproc\n"
			   "	push %rbp\n"
			   "	.cfi_def_cfa_offset 16\n"
			   "	.cfi_offset %rbp, -16\n"
			   "	sub $32, %rsp\n"
			   "	.cfi_def_cfa_offset 48\n"
			   "leaf_body:\n"
			   "	nop\n"
			   "	add $32, %rsp\n"
			   "	.cfi_def_cfa_offset 16\n"
			   "	pop %rbp\n"
			   "	.cfi_def_cfa_offset 8\n"
			   "	ret\n"
			   "	.cfi_endproc\n"
			   "	.size leaf, .-leaf\n"
			   "	.type caller,@function\n"
			   "caller:\n"
			   "	.cfi_startproc\n"
			   "	sub $24, %rsp\n"
			   "	.cfi_def_cfa_offset 32\n"
			   "	call ext_fn@PLT\n"
			   "caller_ret:\n"
			   "	add $24, %rsp\n"
			   "	.cfi_def_cfa_offset 8\n"
			   "	ret\n"
			   "	.cfi_endproc\n"
			   "	.size caller, .-caller\n"
			   "	.type nocfi,@function\n"
			   "nocfi:\n"
			   "	nop\n"
			   "nocfi_body:\n"
			   "	ret\n"
			   "	.size nocfi, .-nocfi\n"
			   "	.type badcfa,@function\n"
			   "badcfa:\n"
			   "	.cfi_startproc\n"
			   "	mov %rsp, %rbx\n"
			   "	.cfi_def_cfa %rbx, 8\n"
			   "badcfa_body:\n"
			   "	ret\n"
			   "	.cfi_endproc\n"
			   "	.size badcfa, .-badcfa\n"
			   "	.type ra16,@function\n"
			   "ra16:\n"
			   "	.cfi_startproc\n"
			   "	.cfi_def_cfa %rsp, 24\n"
			   "	.cfi_offset %rip, -16\n"
			   "ra16_body:\n"
			   "	ret\n"
			   "	.cfi_endproc\n"
			   "	.size ra16, .-ra16\n";

/* ---------------------------------------------------------- the objects */

/* Addresses in one built object, read from its ELF headers (not through
 * the unwinder's reader). */
struct obj {
	uint64_t outer_ret, caller_ret_o, mid, mid_ret, leaf, leaf_body, caller,
	    caller_ret, nocfi_body, badcfa_body, ra16_body, plt;
	bool ok;
};
static struct obj o_eh, o_df, o_sf;

static void *slurp(const char *p, size_t *len)
{
	int fd = open(p, O_RDONLY);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb)) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	unsigned char *b = malloc((size_t)sb.st_size + 1);
	if (b && read(fd, b, (size_t)sb.st_size) != sb.st_size) {
		free(b);
		b = NULL;
	}
	close(fd);
	*len = (size_t)sb.st_size;
	return b;
}

static bool read_obj(const char *p, struct obj *o)
{
	size_t len;
	unsigned char *b = slurp(p, &len);
	memset(o, 0, sizeof(*o));
	if (!b || len < sizeof(Elf64_Ehdr))
		return free(b), false;
	Elf64_Ehdr eh;
	memcpy(&eh, b, sizeof(eh));
	if (eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) > len)
		return free(b), false;
	Elf64_Shdr *sh = (Elf64_Shdr *)(b + eh.e_shoff);
	const char *shstr = (const char *)b + sh[eh.e_shstrndx].sh_offset;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if (!strcmp(shstr + sh[i].sh_name, ".plt"))
			o->plt = sh[i].sh_addr;
		if (sh[i].sh_type != SHT_SYMTAB)
			continue;
		Elf64_Sym *sy = (Elf64_Sym *)(b + sh[i].sh_offset);
		const char *str = (const char *)b + sh[sh[i].sh_link].sh_offset;
		for (size_t k = 0; k < sh[i].sh_size / sizeof(*sy); k++) {
			const char *n = str + sy[k].st_name;
			uint64_t v = sy[k].st_value;
#define SYM(x)              \
	if (!strcmp(n, #x)) \
		o->x = v;
			SYM(outer_ret)
			SYM(caller_ret_o)
			SYM(mid)
			SYM(mid_ret)
			SYM(leaf)
			SYM(leaf_body)
			SYM(caller)
			SYM(caller_ret)
			SYM(nocfi_body)
			SYM(badcfa_body)
			SYM(ra16_body)
#undef SYM
		}
	}
	free(b);
	o->ok = o->outer_ret && o->mid_ret && o->leaf_body && o->caller_ret &&
		o->nocfi_body && o->badcfa_body && o->ra16_body && o->plt;
	return o->ok;
}

static bool build(const char *src_prefix, const char *flags, const char *out,
		  struct obj *o)
{
	char s[300], cmd[1200];
	snprintf(s, sizeof(s), "%s/%s.s", dir, src_prefix);
	FILE *f = fopen(s, "w");
	if (!f)
		return false;
	if (!strcmp(src_prefix, "df"))
		fputs("	.cfi_sections .debug_frame\n", f);
	fputs(prog, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "cc -shared -nostdlib %s -o %s %s 2>%s/%s.err", flags, out, s,
		 dir, src_prefix);
	if (system(cmd) != 0) {
		printf("# %s failed\n", cmd);
		return false;
	}
	if (!read_obj(out, o)) {
		printf("# %s: symbols or .plt missing\n", out);
		return false;
	}
	return true;
}

/* ------------------------------------------------------------ samples */

#define BASE 0x7f1200000000ull /* where every object is mapped */
#define S0 0x7ffd00001000ull   /* the sampled rsp: the stack copy's start */
/* the samples' process: this one, the producer of the test's region (a
 * region serves its own process's samples only) */
static uint32_t g_pid;
#define PID g_pid

static unsigned char stk[16 * (UW_MAX + 4)];
static void put(uint64_t addr, uint64_t v)
{
	memcpy(stk + (addr - S0), &v, 8);
}

struct smp {
	uint64_t ip, sp, bp;
	bool no_bp, no_sp;
	uint64_t regs_abi; /* 0: default 2 (64-bit) */
	bool no_regs;
	size_t stack_size;
	uint64_t time;
};

static struct uframe fr[UW_MAX];

static int walk(struct uwstate *u, const struct smp *m, enum stop_reason *why)
{
	uint64_t regs[3];
	uint64_t mask = 0;
	int k = 0;
	if (!m->no_bp)
		mask |= 1ull << PD_REG_BP, regs[k++] = m->bp;
	if (!m->no_sp)
		mask |= 1ull << PD_REG_SP, regs[k++] = m->sp;
	mask |= 1ull << PD_REG_IP, regs[k++] = m->ip;
	struct pd_event e = {.kind = PD_SAMPLE, .time = m->time};
	e.u.s = (struct pd_sample){
	    .pid = PID,
	    .tid = PID,
	    .time = m->time,
	    .ip = m->ip,
	    .regs_abi = m->no_regs ? 0 : 2,
	    .regs_mask = m->no_regs ? 0 : mask,
	    .regs = (const unsigned char *)regs,
	    .stack_size = m->stack_size,
	    .stack = stk,
	};
	const char *comm = NULL;
	*why = STOP__N;
	return uw_event(u, &e, fr, why, &comm);
}

static void mmap_ev(struct uwstate *u, uint64_t start, uint64_t len,
		    const char *name)
{
	struct pd_event e = {.kind = PD_MMAP};
	e.u.m = (struct pd_mmap){.pid = PID,
				 .tid = PID,
				 .start = start,
				 .len = len,
				 .pgoff = 0,
				 .prot = PROT_READ | PROT_EXEC,
				 .filename = name};
	enum stop_reason why;
	const char *comm;
	CHECK(uw_event(u, &e, fr, &why, &comm) == -1, "mmap is no sample");
}

/* The walk must give exactly the pcs exp[0..nexp) and stop for want. */
static void expect(struct uwstate *u, const struct smp *m, const uint64_t *exp,
		   int nexp, enum stop_reason want)
{
	enum stop_reason why;
	int n = walk(u, m, &why);
	CHECK(n == nexp && why == want,
	      "%d frames, stop %d (%s); want %d frames, stop %d (%s)", n,
	      (int)why, stop_name(why), nexp, (int)want, stop_name(want));
	for (int i = 0; i < n && i < nexp; i++)
		CHECK(fr[i].pc == exp[i], "frame %d: pc %#llx, want %#llx", i,
		      (unsigned long long)fr[i].pc, (unsigned long long)exp[i]);
}

/* The same walk must NOT give exp (the stack is wrong by construction). */
static void expect_not(struct uwstate *u, const struct smp *m,
		       const uint64_t *exp, int nexp)
{
	enum stop_reason why;
	int n = walk(u, m, &why);
	bool same = n == nexp;
	for (int i = 0; same && i < n; i++)
		same = fr[i].pc == exp[i];
	CHECK(!same, "a stack with its RA moved by 8 unwound the same");
}

static struct uwstate *ctx_for(const char *obj, bool no_sframe)
{
	struct uw_opts o = {.no_sframe = no_sframe};
	struct uwstate *u = uw_new(NULL, &o);
	if (u && obj)
		mmap_ev(u, BASE, 0x10000, obj);
	return u;
}

/*
 * leaf_body <- mid <- outer: rsp = S0 in leaf (CFA S0+48, RA at S0+40,
 * mid's rbp S0+96 saved at S0+32; the sampled rbp is junk); mid: CFA
 * S0+112, RA at S0+104, outer's rbp saved at S0+96; outer is the outermost
 * frame. The word above (S0+112) is 0: a walk that went
 * past outer would read a null return address there.
 */
static size_t chain_stack(const struct obj *o, struct smp *m, uint64_t *exp,
			  int ra_shift)
{
	memset(stk, 0, sizeof(stk));
	put(S0 + 32, S0 + 96); /* mid's rbp, saved by leaf */
	put(S0 + 40 + ra_shift, BASE + o->mid_ret);
	put(S0 + 96, 0); /* outer's rbp (xor %ebp, %ebp) */
	put(S0 + 104 + ra_shift, BASE + o->outer_ret);
	*m = (struct smp){.ip = BASE + o->leaf_body,
			  .sp = S0,
			  .bp = 0x5a5a5a5a,
			  .stack_size = 120};
	exp[0] = BASE + o->leaf_body;
	exp[1] = BASE + o->mid_ret;
	exp[2] = BASE + o->outer_ret;
	return 3;
}

/* The PLT entry of ext_fn (the .plt's second 16-byte slot) <- caller <-
 * outer. At slot+0 (jmp *GOT) CFA = rsp+8; at slot+11 (jmp PLT0, after
 * push $index) CFA = rsp+16. caller: CFA = rsp+32. */
static void plt_stack(const struct obj *o, int at, struct smp *m, uint64_t *exp,
		      int ra_shift)
{
	memset(stk, 0, sizeof(stk));
	uint64_t sp = S0, csp = at ? S0 + 16 : S0 + 8; /* caller's rsp */
	if (at)
		put(S0, 0); /* the pushed relocation index */
	put(csp - 8 + ra_shift, BASE + o->caller_ret);
	put(csp + 24 + ra_shift, BASE + o->caller_ret_o);
	*m = (struct smp){.ip = BASE + o->plt + 16 + (uint64_t)at,
			  .sp = sp,
			  .bp = 0,
			  .stack_size = (size_t)(csp + 32 - S0 + 8)};
	exp[0] = m->ip;
	exp[1] = BASE + o->caller_ret;
	exp[2] = BASE + o->caller_ret_o;
}

static void elf_kind(const char *what, const char *path, const struct obj *o,
		     bool sframe, bool plt)
{
	char name[160];
	struct smp m;
	uint64_t exp[3];
	snprintf(name, sizeof(name), "%s: exact frames leaf <- mid <- outer",
		 what);
	CASE(name)
	{
		struct uwstate *u = ctx_for(path, false);
		chain_stack(o, &m, exp, 0);
		/* gas 2.40 cannot say "RA undefined" in SFrame V1: outer's
		 * row there is CFA = rsp+8, so the walk reads on, to the 0 */
		expect(u, &m, exp, 3, sframe ? STOP_NULL_RA : STOP_OUTERMOST);
		CHECK(!strcmp(fr[0].name ? fr[0].name : "-", "leaf") &&
			  !strcmp(fr[1].name ? fr[1].name : "-", "mid") &&
			  !strcmp(fr[2].name ? fr[2].name : "-", "outer"),
		      "names %s %s %s", fr[0].name, fr[1].name, fr[2].name);
		CHECK(fr[0].elf && fr[0].vaddr == o->leaf_body &&
			  fr[2].vaddr == o->outer_ret,
		      "ELF vaddrs");
		struct uw_stats st;
		uw_stats(u, &st);
		if (sframe)
			CHECK(st.rows_sframe >= 3 && st.rows_cfi == 0,
			      "rows from .sframe %llu, CFI %llu",
			      (unsigned long long)st.rows_sframe,
			      (unsigned long long)st.rows_cfi);
		else
			CHECK(st.rows_sframe == 0 && st.rows_cfi >= 3,
			      "rows from .sframe %llu, CFI %llu",
			      (unsigned long long)st.rows_sframe,
			      (unsigned long long)st.rows_cfi);
		chain_stack(o, &m, exp, 8);
		expect_not(u, &m, exp, 3);
		uw_free(u);
	}
	/* (SFrame on x86-64 has the RA at CFA-8 only, and gas 2.40 writes
	 * ra16's row without its RA rule: the CFI objects only) */
	snprintf(name, sizeof(name), "%s: RA rule at CFA-16", what);
	if (!sframe)
		CASE(name)
		{
			/* ra16 (CFA S0+24, RA at S0+8) <- outer; S0+16 holds 0
			 */
			struct uwstate *u = ctx_for(path, false);
			memset(stk, 0, sizeof(stk));
			put(S0 + 8, BASE + o->outer_ret);
			m = (struct smp){.ip = BASE + o->ra16_body,
					 .sp = S0,
					 .stack_size = 64};
			exp[0] = m.ip;
			exp[1] = BASE + o->outer_ret;
			expect(u, &m, exp, 2, STOP_OUTERMOST);
			uw_free(u);
		}
	if (!plt)
		return;
	snprintf(name, sizeof(name), "%s: PLT entry <- caller <- outer", what);
	CASE(name)
	{
		struct uwstate *u = ctx_for(path, false);
		for (int at = 0; at <= 11; at += 11) {
			plt_stack(o, at, &m, exp, 0);
			expect(u, &m, exp, 3,
			       sframe ? STOP_NULL_RA : STOP_OUTERMOST);
			plt_stack(o, at, &m, exp, 8);
			expect_not(u, &m, exp, 3);
		}
		uw_free(u);
	}
}

/* ------------------------------------------------------------ region */

/* Three traces: A (CFA = SP+16, RA default, FP saved at CFA-16) called by B
 * (CFA = FP+16, RA stated at CFA-8, FP saved at CFA-16) called by C
 * (outermost); and L, which calls itself forever with CFA = SP+16. */
#define TA 0x7f3300001000ull
#define TB 0x7f3300002000ull
#define TC 0x7f3300003000ull
#define TL 0x7f3300004000ull

static struct jsf_region *region;
static uint64_t t_after; /* a time when all four are live */

static bool make_region(void)
{
	struct jsf_region_opts ro = {.sz = sizeof(ro)};
	if (jsf_region_create(&region, path_reg, &ro))
		return false;
	struct jsf_row a[] = {
	    {.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8},
	    {.offset = 4,
	     .cfa_base = JSF_SP,
	     .cfa_offset = 16,
	     .has_fp = true,
	     .fp_offset = -16}};
	struct jsf_row b[] = {{.offset = 0,
			       .cfa_base = JSF_FP,
			       .cfa_offset = 16,
			       .has_fp = true,
			       .fp_offset = -16,
			       .ra_rule = JSF_RA_CFA,
			       .ra_offset = -8}};
	struct jsf_row c[] = {{.offset = 0, .outermost = true}};
	struct jsf_row l[] = {
	    {.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 16}};
	uint64_t now = jsf_now_ns();
	if (jsf_region_add(region, TA, 64, a, 2, now) ||
	    jsf_region_add(region, TB, 64, b, 1, now) ||
	    jsf_region_add(region, TC, 64, c, 1, now) ||
	    jsf_region_add(region, TL, 64, l, 1, now))
		return false;
	t_after = jsf_now_ns() + 1;
	return true;
}

/* A at TA+8 (rsp S0: CFA S0+16, RA at S0+8, B's rbp S0+32 saved at S0;
 * the sampled rbp is junk) <- B at TB+0x20 (CFA S0+48, RA at S0+40, rbp
 * saved at S0+32) <- C at TC+0x30. */
static void trace_stack(struct smp *m, uint64_t *exp, int ra_shift)
{
	memset(stk, 0, sizeof(stk));
	put(S0, S0 + 32);
	put(S0 + 8 + ra_shift, TB + 0x20);
	put(S0 + 32, 0);
	put(S0 + 40 + ra_shift, TC + 0x30);
	*m = (struct smp){
	    .ip = TA + 8, .sp = S0, .bp = 0x5a5a5a5a, .stack_size = 64};
	m->time = t_after;
	exp[0] = TA + 8;
	exp[1] = TB + 0x20;
	exp[2] = TC + 0x30;
}

/* --------------------------------------------------------------- main */

static void write_file(const char *p, const char *text)
{
	FILE *f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* Another process's region, with other rows at the same addresses: made by
 * a child (its producer pid), left post-mortem. TA: outermost; TB: as
 * here. Returns the child's pid, or 0. */
static uint32_t other_region(const char *path)
{
	pid_t c = fork();
	if (c == 0) {
		struct jsf_region *r;
		struct jsf_row o[] = {{.offset = 0, .outermost = true}};
		struct jsf_region_opts ro = {.sz = sizeof(ro)};
		/* exits without closing it: a producer that died, its
		 * region read post-mortem (open-ended lifetime) */
		_exit(jsf_region_create(&r, path, &ro) ||
			      jsf_region_add(r, TA, 64, o, 1, 1)
			  ? 1
			  : 0);
	}
	int st = 0;
	if (c < 0 || waitpid(c, &st, 0) != c || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		return 0;
	return (uint32_t)c;
}

/* ------------------------------------------- .eh_frame and .debug_frame
 * A real program, built and run here: main -> c_mid -> df_frame -> c_leaf,
 * where df_frame (its own .S file, `.cfi_sections .debug_frame`) has its
 * CFI in .debug_frame only and the C code in .eh_frame: the layout of
 * RaptorJIT's interpreter (docs/RAPTORJIT.md). df_frame's frame is the
 * interpreter's (six pushes and 40 bytes: CFA = rsp+96) and it zeroes rbp
 * as a trace would (c_mid, with a frame pointer, gets its rbp back from
 * df_frame's slot at CFA-16). c_leaf captures its registers and the stack
 * up to main's CFA; the ground truth is the real call chain, each return
 * address as the program itself saw it (__builtin_return_address, and
 * df_frame's [rsp] at its entry). */
static const char mixed_s[] = "	.cfi_sections .debug_frame\n"
			      "	.text\n"
			      "	.globl df_frame\n"
			      "	.type df_frame,@function\n"
			      "df_frame:\n"
			      "	.cfi_startproc\n"
			      "	mov (%rsp), %rax\n"
			      "	mov %rax, df_ra(%rip)\n"
			      "	push %rbp\n"
			      "	.cfi_def_cfa_offset 16\n"
			      "	.cfi_offset %rbp, -16\n"
			      "	push %rbx\n"
			      "	.cfi_def_cfa_offset 24\n"
			      "	.cfi_offset %rbx, -24\n"
			      "	push %r15\n"
			      "	.cfi_def_cfa_offset 32\n"
			      "	push %r14\n"
			      "	.cfi_def_cfa_offset 40\n"
			      "	push %r13\n"
			      "	.cfi_def_cfa_offset 48\n"
			      "	push %r12\n"
			      "	.cfi_def_cfa_offset 56\n"
			      "	sub $40, %rsp\n"
			      "	.cfi_def_cfa_offset 96\n"
			      "	xor %ebp, %ebp\n"
			      "	call c_leaf\n"
			      "	add $40, %rsp\n"
			      "	.cfi_def_cfa_offset 56\n"
			      "	pop %r12\n"
			      "	pop %r13\n"
			      "	pop %r14\n"
			      "	pop %r15\n"
			      "	pop %rbx\n"
			      "	pop %rbp\n"
			      "	.cfi_def_cfa_offset 8\n"
			      "	ret\n"
			      "	.cfi_endproc\n"
			      "	.size df_frame, .-df_frame\n"
			      "	.section .note.GNU-stack,\"\",@progbits\n";
static const char mixed_c[] =
    "#include <stdint.h>\n"
    "#include <stdio.h>\n"
    "#include <string.h>\n"
    "#include <unistd.h>\n"
    "uint64_t df_ra, leaf_ra, mid_ra, cap_ip, cap_sp, cap_bp, stack_hi;\n"
    "static unsigned char cap[65536];\n"
    "static size_t cap_len;\n"
    "static char exe[4096], line[4600];\n"
    "void df_frame(void);\n"
    "__attribute__((noinline)) void c_leaf(void)\n"
    "{\n"
    "	uint64_t ip, sp, bp;\n"
    "	__asm__ volatile(\"lea 0(%%rip), %0\\n\\tmov %%rsp, %1\\n\\t\"\n"
    "			 \"mov %%rbp, %2\" : \"=r\"(ip), \"=r\"(sp), "
    "\"=r\"(bp));\n"
    "	cap_ip = ip, cap_sp = sp, cap_bp = bp;\n"
    "	leaf_ra = (uint64_t)__builtin_return_address(0);\n"
    "	cap_len = stack_hi - sp;\n"
    "	if (cap_len > sizeof(cap))\n"
    "		cap_len = sizeof(cap);\n"
    "	memcpy(cap, (void *)sp, cap_len);\n"
    "}\n"
    "__attribute__((noinline)) void c_mid(void)\n"
    "{\n"
    "	mid_ra = (uint64_t)__builtin_return_address(0);\n"
    "	df_frame();\n"
    "	__asm__ volatile(\"\" ::: \"memory\");\n"
    "}\n"
    "int main(int argc, char **argv)\n"
    "{\n"
    "	ssize_t n = readlink(\"/proc/self/exe\", exe, sizeof(exe) - 1);\n"
    "	if (argc < 2 || n <= 0)\n"
    "		return 1;\n"
    "	exe[n] = 0;\n"
    "	stack_hi = (uint64_t)__builtin_frame_address(0) + 16;\n"
    "	c_mid();\n"
    "	FILE *f = fopen(argv[1], \"w\"), *m = fopen(\"/proc/self/maps\", "
    "\"r\");\n"
    "	if (!f || !m)\n"
    "		return 1;\n"
    "	fprintf(f, \"%llx %llx %llx %llx %llx %llx %zu\\n\", (unsigned long "
    "long)cap_ip,\n"
    "		(unsigned long long)cap_sp, (unsigned long long)cap_bp,\n"
    "		(unsigned long long)leaf_ra, (unsigned long long)df_ra,\n"
    "		(unsigned long long)mid_ra, cap_len);\n"
    "	fwrite(cap, 1, cap_len, f);\n"
    "	while (fgets(line, sizeof(line), m))\n"
    "		if (strstr(line, exe) && strstr(line, \" r-xp \"))\n"
    "			fputs(line, f);\n"
    "	return fclose(f) != 0;\n"
    "}\n";

/* Build and run the program; its capture: registers, ground truth, stack
 * copy (into stk) and its executable's code mappings. */
struct mixed {
	uint64_t ip, sp, bp, leaf_ra, df_ra, mid_ra;
	size_t len;
	struct {
		uint64_t start, end, pgoff;
	} map[4];
	int nmap;
	char exe[300];
};
static bool run_mixed(struct mixed *x)
{
	char c[300], sfile[300], out[300], cmd[2000];
	snprintf(c, sizeof(c), "%s/mixed_main.c", dir);
	snprintf(sfile, sizeof(sfile), "%s/mixed_df.S", dir);
	snprintf(x->exe, sizeof(x->exe), "%s/mixed", dir);
	snprintf(out, sizeof(out), "%s/mixed.out", dir);
	write_file(c, mixed_c);
	write_file(sfile, mixed_s);
	snprintf(cmd, sizeof(cmd),
		 "cc -O1 -fno-omit-frame-pointer -fasynchronous-unwind-tables "
		 "-o %s %s %s 2>%s/mixed.err && %s %s",
		 x->exe, c, sfile, dir, x->exe, out);
	if (system(cmd) != 0) {
		printf("# %s failed\n", cmd);
		return false;
	}
	FILE *f = fopen(out, "r");
	unsigned long long v[6];
	if (!f ||
	    fscanf(f, "%llx %llx %llx %llx %llx %llx %zu", &v[0], &v[1], &v[2],
		   &v[3], &v[4], &v[5], &x->len) != 7 ||
	    fgetc(f) != '\n' || x->len > sizeof(stk) ||
	    fread(stk, 1, x->len, f) != x->len) {
		if (f)
			fclose(f);
		return false;
	}
	x->ip = v[0], x->sp = v[1], x->bp = v[2];
	x->leaf_ra = v[3], x->df_ra = v[4], x->mid_ra = v[5];
	unsigned long long s, e, off;
	char line[600];
	x->nmap = 0;
	while (x->nmap < 4 && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %*s %llx", &s, &e, &off) == 3) {
			x->map[x->nmap].start = s;
			x->map[x->nmap].end = e;
			x->map[x->nmap].pgoff = off;
			x->nmap++;
		}
	fclose(f);
	return x->nmap > 0;
}

/* ELF section names of path containing `name`: present? */
static bool has_section(const char *path, const char *name)
{
	size_t len;
	unsigned char *b = slurp(path, &len);
	bool found = false;
	Elf64_Ehdr eh;
	if (b && len >= sizeof(eh)) {
		memcpy(&eh, b, sizeof(eh));
		if (eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr) <=
		    len) {
			Elf64_Shdr *sh = (Elf64_Shdr *)(b + eh.e_shoff);
			const char *shstr =
			    (const char *)b + sh[eh.e_shstrndx].sh_offset;
			for (unsigned i = 0; i < eh.e_shnum; i++)
				found |= !strcmp(shstr + sh[i].sh_name, name);
		}
	}
	free(b);
	return found;
}

static void mixed_case(void)
{
	CASE(".eh_frame with .debug_frame for the rest: a real stack through "
	     "a function described in .debug_frame only reaches main")
	{
		struct mixed x;
		bool ok = run_mixed(&x);
		CHECK(ok, "the program builds and runs");
		if (!ok)
			return;
		CHECK(has_section(x.exe, ".eh_frame") &&
			  has_section(x.exe, ".debug_frame"),
		      "the program has both .eh_frame and .debug_frame");
		struct uw_opts o = {.no_sframe = true};
		struct uwstate *u = uw_new(NULL, &o);
		for (int i = 0; i < x.nmap; i++) {
			struct pd_event e = {.kind = PD_MMAP};
			e.u.m = (struct pd_mmap){.pid = PID,
						 .tid = PID,
						 .start = x.map[i].start,
						 .len = x.map[i].end -
							x.map[i].start,
						 .pgoff = x.map[i].pgoff,
						 .prot = PROT_READ | PROT_EXEC,
						 .filename = x.exe};
			enum stop_reason why;
			const char *comm;
			uw_event(u, &e, fr, &why, &comm);
		}
		/* stk holds the copy of [sp, sp+len), as a perf sample's */
		struct smp m = {
		    .ip = x.ip, .sp = x.sp, .bp = x.bp, .stack_size = x.len};
		uint64_t exp[4] = {x.ip, x.leaf_ra, x.df_ra, x.mid_ra};
		expect(u, &m, exp, 4, STOP_NO_MAPPING);
		CHECK(fr[1].name && !strcmp(fr[1].name, "df_frame") &&
			  fr[2].name && !strcmp(fr[2].name, "c_mid") &&
			  fr[3].name && !strcmp(fr[3].name, "main"),
		      "names %s %s %s", fr[1].name, fr[2].name, fr[3].name);
		uw_free(u);
	}
}

int main(void)
{
	g_pid = (uint32_t)getpid();
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path_eh, sizeof(path_eh), "%s/eh.so", dir);
	snprintf(path_df, sizeof(path_df), "%s/df.so", dir);
	snprintf(path_sf, sizeof(path_sf), "%s/sf.so", dir);
	snprintf(path_reg, sizeof(path_reg), "%s/region", dir);
	snprintf(path_ks1, sizeof(path_ks1), "%s/kallsyms1", dir);
	snprintf(path_ks2, sizeof(path_ks2), "%s/kallsyms2", dir);

	CASE("every stop reason has a distinct printable name")
	{
		for (int i = 0; i < STOP__N; i++) {
			const char *a = stop_name((enum stop_reason)i);
			CHECK(a && *a && strcmp(a, "?"), "reason %d unnamed",
			      i);
			for (int k = 0; a && k < i; k++) {
				const char *b = stop_name((enum stop_reason)k);
				CHECK(!b || strcmp(a, b),
				      "reasons %d and %d both \"%s\"", k, i, a);
			}
		}
		CHECK(!strcmp(stop_name(STOP__N), "?"), "outside the enum");
	}

	CASE("runtime area names (docs/ABI.md 1.6): LJVM's interpreter, "
	     "LJFF's builtins sorted; a bad name, an address named two ways "
	     "and a record past the area's length left out")
	{
		uint8_t h[4096] = {0};
		uint8_t *a = h + 1024;
		uint32_t o = 0;
		memcpy(a, "LJVM", 4);
		uint16_t v1 = 1, sz = 80;
		memcpy(a + 4, &v1, 2);
		memcpy(a + 6, &sz, 2);
		uint64_t vs = 0x500000, ve = 0x504000;
		memcpy(a + 16, &vs, 8);
		memcpy(a + 24, &ve, 8);
		o = 80;
		/* LJFF: base 0x400000; entries +0x300 "string.gsub", -0x100
		 * "bad name" (a space), +0x200 "table.sort", +0x300 "x.y"
		 * (0x400300 named two ways: neither), +0x50 "p;q" (';') */
		static const struct {
			int32_t d;
			const char *n;
		} e[] = {{0x300, "string.gsub"}, {-0x100, "bad name"},
			 {0x200, "table.sort"},	 {0x300, "x.y"},
			 {0x50, "p;q"},		 {0x400, "error"}};
		uint8_t *r = a + o;
		uint32_t p = 20;
		for (unsigned i = 0; i < 6; i++) {
			memcpy(r + p, &e[i].d, 4);
			r[p + 4] = (uint8_t)strlen(e[i].n);
			memcpy(r + p + 5, e[i].n, strlen(e[i].n));
			p += 5 + (uint32_t)strlen(e[i].n);
		}
		memcpy(r, "LJFF", 4);
		uint16_t psz = (uint16_t)p, cnt = 6;
		uint64_t base = 0x400000;
		memcpy(r + 4, &v1, 2);
		memcpy(r + 6, &psz, 2);
		memcpy(r + 8, &base, 8);
		memcpy(r + 16, &cnt, 2);
		o += p;
		/* a second LJFF record past the area's length: not read */
		memcpy(a + o, "LJFF", 4);
		uint32_t feat = 1, len = o;
		memcpy(h + 96, &feat, 4);
		memcpy(h + 100, &len, 4);
		struct uw_runtime rt;
		CHECK_EQ(uw_runtime_parse(h, sizeof(h), &rt), 0);
		CHECK(rt.vm_start == vs && rt.vm_end == ve, "vm %llx-%llx",
		      (unsigned long long)rt.vm_start,
		      (unsigned long long)rt.vm_end);
		CHECK_EQ(rt.nn, 2);
		CHECK(rt.nn == 2 && rt.n[0].addr == 0x400200 &&
			  !strcmp(rt.n[0].name, "table.sort") &&
			  rt.n[1].addr == 0x400400 &&
			  !strcmp(rt.n[1].name, "error"),
		      "names kept");
		CHECK(!uw_runtime_name(&rt, 0x400300), "two names: none");
		CHECK(!uw_runtime_name(&rt, 0x3fff00), "bad name: none");
		CHECK(uw_runtime_name(&rt, vs) &&
			  !strcmp(uw_runtime_name(&rt, vs), UW_INTERP_NAME),
		      "the interpreter");
		CHECK(!uw_runtime_name(&rt, 0x400201), "not a start");
		uw_runtime_free(&rt);
		/* no RUNTIME bit: nothing; a length past 3072: refused */
		feat = 0;
		memcpy(h + 96, &feat, 4);
		CHECK(uw_runtime_parse(h, sizeof(h), &rt) == 0 && !rt.nn &&
			  !rt.vm_start,
		      "no bit, no names");
		feat = 1, len = 3073;
		memcpy(h + 96, &feat, 4);
		memcpy(h + 100, &len, 4);
		CHECK_EQ(uw_runtime_parse(h, sizeof(h), &rt), -1);
	}

	CASE("the runtime extension (docs/ABI.md 1.7): LJCF names after the "
	     "header page, with the page's LJFF names; a length past its "
	     "capacity or the bytes given refused")
	{
		static uint8_t h[4096 + 4096];
		memset(h, 0, sizeof(h));
		/* header area: LJFF, base 0x400000, +0x10 "string.rep" and
		 * +0x20 "shared" */
		uint8_t *r = h + 1024;
		uint16_t v1 = 1;
		uint32_t p = 20;
		static const char *ff[] = {"string.rep", "shared"};
		for (int32_t i = 0; i < 2; i++) {
			int32_t d = 0x10 * (i + 1);
			memcpy(r + p, &d, 4);
			r[p + 4] = (uint8_t)strlen(ff[i]);
			memcpy(r + p + 5, ff[i], strlen(ff[i]));
			p += 5 + (uint32_t)strlen(ff[i]);
		}
		uint16_t psz = (uint16_t)p, cnt = 2;
		uint64_t base = 0x400000;
		memcpy(r, "LJFF", 4);
		memcpy(r + 4, &v1, 2);
		memcpy(r + 6, &psz, 2);
		memcpy(r + 8, &base, 8);
		memcpy(r + 16, &cnt, 2);
		uint32_t alen = p;
		/* extension: LJCF, base 0x7f0000001000; +0 "cmod.spin",
		 * and 0x400020 again as "other" (two names: neither) */
		r = h + 4096;
		p = 20;
		uint64_t xb = 0x7f0000001000ull;
		int32_t d0 = 0;
		memcpy(r + p, &d0, 4);
		r[p + 4] = 9;
		memcpy(r + p + 5, "cmod.spin", 9);
		p += 14;
		psz = (uint16_t)p;
		memcpy(r, "LJCF", 4);
		memcpy(r + 4, &v1, 2);
		memcpy(r + 6, &psz, 2);
		memcpy(r + 8, &xb, 8);
		cnt = 1;
		memcpy(r + 16, &cnt, 2);
		/* 0x400020 is not within an s32 of it: a record of its own */
		uint32_t x = psz;
		uint8_t *r2 = h + 4096 + x;
		memcpy(r2, "LJCF", 4);
		memcpy(r2 + 4, &v1, 2);
		uint16_t sz2 = 20 + 5 + 5;
		memcpy(r2 + 6, &sz2, 2);
		memcpy(r2 + 8, &base, 8);
		memcpy(r2 + 16, &cnt, 2);
		int32_t d2 = 0x20;
		memcpy(r2 + 20, &d2, 4);
		r2[24] = 5;
		memcpy(r2 + 25, "other", 5);
		x += sz2;
		uint32_t feat = 3, cap = 4096;
		memcpy(h + 96, &feat, 4);
		memcpy(h + 100, &alen, 4);
		memcpy(h + 104, &cap, 4);
		memcpy(h + 108, &x, 4);
		struct uw_runtime rt;
		CHECK_EQ(uw_runtime_parse(h, 4096 + x, &rt), 0);
		const char *a = uw_runtime_name(&rt, 0x400010),
			   *c = uw_runtime_name(&rt, xb);
		CHECK(a && !strcmp(a, "string.rep"), "LJFF in the page: %s",
		      a ? a : "(none)");
		CHECK(c && !strcmp(c, "cmod.spin"), "LJCF in the extension: %s",
		      c ? c : "(none)");
		CHECK(!uw_runtime_name(&rt, 0x400020),
		      "named in the page and the extension two ways: neither");
		int kinds = 0;
		for (size_t i = 0; i < rt.nn; i++)
			kinds |= 1 << rt.n[i].kind;
		CHECK(rt.nn == 2 &&
			  kinds == (1 << UW_RT_BUILTIN | 1 << UW_RT_CFUNC),
		      "two names, one of each kind (%zu)", rt.nn);
		uw_runtime_free(&rt);
		/* without bit 1 the extension is not read */
		feat = 1;
		memcpy(h + 96, &feat, 4);
		CHECK(uw_runtime_parse(h, 4096 + x, &rt) == 0 && rt.nn == 2 &&
			  !uw_runtime_name(&rt, xb),
		      "no bit: the page's names only");
		uw_runtime_free(&rt);
		feat = 3;
		memcpy(h + 96, &feat, 4);
		CHECK_EQ(uw_runtime_parse(h, 4096 + x - 1, &rt), -1);
		cap = x - 1;
		memcpy(h + 104, &cap, 4);
		CHECK_EQ(uw_runtime_parse(h, 4096 + x, &rt), -1);
	}

	CASE("the objects build (cc: .eh_frame, .debug_frame, --gsframe)")
	{
		CHECK(build("eh", "", path_eh, &o_eh), "eh_frame object");
		CHECK(build("df", "-g", path_df, &o_df), "debug_frame object");
		CHECK(build("sf", "-Wa,--gsframe", path_sf, &o_sf),
		      "sframe object");
		CHECK(make_region(), "region: %s", jsf_strerror(-errno));
	}

	if (o_eh.ok)
		elf_kind(".eh_frame", path_eh, &o_eh, false, true);
	/* (ld describes the PLT in .eh_frame only: none without one) */
	if (o_df.ok)
		elf_kind(".debug_frame", path_df, &o_df, false, false);
	if (o_sf.ok)
		elf_kind(".sframe", path_sf, &o_sf, true, true);

	CASE(".sframe object with the option no_sframe: its .eh_frame")
	{
		struct uwstate *u = ctx_for(path_sf, true);
		struct smp m;
		uint64_t exp[3];
		chain_stack(&o_sf, &m, exp, 0);
		expect(u, &m, exp, 3, STOP_OUTERMOST);
		struct uw_stats st;
		uw_stats(u, &st);
		CHECK(st.rows_sframe == 0 && st.rows_cfi >= 3, "rows");
		uw_free(u);
	}

	CASE("region rows: A (SP) <- B (FP, FP saved) <- C (outermost)")
	{
		char err[256] = "";
		struct traces *t =
		    traces_load(path_reg, NULL, err, sizeof(err));
		CHECK(t, "traces_load: %s", err);
		struct uwstate *u = uw_new(t, NULL);
		struct smp m;
		uint64_t exp[3];
		trace_stack(&m, exp, 0);
		expect(u, &m, exp, 3, STOP_OUTERMOST);
		CHECK(fr[0].is_trace && fr[1].is_trace && fr[2].is_trace &&
			  fr[0].map_start == TA && fr[1].map_start == TB,
		      "trace frames");
		trace_stack(&m, exp, 8);
		expect_not(u, &m, exp, 3);
		/* before the traces existed: no trace, no mapping */
		trace_stack(&m, exp, 0);
		m.time = 1;
		expect(u, &m, exp, 0, STOP_NO_MAPPING);
		uw_free(u);
		traces_free(t);
	}

	CASE("regions by process: each sample through its own process's "
	     "region only, however the addresses coincide")
	{
		char p2[300], err[256] = "";
		snprintf(p2, sizeof(p2), "%s/region-other", dir);
		uint32_t other = other_region(p2);
		CHECK(other && other != g_pid, "the other region: %s",
		      jsf_strerror(-errno));
		struct traces *t = traces_new();
		CHECK(t &&
			  traces_add_region(t, path_reg, err, sizeof(err)) == 0,
		      "%s", err);
		CHECK(traces_add_region(t, p2, err, sizeof(err)) == 0, "%s",
		      err);
		CHECK_EQ(traces_regions(t), 2);
		struct uwstate *u = uw_new(t, NULL);
		struct smp m;
		uint64_t exp[3];
		/* this process: its own rows (A <- B <- C) */
		trace_stack(&m, exp, 0);
		expect(u, &m, exp, 3, STOP_OUTERMOST);
		/* the other process, same pc, same stack: its rows (A is its
		 * outermost frame), never this process's */
		g_pid = other;
		trace_stack(&m, exp, 0);
		m.time = jsf_now_ns(); /* in the other region's lifetime */
		expect(u, &m, exp, 1, STOP_OUTERMOST);
		CHECK(fr[0].is_trace && fr[0].map_start == TA, "its trace");
		/* a third process with anonymous code there and no region: no
		 * trace frame from either region, and the reason says so */
		g_pid = other + 1 == g_pid ? other + 2 : other + 1;
		mmap_ev(u, TA & ~0xfffull, 0x10000, "//anon");
		trace_stack(&m, exp, 0);
		expect(u, &m, exp, 1, STOP_NO_REGION);
		CHECK(!fr[0].is_trace && fr[0].jit_area, "anonymous, no trace");
		g_pid = (uint32_t)getpid();
		uw_free(u);
		traces_free(t);
	}

	/* ---- one sample per stop reason */
	struct smp m;
	uint64_t exp[UW_MAX];
	const struct obj *o = &o_eh;

	CASE("stop: outermost, no mapping, no ELF, no row, unsupported rule")
	{
		struct uwstate *u = ctx_for(path_eh, false);
		chain_stack(o, &m, exp, 0);
		expect(u, &m, exp, 3, STOP_OUTERMOST);
		m = (struct smp){.ip = 0x1234000, .sp = S0, .stack_size = 64};
		expect(u, &m, exp, 0, STOP_NO_MAPPING);
		m = (struct smp){
		    .ip = BASE + o->nocfi_body, .sp = S0, .stack_size = 64};
		exp[0] = m.ip;
		expect(u, &m, exp, 1, STOP_NO_ROW);
		m.ip = exp[0] = BASE + o->badcfa_body;
		expect(u, &m, exp, 1, STOP_UNSUP_RULE);
		uw_free(u);
		u = ctx_for(NULL, false);
		mmap_ev(u, BASE, 0x10000, "/nonexistent/t_unwind.so");
		m.ip = exp[0] = BASE + 0x1000;
		expect(u, &m, exp, 1, STOP_NO_ELF);
		uw_free(u);
	}

	CASE("stop: stack short, loop, null RA")
	{
		struct uwstate *u = ctx_for(path_eh, false);
		chain_stack(o, &m, exp, 0);
		m.stack_size = 40; /* leaf's RA slot S0+40 not copied */
		expect(u, &m, exp, 1, STOP_STACK_SHORT);
		chain_stack(o, &m, exp, 0);
		put(S0 + 32, S0 + 16); /* mid's CFA rbp+16 = S0+32 < rsp */
		expect(u, &m, exp, 2, STOP_LOOP);
		chain_stack(o, &m, exp, 0);
		put(S0 + 40, 0);
		expect(u, &m, exp, 1, STOP_NULL_RA);
		uw_free(u);
	}

	CASE("stop: no registers, kernel only, no trace, too deep, rbp unknown")
	{
		struct uwstate *u = ctx_for(NULL, false);
		m = (struct smp){.ip = 0x401000, .no_regs = true};
		expect(u, &m, exp, 0, STOP_NO_REGS);
		m = (struct smp){.ip = 0x401000, .no_sp = true};
		expect(u, &m, exp, 0, STOP_NO_REGS);
		m = (struct smp){.ip = 0xffffffff81000000ull, .no_regs = true};
		expect(u, &m, exp, 0, STOP_KERNEL_ONLY);
		uw_free(u);
		/* (no trace: anonymous code of a process whose region has no
		 * function there) */
		char err[256] = "";
		struct traces *t =
		    traces_load(path_reg, NULL, err, sizeof(err));
		u = uw_new(t, NULL);
		mmap_ev(u, 0x7f4400000000ull, 0x10000, "//anon");
		m = (struct smp){
		    .ip = 0x7f4400000100ull, .sp = S0, .stack_size = 64};
		m.time = t_after;
		exp[0] = m.ip;
		expect(u, &m, exp, 1, STOP_NO_TRACE);
		CHECK(fr[0].jit_area && !fr[0].is_trace, "JIT area frame");
		memset(stk, 0, sizeof(stk));
		for (int i = 0; i <= UW_MAX; i++)
			put(S0 + 16 * (uint64_t)i + 8, TL + 4);
		m = (struct smp){.ip = TL + 4,
				 .sp = S0,
				 .stack_size = sizeof(stk),
				 .time = t_after};
		for (int i = 0; i < UW_MAX; i++)
			exp[i] = TL + 4;
		expect(u, &m, exp, UW_MAX, STOP_DEPTH);
		/* B's CFA is FP-based: without rbp in the sample */
		m = (struct smp){.ip = TB + 0x20,
				 .sp = S0,
				 .no_bp = true,
				 .stack_size = 64,
				 .time = t_after};
		exp[0] = m.ip;
		expect(u, &m, exp, 1, STOP_NO_BP);
		uw_free(u);
		traces_free(t);
	}

	CASE("two contexts share nothing (options, statistics, kallsyms)")
	{
		write_file(path_ks1, "ffffffff81000000 T ks_one\n");
		write_file(path_ks2, "ffffffff81000000 T ks_two\n");
		for (int order = 0; order < 2; order++) {
			struct uw_opts o1 = {.no_sframe = true,
					     .kallsyms = path_ks1};
			struct uwstate *a = uw_new(NULL, &o1);
			struct uwstate *b = uw_new(NULL, NULL);
			CHECK(a && b, "uw_new");
			if (!a || !b)
				break;
			CHECK(uw_use_kallsyms(b, path_ks2) == 0, "kallsyms");
			mmap_ev(a, BASE, 0x10000, path_sf);
			mmap_ev(b, BASE, 0x10000, path_sf);
			chain_stack(&o_sf, &m, exp, 0);
			expect(a, &m, exp, 3, STOP_OUTERMOST);
			expect(b, &m, exp, 3, STOP_NULL_RA);
			struct uw_stats sa, sb;
			uw_stats(a, &sa);
			uw_stats(b, &sb);
			CHECK(sa.rows_sframe == 0 && sa.rows_cfi >= 3 &&
				  sb.rows_sframe >= 3 && sb.rows_cfi == 0,
			      "stats a %llu/%llu b %llu/%llu",
			      (unsigned long long)sa.rows_sframe,
			      (unsigned long long)sa.rows_cfi,
			      (unsigned long long)sb.rows_sframe,
			      (unsigned long long)sb.rows_cfi);
			const char *ka = uw_ksym_name(a, 0xffffffff81000010ull);
			const char *kb = uw_ksym_name(b, 0xffffffff81000010ull);
			CHECK(ka && !strcmp(ka, "ks_one_[k]"), "a: %s", ka);
			CHECK(kb && !strcmp(kb, "ks_two_[k]"), "b: %s", kb);
			/* frames point into their own context's objects */
			CHECK(fr[0].elf &&
				  !strcmp(elfobj_path(fr[0].elf), path_sf),
			      "frame object");
			if (order) {
				uw_free(b);
				uw_free(a);
			} else {
				uw_free(a);
				expect(b, &m, exp, 3, STOP_NULL_RA);
				uw_free(b);
			}
		}
	}

	mixed_case();

	if (region)
		jsf_region_destroy(region);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("# could not remove %s\n", dir);
	return h_exit();
}
