/* SPDX-License-Identifier: MIT */
/*
 * `jitsframe profile`'s user side in unwind/, without BPF: a live
 * process's mappings read from /proc/PID/maps (uw_proc_maps), one frame
 * symbolized at a time (uw_frame_at), and a raw register + stack copy
 * walked (uw_unwind_regs: the oracle's walk), on frames laid out as the
 * sampler delivers them (struct smp_frame: pc, fn_start).
 *
 * Ground truth is this process itself: its own functions (their addresses
 * taken by the compiler), its own stack (captured here; main is on it),
 * and trace code this test publishes in a region it makes, at an
 * anonymous executable page it maps: one address used by two traces in
 * turn (a flush that reuses the address), each named in a jitdump written
 * here at its own time. A frame must be named by the trace live at the
 * sample's time, never by the other.
 */
#include <linux/types.h>

#include "smp_abi.h"
#include "harness.h"
#include "jitdump.h"
#include "jitsframe.h"
#include "unwind.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static char dir[] = "/tmp/t_profsym-XXXXXX";

__attribute__((noinline)) int t_profsym_marker(int x);
__attribute__((noinline)) int t_profsym_marker(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3 + 1;
}

/* The stack of this process at this point: its registers and a copy of
 * the stack from rsp up to the stack's end (at most sizeof(stk)). */
static unsigned char stk[65536];
__attribute__((noinline)) static size_t capture(struct uw_regs *r)
{
	uint64_t sp, bp, ip;
	__asm__ volatile("mov %%rsp, %0\n\tmov %%rbp, %1\n\tlea 0(%%rip), %2"
			 : "=r"(sp), "=r"(bp), "=r"(ip));
	r->sp = sp;
	r->bp = bp;
	r->ip = ip;
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	unsigned long long lo, hi, end = 0;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && sp >= lo &&
		    sp < hi)
			end = hi;
	if (f)
		fclose(f);
	size_t len = end > sp ? (size_t)(end - sp) : 0;
	if (len > sizeof(stk))
		len = sizeof(stk);
	/* through /proc/self/mem: a raw copy, as the kernel makes one (not
	 * through ASan's view of this process's stack) */
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	ssize_t got = fd >= 0 ? pread(fd, stk, len, (off_t)sp) : -1;
	if (fd >= 0)
		close(fd);
	return got > 0 ? (size_t)got : 0;
}

/* A sampled frame as struct smp_frame carries it, symbolized. */
static bool sym(struct uwstate *u, const struct smp_frame *sf, bool caller,
		uint64_t ts, struct uframe *f, enum stop_reason *why)
{
	return uw_frame_at(u, (uint32_t)getpid(), sf->pc, caller, ts, f, why);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	uint32_t me = (uint32_t)getpid();
	char rpath[256];
	snprintf(rpath, sizeof(rpath), "%s/region", dir);

	/* the trace code: one page, two traces at its start in turn */
	unsigned char *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memset(code, 0x90, 4096);
	if (mprotect(code, 4096, PROT_READ | PROT_EXEC))
		return 1;
	uint64_t A = (uint64_t)(uintptr_t)code;
	struct jsf_region *reg;
	struct jd_writer *jd;
	struct jsf_region_opts ro = {.sz = sizeof(ro)};
	struct jsf_row row = {.offset = 0, .cfa_base = JSF_SP, .cfa_offset = 8};
	/* times after the region's creation (it serves no sample before) */
	bool made = !jsf_region_create(&reg, rpath, &ro);
	uint64_t t1 = jsf_now_ns() + 1, t2 = t1 + 1000, t3 = t1 + 2000,
		 t4 = t1 + 3000;
	made = made && !jd_open(&jd, dir) &&
	       !jsf_region_add(reg, A, 64, &row, 1, t1) &&
	       !jd_code(jd, A, code, 64, "TRACE_1::a.lua:10", &row, 1, NULL, 0,
			t1, NULL, NULL, NULL) &&
	       !jsf_region_remove(reg, A, t2) &&
	       !jsf_region_add(reg, A, 48, &row, 1, t3) &&
	       !jd_code(jd, A, code, 48, "TRACE_2::b.lua:20", &row, 1, NULL, 0,
			t3, NULL, NULL, NULL) &&
	       /* at B a function the region names, and a load of B in the
		* jitdump (an older process of the same pid) named otherwise */
	       !jd_code(jd, A + 2048, code + 2048, 32, "TRACE_9::stale.lua:1",
			&row, 1, NULL, 0, t1, NULL, NULL, NULL) &&
	       !jsf_region_add_named(reg, A + 2048, 32, &row, 1,
				     "TRACE_7::c.lua:30", t3);
	if (!made) {
		printf("not ok 1 - cannot make the region and jitdump\n");
		return 1;
	}
	jd_close(jd);

	char err[256];
	struct traces *t = traces_new(), *bare = traces_new();
	if (!t || !bare || traces_add_region(t, rpath, err, sizeof(err)) ||
	    traces_add_region(bare, rpath, err, sizeof(err))) {
		printf("not ok 1 - traces: %s\n", err);
		return 1;
	}
	traces_add_jitdumps(t, dir);
	struct uwstate *u = uw_new(t, NULL), *ub = uw_new(bare, NULL);
	struct uframe f;
	enum stop_reason why;

	CASE("uw_proc_maps reads this process's mappings and name")
	{
		CHECK_EQ(uw_proc_maps(u, me, NULL), 0);
		CHECK_EQ(uw_proc_maps(ub, me, NULL), 0);
		const char *c = uw_comm(u, me);
		CHECK(c && !strncmp(c, "t_profsym", 9), "comm %s",
		      c ? c : "(null)");
		CHECK(uw_exe(u, me) && strstr(uw_exe(u, me), "t_profsym"),
		      "exe %s", uw_exe(u, me) ? uw_exe(u, me) : "(null)");
		CHECK_EQ(uw_proc_maps(u, 0x7ffffff0u, NULL), -ENOENT);
	}

	CASE("an ELF frame by its symbol (leaf: at pc; caller: at pc - 1)")
	{
		uint64_t m = (uint64_t)(uintptr_t)&t_profsym_marker;
		struct smp_frame sf = {.pc = m + 1};
		CHECK(sym(u, &sf, false, t4, &f, &why), "why %d", why);
		CHECK(f.name && !strcmp(f.name, "t_profsym_marker"), "name %s",
		      f.name ? f.name : "-");
		CHECK_EQ(f.symoff, 1);
		CHECK(f.elf && !f.is_trace && !f.jit_area, "kind");
		CHECK(f.map_name && strstr(f.map_name, "t_profsym"), "map");
		sf.pc = m; /* a return address at its start: the code before */
		sym(u, &sf, true, t4, &f, &why);
		CHECK(!f.name || strcmp(f.name, "t_profsym_marker"),
		      "caller at the symbol's start named %s", f.name);
		CHECK_EQ(t_profsym_marker(1), 4);
	}

	CASE("trace frames named by the trace live at the sample's time")
	{
		struct smp_frame sf = {.pc = A + 8, .fn_start = A};
		CHECK(sym(u, &sf, false, t1 + 500, &f, &why), "why %d", why);
		CHECK(f.is_trace && f.map_start == A && f.map_end == A + 64,
		      "trace 1 [%llx, %llx)", (unsigned long long)f.map_start,
		      (unsigned long long)f.map_end);
		CHECK(f.name && !strcmp(f.name, "TRACE_1::a.lua:10"), "%s",
		      f.name ? f.name : "-");
		CHECK(sym(u, &sf, false, t4, &f, &why), "why %d", why);
		CHECK(f.is_trace && f.map_end == A + 48, "trace 2 end %llx",
		      (unsigned long long)f.map_end);
		CHECK(f.name && !strcmp(f.name, "TRACE_2::b.lua:20"), "%s",
		      f.name ? f.name : "-");
		/* a caller frame (return address) inside trace 2 */
		sf.pc = A + 40;
		CHECK(sym(u, &sf, true, t3, &f, &why) && f.name &&
			  !strcmp(f.name, "TRACE_2::b.lua:20"),
		      "caller at t3: %s", f.name ? f.name : "-");
		/* past trace 2's end at t4 (it is shorter): no trace there,
		 * although trace 1 covered it once */
		sf.pc = A + 56;
		CHECK(!sym(u, &sf, false, t4, &f, &why), "A+56 at t4");
		CHECK_EQ(why, STOP_NO_TRACE);
		CHECK(f.jit_area && !f.is_trace && !f.name, "anonymous");
	}

	CASE("between the flush and the reuse, and before: no trace, no name")
	{
		struct smp_frame sf = {.pc = A + 8, .fn_start = A};
		CHECK(!sym(u, &sf, false, t2 + 500, &f, &why), "after flush");
		CHECK_EQ(why, STOP_NO_TRACE);
		CHECK(!f.name, "named %s", f.name);
		CHECK(!sym(u, &sf, false, t1 - 1, &f, &why), "before");
		CHECK_EQ(why, STOP_NO_TRACE);
	}

	CASE("a function the region names: its name, not a jitdump load's "
	     "at the same address and pid")
	{
		struct smp_frame sf = {.pc = A + 2048 + 4,
				       .fn_start = A + 2048};
		CHECK(sym(u, &sf, false, t4, &f, &why), "why %d", why);
		CHECK(f.is_trace && f.name &&
			  !strcmp(f.name, "TRACE_7::c.lua:30"),
		      "%s", f.name ? f.name : "-");
		CHECK(sym(ub, &sf, false, t4, &f, &why) && f.name &&
			  !strcmp(f.name, "TRACE_7::c.lua:30"),
		      "no jitdump: %s", f.name ? f.name : "-");
	}

	CASE("traces_add_jitdump_of: only that process's jitdump names")
	{
		struct traces *tj = traces_new();
		CHECK(tj && !traces_add_region(tj, rpath, err, sizeof(err)),
		      "%s", err);
		struct uwstate *uj = tj ? uw_new(tj, NULL) : NULL;
		struct smp_frame sf = {.pc = A + 8, .fn_start = A};
		if (uj) {
			traces_add_jitdump_of(tj, dir, me ^ 1); /* none */
			CHECK(sym(uj, &sf, false, t4, &f, &why) && !f.name,
			      "another pid's: %s", f.name ? f.name : "-");
			traces_add_jitdump_of(tj, dir, me);
			CHECK(sym(uj, &sf, false, t4, &f, &why) && f.name &&
				  !strcmp(f.name, "TRACE_2::b.lua:20"),
			      "its own: %s", f.name ? f.name : "-");
			uw_free(uj);
		}
		traces_free(tj);
	}

	CASE("without the jitdump: a trace frame, unnamed (TRACE@ADDR)")
	{
		struct smp_frame sf = {.pc = A + 8, .fn_start = A};
		CHECK(sym(ub, &sf, false, t4, &f, &why), "why %d", why);
		CHECK(f.is_trace && !f.name && f.map_start == A, "%s",
		      f.name ? f.name : "-");
	}

	CASE("a region serves its own process only")
	{
		/* another pid with this process's mappings: no region */
		char maps[64];
		snprintf(maps, sizeof(maps), "/proc/%u/maps", me);
		uint32_t other = me ^ 0x40000000u;
		CHECK_EQ(uw_proc_maps(u, other, maps), 0);
		CHECK(!uw_frame_at(u, other, A + 8, false, t4, &f, &why),
		      "other pid");
		CHECK_EQ(why, STOP_NO_REGION);
		uint64_t m = (uint64_t)(uintptr_t)&t_profsym_marker;
		CHECK(uw_frame_at(u, other, m + 1, false, t4, &f, &why) &&
			  f.name && !strcmp(f.name, "t_profsym_marker"),
		      "ELF of other");
		/* a pc in no mapping */
		CHECK(!uw_frame_at(u, me, 8, false, t4, &f, &why), "pc 8");
		CHECK_EQ(why, STOP_NO_MAPPING);
	}

	CASE("a code mapping gone since the last maps read (dlclose) still "
	     "names the samples taken while it was there; not once a new "
	     "mapping overlaps it, nor after an exec")
	{
		/* this process's maps, then without libc's lines (as a
		 * library dlclose'd), then with another file over libc's
		 * code, then (from the second) as another program */
		char self[64], m[4][300], line[4096 + 256];
		snprintf(self, sizeof(self), "/proc/%u/maps", me);
		FILE *in = fopen(self, "re"), *o[4];
		for (int k = 0; k < 4; k++) {
			snprintf(m[k], sizeof(m[k]), "%s/maps%d", dir, k);
			o[k] = fopen(m[k], "w");
		}
		char exe[4096] = "";
		ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		exe[el > 0 ? el : 0] = 0;
		uint64_t pc = (uint64_t)(uintptr_t)getpid + 1;
		while (in && fgets(line, sizeof(line), in)) {
			unsigned long long lo, hi;
			bool libc = strstr(line, "/libc.so") != NULL;
			fputs(line, o[0]);
			if (libc && sscanf(line, "%llx-%llx", &lo, &hi) == 2 &&
			    pc >= lo && pc < hi)
				fprintf(o[2],
					"%llx-%llx r-xp 00000000 00:00 0 %s\n",
					lo, hi, exe);
			if (libc)
				continue;
			fputs(line, o[1]);
			fputs(line, o[2]);
			char *e = strstr(line, exe);
			if (e && exe[0]) { /* the program: another one */
				*e = 0;
				fprintf(o[3], "%s/bin/sh\n", line);
			} else {
				fputs(line, o[3]);
			}
		}
		if (in)
			fclose(in);
		for (int k = 0; k < 4; k++)
			fclose(o[k]);
		uint32_t g = me ^ 0x20000000u;
		struct uframe f0, f1, f2, f3;
		CHECK_EQ(uw_proc_maps(u, g, m[0]), 0);
		bool a0 = uw_frame_at(u, g, pc, false, t4, &f0, &why);
		CHECK(a0 && f0.map_name && strstr(f0.map_name, "/libc.so"),
		      "read 1: %s", a0 ? f0.map_name : stop_name(why));
		CHECK_EQ(uw_proc_maps(u, g, m[1]), 0);
		bool a1 = uw_frame_at(u, g, pc, false, t4, &f1, &why);
		CHECK(a1 && f1.map_name && strstr(f1.map_name, "/libc.so") &&
			  f1.name && f0.name && !strcmp(f1.name, f0.name),
		      "libc gone: %s", a1 ? f1.map_name : stop_name(why));
		CHECK_EQ(uw_proc_maps(u, g, m[2]), 0);
		bool a2 = uw_frame_at(u, g, pc, false, t4, &f2, &why);
		CHECK(a2 && f2.map_name && !strcmp(f2.map_name, exe),
		      "overlapped: %s", a2 ? f2.map_name : stop_name(why));
		CHECK_EQ(uw_proc_maps(u, g ^ 1, m[0]), 0);
		CHECK_EQ(uw_proc_maps(u, g ^ 1, m[3]), 0);
		bool a3 = uw_frame_at(u, g ^ 1, pc, false, t4, &f3, &why);
		CHECK(!a3 && why == STOP_NO_MAPPING, "exec: %s",
		      a3 ? f3.map_name : stop_name(why));
		for (int k = 0; k < 4; k++)
			unlink(m[k]);
	}

	CASE("a raw register + stack copy of this thread walks to main")
	{
		struct uw_regs r;
		size_t len = capture(&r);
		static struct uframe fr[UW_MAX];
		CHECK(len > 256, "copied %zu", len);
		int n = uw_unwind_regs(u, me, me, jsf_now_ns(), &r, stk, len,
				       fr, &why);
		bool cap = false, main_ = false;
		for (int i = 0; i < n; i++) {
			cap |= fr[i].name && !strcmp(fr[i].name, "capture");
			main_ |= fr[i].name && !strcmp(fr[i].name, "main");
		}
		CHECK(n >= 2 && cap && main_, "%d frames, capture %d main %d",
		      n, cap, main_);
		CHECK(why == STOP_OUTERMOST || why == STOP_NULL_RA,
		      "stopped: %s", stop_name(why));
		/* a copy cut short stops for that reason, after capture */
		n = uw_unwind_regs(u, me, me, jsf_now_ns(), &r, stk, 8, fr,
				   &why);
		CHECK(n >= 1 && why == STOP_STACK_SHORT, "%d %s", n,
		      stop_name(why));
	}

	uw_free(u);
	uw_free(ub);
	traces_free(t);
	traces_free(bare);
	jsf_region_destroy(reg);
	char p[300];
	snprintf(p, sizeof(p), "%s/jit-%u.dump", dir, me);
	unlink(p);
	unlink(rpath);
	rmdir(dir);
	munmap(code, 4096);
	return h_exit();
}
