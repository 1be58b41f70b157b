/* SPDX-License-Identifier: MIT */
/*
 * The sampler's user side (sampler.h): loads the BPF program from its
 * skeleton (build/gen/sampler.skel.h, the object embedded), opens one
 * cpu-clock perf event per online CPU and attaches the program to each,
 * fills the program's maps — per watched process its executable mappings
 * and region (procs), per ELF object its rows (objs, rows: loaded once per
 * object, keyed by device and inode, from unwind/'s uw_elf_rows) — and
 * reads the ring buffer (a raw copy is written just before its sample and
 * paired with it here by id; kernel frames from the stack map).
 */
#include "jsfenv.h"
#include "sampler.h"

#include "jitsframe.h"
#include "sampler.skel.h"
#include "unwind.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#define RAWQ 32			/* raw copies waiting for their sample */
#define REFRESH_NS 250000000ull /* an unwatched process re-watched */
/* A pc in no known mapping: the mappings re-read after GAP_MIN, the gap
 * doubled (up to GAP_MAX) each time that found nothing new, back to
 * GAP_MIN when it did; CHANGED_NS after an executable mmap/mprotect */
#define GAP_MIN 20000000ull
#define GAP_MAX 2000000000ull
#define CHANGED_NS 5000000ull
#define REGION_NS 100000000ull /* a missing region looked for every 100 ms */
#define SWEEP_NS 1000000000ull /* the table checked against /proc each 1 s */
#define SWEEP_MAX 64	       /* processes checked per poll */
#define AUTO_BURST 32	       /* opts.all: new processes watched at once */
#define AUTO_PER_S 200	       /* ... and per second */
#define NEG 64		       /* processes that could not be watched */
#define NEG_NS 1000000000ull   /* ... not tried again for 1 s */
#define KPROCS_MAX 4096	       /* the procs map's size (sampler.bpf.c) */

struct sobj {
	char *key; /* "dev:inode" or the path */
	uint32_t id, n;
	int ok;
	struct uw_elf_info info;
};

struct wproc {
	int pid;
	char *region; /* as given to smp_watch (NULL: discovery) */
	uint64_t last_ns, region_ns;
	uint64_t start_ticks; /* with pid, the process */
	uint64_t gap_ns, maps_sig;
	int has_region;
	int has_lv; /* its region publishes the VM's layout (lv) */
	struct smp_luavm lv;
};

/* A prototype as read through /proc/PID/mem (smp_lua_frames), and kept
 * (smp.lp) under what the kernel saw of it at the sample that read it:
 * found again only by a frame the kernel saw the same (same_proto). */
struct lproto {
	int pid;
	uint64_t pt, name; /* name: its chunk name's GCstr */
	uint32_t firstline, numline, sizebc, namehash, namelen;
	uint64_t lineinfo;
	uint8_t head[8], tail[8];
	char *chunk; /* '@' or '=' dropped, cut to LNAME - 1 bytes */
};
#define LPROTO_BITS 12
#define LNAME 512 /* a chunk name's bytes kept, its NUL included */
#define LUAQ 32

struct smp {
	struct sampler_bpf *skel;
	int ncpu;
	int *pfd;
	struct bpf_link **links;
	struct ring_buffer *rb;
	struct sobj *objs;
	uint32_t nobjs, capobjs, next_row;
	struct wproc *procs;
	size_t nprocs, capprocs;
	struct smp_raw *rawq[RAWQ];
	uint32_t rawhead;
	struct smp_lua *luaq[LUAQ];
	uint32_t luahead;
	struct lproto *lp[1u << LPROTO_BITS];
	/* the chunk names of the last smp_lua_frames call's frames */
	char lname[SMP_MAX_LFRAMES][LNAME];
	uint64_t lua_samples, lua_stop[SMP_LSTOP__N];
	struct smp_opts op;
	/* lifecycle and opts.all */
	uint64_t procs_full, auto_watched, next_sweep, auto_tokens_ns;
	size_t sweep_at;
	struct {
		int pid;
		uint64_t until;
	} neg[NEG];
	uint32_t neghead;
	/* during smp_poll */
	smp_event_fn fn;
	void *ctx;
	int rc, delivered;
	uint64_t delivered_total, refreshes;
	struct smp_sample cur;
	uint64_t kbuf[127];
	struct smp_proc *tmp;
};

static void msgf(char *msg, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void msgf(char *msg, size_t len, const char *fmt, ...)
{
	if (!msg || !len)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, len, fmt, ap);
	va_end(ap);
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* libbpf's messages: the last warning kept (the verifier's verdict), the
 * rest only with JITSFRAME_SAMPLER_DEBUG set */
static __thread char lastmsg[256];
static int on_libbpf(enum libbpf_print_level lvl, const char *fmt, va_list ap)
{
	if (getenv("JITSFRAME_SAMPLER_DEBUG"))
		return vfprintf(stderr, fmt, ap);
	if (lvl == LIBBPF_DEBUG)
		return 0;
	char b[256];
	vsnprintf(b, sizeof(b), fmt, ap);
	size_t n = strlen(b);
	while (n && (b[n - 1] == '\n' || b[n - 1] == ' '))
		b[--n] = 0;
	if (n)
		memcpy(lastmsg, b, n + 1);
	return 0;
}

const char *smp_stop_name(unsigned stop)
{
	static const char *const n[SMP_STOP__N] = {
	    [SMP_STOP_OUTERMOST] = "outermost",
	    [SMP_STOP_NO_MAPPING] = "no mapping",
	    [SMP_STOP_NO_ROWS] = "no rows",
	    [SMP_STOP_NO_ROW] = "no row",
	    [SMP_STOP_UNSUP_RULE] = "unsupported rule",
	    [SMP_STOP_READ] = "stack read failed",
	    [SMP_STOP_BUSY] = "region busy",
	    [SMP_STOP_NOT_RESIDENT] = "region not resident",
	    [SMP_STOP_NO_REGION] = "no region",
	    [SMP_STOP_NO_TRACE] = "no trace",
	    [SMP_STOP_CORRUPT] = "region corrupt",
	    [SMP_STOP_DEPTH] = "too deep",
	    [SMP_STOP_LOOP] = "loop",
	    [SMP_STOP_KERNEL_ONLY] = "kernel thread",
	};
	return stop < SMP_STOP__N && n[stop] ? n[stop] : "?";
}

/* Online CPUs from /sys (a list such as "0-3,6"); 0..n-1 on failure. */
static int online_cpus(int *cpus, int max)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	int n = 0;
	if (f) {
		unsigned a, b;
		char sep;
		while (n < max && fscanf(f, "%u", &a) == 1) {
			b = a;
			if (fscanf(f, "%c", &sep) == 1 && sep == '-') {
				if (fscanf(f, "%u", &b) != 1)
					break;
				if (fscanf(f, "%c", &sep) != 1)
					sep = 0;
			}
			for (unsigned c = a; c <= b && n < max; c++)
				cpus[n++] = (int)c;
			if (sep != ',')
				break;
		}
		fclose(f);
	}
	if (!n) {
		long k = sysconf(_SC_NPROCESSORS_ONLN);
		for (long c = 0; c < k && n < max; c++)
			cpus[n++] = (int)c;
	}
	return n;
}

static int on_rec(void *ctx, void *data, size_t size);

static int load(struct smp *s, const struct smp_opts *op, int hooks)
{
	s->skel->rodata->cfg_max_frames = op->max_frames;
	s->skel->rodata->cfg_raw_every = op->raw_every;
	s->skel->rodata->cfg_all = !!op->all;
	s->skel->rodata->cfg_follow = !!op->follow;
	if (op->kstack_entries)
		bpf_map__set_max_entries(s->skel->maps.kstacks,
					 op->kstack_entries);
	if (!hooks ||
	    libbpf_find_vmlinux_btf_id("do_mmap", BPF_TRACE_FENTRY) < 0)
		bpf_program__set_autoload(s->skel->progs.smp_on_mmap, false);
	if (!hooks || libbpf_find_vmlinux_btf_id("do_mprotect_pkey",
						 BPF_TRACE_FENTRY) < 0)
		bpf_program__set_autoload(s->skel->progs.smp_on_mprotect,
					  false);
	return sampler_bpf__load(s->skel);
}

int smp_open(struct smp **out, const struct smp_opts *o, char *msg,
	     size_t msglen)
{
	struct smp_opts op = {0};
	if (!out)
		return -EINVAL;
	*out = NULL;
	if (o) {
		size_t n = o->sz && o->sz < sizeof(op) ? o->sz : sizeof(op);
		memcpy(&op, o, n);
	}
	if (!op.hz)
		op.hz = 99;
	if (!op.max_frames || op.max_frames > SMP_MAX_FRAMES)
		op.max_frames = SMP_MAX_FRAMES;
	if (!op.max_procs || op.max_procs > KPROCS_MAX)
		op.max_procs = op.max_procs ? KPROCS_MAX : 1024;
	const char *btf = getenv(JSF_ENV_SAMPLER_BTF);
	if (!btf || !*btf)
		btf = "/sys/kernel/btf/vmlinux";
	if (access(btf, R_OK)) {
		msgf(msg, msglen,
		     "the kernel has no BTF (%s: %s): "
		     "the sampler needs CONFIG_DEBUG_INFO_BTF",
		     btf, strerror(errno));
		return -EOPNOTSUPP;
	}
	const char *nobpf = getenv(JSF_ENV_SAMPLER_NOBPF);
	if (nobpf && !strcmp(nobpf, "1")) {
		msgf(msg, msglen, "this kernel has no BPF (bpf(2): %s)",
		     strerror(ENOSYS));
		return -ENOSYS;
	}
	struct smp *s = calloc(1, sizeof(*s));
	if (!s || !(s->tmp = calloc(1, sizeof(*s->tmp)))) {
		free(s);
		return -ENOMEM;
	}
	libbpf_set_print(on_libbpf);
	lastmsg[0] = 0;
	int err;
	/* the mmap/mprotect hooks (fentry) are a help, not a need: left out
	 * where the kernel's BTF lacks the functions or the kernel refuses
	 * fentry programs (a second load without them) */
	for (int hooks = 1; hooks >= 0; hooks--) {
		s->skel = sampler_bpf__open();
		if (!s->skel) {
			err = -errno;
			msgf(msg, msglen, "cannot open the BPF program: %s",
			     strerror(-err));
			goto fail;
		}
		err = load(s, &op, hooks);
		if (!err)
			break;
		sampler_bpf__destroy(s->skel);
		s->skel = NULL;
	}
	s->op = op;
	if (err) {
		if (err == -EPERM) {
			msgf(msg, msglen,
			     "no privilege to load BPF programs (run as root, "
			     "or with CAP_BPF and CAP_PERFMON)");
			err = -EPERM;
		} else if (err == -ENOSYS) {
			msgf(msg, msglen, "this kernel has no BPF (bpf(2): %s)",
			     strerror(ENOSYS));
		} else {
			err = err == -EACCES ? -EINVAL : err; /* the verifier */
			msgf(msg, msglen,
			     "the kernel refused the BPF program: %s%s%s",
			     strerror(-err), lastmsg[0] ? ": " : "", lastmsg);
		}
		goto fail;
	}
	int cpus[1024];
	int n = online_cpus(cpus, 1024);
	if (n < 1) {
		cpus[0] = 0;
		n = 1;
	}
	s->pfd = calloc((size_t)n, sizeof(int));
	s->links = calloc((size_t)n, sizeof(struct bpf_link *));
	if (!s->pfd || !s->links) {
		err = -ENOMEM;
		goto fail;
	}
	for (int i = 0; i < n; i++) {
		struct perf_event_attr a = {
		    .type = PERF_TYPE_SOFTWARE,
		    .size = sizeof(a),
		    .config = PERF_COUNT_SW_CPU_CLOCK,
		    .sample_freq = op.hz,
		    .freq = 1,
		};
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, cpus[i], -1,
				      PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			if (err == -EACCES || err == -EPERM) {
				msgf(
				    msg, msglen,
				    "no privilege to open perf events on every "
				    "CPU (run as root, or with CAP_PERFMON)");
				err = -EPERM;
			} else {
				msgf(msg, msglen,
				     "perf_event_open(cpu-clock, cpu %d): %s",
				     cpus[i], strerror(-err));
			}
			goto fail;
		}
		s->pfd[s->ncpu] = fd;
		s->ncpu++;
		s->links[i] = bpf_program__attach_perf_event(
		    s->skel->progs.smp_on_sample, fd);
		if (!s->links[i]) {
			err = -errno;
			msgf(msg, msglen,
			     "cannot attach the BPF program to cpu %d: %s",
			     cpus[i], strerror(-err));
			s->links[i] = NULL;
			goto fail;
		}
	}
	/* the lifecycle tracepoints (and the mmap hooks where loaded) */
	struct {
		struct bpf_program *p;
		struct bpf_link **l;
		int need;
	} tp[] = {
	    {s->skel->progs.smp_on_exec, &s->skel->links.smp_on_exec, 1},
	    {s->skel->progs.smp_on_exit, &s->skel->links.smp_on_exit, 1},
	    {s->skel->progs.smp_on_fork, &s->skel->links.smp_on_fork, 1},
	    {s->skel->progs.smp_on_mmap, &s->skel->links.smp_on_mmap, 0},
	    {s->skel->progs.smp_on_mprotect, &s->skel->links.smp_on_mprotect,
	     0},
	};
	for (size_t i = 0; i < sizeof(tp) / sizeof(tp[0]); i++) {
		if (!bpf_program__autoload(tp[i].p))
			continue;
		*tp[i].l = bpf_program__attach(tp[i].p);
		if (!*tp[i].l) {
			err = -errno;
			*tp[i].l = NULL;
			if (!tp[i].need)
				continue;
			msgf(msg, msglen, "cannot attach %s: %s",
			     bpf_program__name(tp[i].p), strerror(-err));
			goto fail;
		}
	}
	s->rb =
	    ring_buffer__new(bpf_map__fd(s->skel->maps.rb), on_rec, s, NULL);
	if (!s->rb) {
		err = -errno;
		msgf(msg, msglen, "cannot map the ring buffer: %s",
		     strerror(-err));
		goto fail;
	}
	*out = s;
	return 0;
fail:
	smp_close(s);
	return err < 0 ? err : -EINVAL;
}

void smp_close(struct smp *s)
{
	if (!s)
		return;
	if (s->rb)
		ring_buffer__free(s->rb);
	for (int i = 0; i < s->ncpu; i++) {
		if (s->links && s->links[i])
			bpf_link__destroy(s->links[i]);
		close(s->pfd[i]);
	}
	free(s->links);
	free(s->pfd);
	if (s->skel)
		sampler_bpf__destroy(s->skel);
	for (uint32_t i = 0; i < s->nobjs; i++)
		free(s->objs[i].key);
	free(s->objs);
	for (size_t i = 0; i < s->nprocs; i++)
		free(s->procs[i].region);
	free(s->procs);
	for (int i = 0; i < RAWQ; i++)
		free(s->rawq[i]);
	for (int i = 0; i < LUAQ; i++)
		free(s->luaq[i]);
	for (uint32_t i = 0; i < (1u << LPROTO_BITS); i++)
		if (s->lp[i]) {
			free(s->lp[i]->chunk);
			free(s->lp[i]);
		}
	free(s->tmp);
	free(s);
}

/* ---- ELF objects: rows loaded once each */

static int upload_rows(struct smp *s, struct sobj *ob, const struct smp_row *v,
		       uint32_t n);
static int mem_read(int pid, uint64_t a, void *buf, size_t n);

/* The program's rows from unwind/'s: each row from its pc to the next
 * row's, a NONE row wherever the next does not start at its end. */
static int load_rows(struct smp *s, struct sobj *ob, const char *path)
{
	struct uw_xrow *xr;
	size_t nx;
	int err = uw_elf_rows(path, &xr, &nx, &ob->info);
	if (err)
		return err;
	struct smp_row *v = calloc(2 * nx + 1, sizeof(*v));
	if (!v) {
		free(xr);
		return -ENOMEM;
	}
	uint32_t n = 0;
	for (size_t i = 0; i < nx; i++) {
		const struct uw_xrow *x = &xr[i];
		if (x->hi > 0xffffffffull)
			break; /* the program's rows hold 32-bit vaddrs */
		struct smp_row r = {.pc = (uint32_t)x->lo};
		switch (x->cfa) {
		case UW_XCFA_SP:
			r.rule = SMP_RULE_SP;
			break;
		case UW_XCFA_FP:
			r.rule = SMP_RULE_FP;
			break;
		case UW_XCFA_PLT:
			r.rule = SMP_RULE_PLT;
			break;
		case UW_XCFA_UNSUP:
			r.rule = SMP_RULE_UNSUP;
			break;
		default:
			r.rule = SMP_RULE_NONE;
		}
		if (x->fp_off != (int16_t)x->fp_off ||
		    x->ra_off != (int16_t)x->ra_off)
			r.rule = SMP_RULE_UNSUP;
		r.cfa_off = x->cfa_off;
		r.fp_off = (int16_t)x->fp_off;
		r.ra_off = (int16_t)x->ra_off;
		r.plt_k = x->plt_k;
		r.flags = (x->fp_saved ? SMP_ROW_FP_SAVED : 0) |
			  (x->ra_undef ? SMP_ROW_RA_UNDEF : 0);
		if (n && v[n - 1].pc == r.pc)
			n--; /* an empty gap row replaced */
		v[n++] = r;
		if (i + 1 == nx || xr[i + 1].lo != x->hi)
			v[n++] = (struct smp_row){.pc = (uint32_t)x->hi};
	}
	free(xr);
	err = upload_rows(s, ob, v, n);
	free(v);
	return err;
}

/* rows v[0..n) into the program's rows map as object ob's */
static int upload_rows(struct smp *s, struct sobj *ob, const struct smp_row *v,
		       uint32_t n)
{
	int err;
	if (s->next_row + n > SMP_MAX_ROWS)
		return -ENOSPC;
	int fd = bpf_map__fd(s->skel->maps.rows);
	uint32_t *keys = malloc((n ? n : 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (uint32_t i = 0; i < n; i++)
		keys[i] = s->next_row + i;
	uint32_t cnt = n;
	err = n ? bpf_map_update_batch(fd, keys, v, &cnt, NULL) : 0;
	if (err) /* one by one, where batches are not supported */
		for (uint32_t i = 0, e = 0; i < n && !e; i++)
			err = e = bpf_map_update_elem(fd, &keys[i], &v[i], 0);
	free(keys);
	if (err)
		return err;
	struct smp_obj so = {.first = s->next_row, .n = n};
	err = bpf_map_update_elem(bpf_map__fd(s->skel->maps.objs), &ob->id, &so,
				  0);
	if (err)
		return err;
	s->next_row += n;
	ob->n = n;
	return 0;
}

/* The object loaded under key, or NULL. */
static struct sobj *find_obj(struct smp *s, const char *key)
{
	for (uint32_t i = 0; i < s->nobjs; i++)
		if (!strcmp(s->objs[i].key, key))
			return &s->objs[i];
	return NULL;
}

/* A new object under key (its rows not loaded yet), or NULL when out of
 * room or memory. */
static struct sobj *new_obj(struct smp *s, const char *key)
{
	if (s->nobjs >= SMP_MAX_OBJS)
		return NULL;
	if (s->nobjs == s->capobjs) {
		uint32_t nc = s->capobjs ? 2 * s->capobjs : 64;
		struct sobj *no = realloc(s->objs, nc * sizeof(*no));
		if (!no)
			return NULL;
		s->objs = no;
		s->capobjs = nc;
	}
	struct sobj *ob = &s->objs[s->nobjs];
	memset(ob, 0, sizeof(*ob));
	ob->key = strdup(key);
	if (!ob->key)
		return NULL;
	ob->id = s->nobjs++;
	return ob;
}

static struct sobj *get_obj(struct smp *s, const char *key, const char *path)
{
	struct sobj *ob = find_obj(s, key);
	if (ob || !(ob = new_obj(s, key)))
		return ob;
	ob->ok = load_rows(s, ob, path) == 0;
	return ob;
}

/* vaddr = pc - bias, through the PT_LOAD segment holding file offset
 * pgoff (-1: none). */
static int map_bias(const struct uw_elf_info *in, uint64_t start,
		    uint64_t pgoff, uint64_t *bias)
{
	for (uint32_t i = 0; i < in->nload; i++) {
		uint64_t off = in->load[i].off, lo = off & ~4095ull;
		if (pgoff >= lo && pgoff < off + in->load[i].filesz) {
			*bias = start - (pgoff - off + in->load[i].vaddr);
			return 0;
		}
	}
	return -1;
}

/* ---- watched processes */

/* /proc/PID/stat's field 22 (the start time in clock ticks since boot):
 * 0 when the process is gone */
static uint64_t proc_start(int pid)
{
	char p[64], b[1024];
	snprintf(p, sizeof(p), "/proc/%d/stat", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	b[n] = 0;
	char *q = strrchr(b, ')'); /* comm may hold anything but ends so */
	if (!q)
		return 0;
	q++;
	for (int f = 2; f < 21 && q; f++) /* q: the space before field f + 1 */
		q = strchr(q + 1, ' ');
	return q ? strtoull(q + 1, NULL, 10) : 0;
}

static struct wproc *find_proc(struct smp *s, int pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i].pid == pid)
			return &s->procs[i];
	return NULL;
}

/* The header page's runtime area (docs/ABI.md 1.6): the LuaJIT layout,
 * its first record (the module writes LJVM first; later records, in the
 * page or its extension, name code for user space only). */
static int parse_lv(const uint8_t *h, struct smp_luavm *lv)
{
	uint32_t feat, len;
	memcpy(&feat, h + 96, 4);
	memcpy(&len, h + 100, 4);
	const uint8_t *a = h + 1024;
	uint16_t ver, sz;
	memcpy(&ver, a + 4, 2);
	memcpy(&sz, a + 6, 2);
	if (!(feat & 1) || len < 72 || len > 3072 || memcmp(a, "LJVM", 4) ||
	    ver != 1 || sz < 72 || sz > len)
		return -1;
	memset(lv, 0, sizeof(*lv));
	memcpy(&lv->g, a + 8, 8);
	memcpy(&lv->vm_start, a + 16, 8);
	memcpy(&lv->vm_end, a + 24, 8);
	uint16_t o[18];
	memcpy(o, a + 32, sizeof(o));
	lv->g_vmstate = o[0];
	lv->g_cur_L = o[1];
	lv->g_jit_base = o[2];
	lv->L_base = o[3];
	lv->L_stack = o[4];
	lv->L_cframe = o[5];
	lv->cf_pc = o[6];
	lv->fn_ffid = o[7];
	lv->fn_pc = o[8];
	lv->pt_size = o[9];
	lv->pt_sizebc = o[10];
	lv->pt_chunkname = o[11];
	lv->pt_firstline = o[12];
	lv->pt_numline = o[13];
	lv->pt_lineinfo = o[14];
	lv->str_len = o[15];
	lv->str_data = o[16];
	lv->flags = o[17];
	if (sz >= 80) { /* the C frame chain's offsets */
		memcpy(&lv->cf_prev, a + 72, 2);
		memcpy(&lv->cf_nres, a + 74, 2);
	}
	/* the walk knows two-slot frames of GC64 values only */
	return (lv->flags & 3) == 3 && lv->g ? 0 : -1;
}

/* The region's producer address and size, from its header (docs/ABI.md
 * §1.1), once jsf_region_info has checked it is pid's and live; its VM
 * layout, where it has one (*has_lv). */
static int region_of(int pid, const char *given, uint64_t *base, uint64_t *size,
		     struct smp_luavm *lv, int *has_lv, char *msg,
		     size_t msglen)
{
	char path[4096];
	int err;
	if (given) {
		snprintf(path, sizeof(path), "%s", given);
	} else if ((err = jsf_region_find(pid, 0, path, sizeof(path)))) {
		return err;
	}
	/* the header's facts only (jsf_region_info: 4 KiB; a view of a
	 * closed region would read its whole table, hundreds of MB after many
	 * traces, and this runs for an exiting process's last samples) */
	struct jsf_view_info vi = {.sz = sizeof(vi)};
	if ((err = jsf_region_info(path, &vi))) {
		msgf(msg, msglen, "region %s: %s", path, jsf_strerror(err));
		return err;
	}
	if (vi.producer_pid != (uint32_t)pid || !vi.live) {
		msgf(msg, msglen, "region %s: %s", path,
		     vi.live ? "another process's" : "its producer is gone");
		return -ESRCH;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	uint64_t h[512];
	ssize_t r = fd < 0 ? -1 : pread(fd, h, sizeof(h), 0);
	if (fd >= 0)
		close(fd);
	*has_lv = r == (ssize_t)sizeof(h) && !parse_lv((const uint8_t *)h, lv);
	if (r < 48 || memcmp(h, "JSFREGN", 8)) {
		msgf(msg, msglen, "region %s: unreadable header", path);
		return -EINVAL;
	}
	*size = h[3]; /* max_size: what the producer mapped */
	*base = h[5]; /* producer_base */
	return 0;
}

static void drop_proc(struct smp *s, struct wproc *w)
{
	size_t i = (size_t)(w - s->procs), last = --s->nprocs;
	free(w->region);
	w->region = NULL;
	if (i != last) {
		s->procs[i] = s->procs[last];
		s->procs[last].region = NULL;
	}
}

/* ---- LuaJIT's FFI callback trampolines (lj_ccallback.c's
 * callback_mcode_init, x64 with GC64): an anonymous page of machine code,
 * no rows anywhere, that a C function calls through a callback pointer:
 * the address of lj_vm_ffi_callback (8 bytes), then per group of 32 slots
 * `mov al, slot; jmp short` x 31 and `mov al, slot; push rbp; mov ah,
 * slot >> 8; mov rbp, g; jmp [rip -> the page's first 8 bytes]`. Only a
 * page whose every byte is that pattern, with the VM's own g and a target
 * in the VM's code, gets rows: CFA = rsp + 8 up to the push of rbp (the
 * return address into the C caller on top), rsp + 16 with rbp at CFA - 16
 * after it; none for the head and for what follows the last group. The
 * rows depend on the number of groups only: one object per count. */
#define CB_GROUP (31 * 4 + 21)
static uint32_t cb_groups(int pid, uint64_t lo, uint64_t hi,
			  const struct smp_luavm *lv)
{
	static uint8_t b[1 << 16];
	size_t sz = hi - lo > sizeof(b) ? sizeof(b) : hi - lo;
	uint64_t tgt;
	if (sz < 8 + CB_GROUP || (lv->flags & 3) != 3 ||
	    mem_read(pid, lo, b, 8))
		return 0;
	memcpy(&tgt, b, 8);
	if (tgt < lv->vm_start || tgt >= lv->vm_end || mem_read(pid, lo, b, sz))
		return 0;
	uint32_t ng = 0;
	for (size_t base = 8; base + CB_GROUP <= sz; base += CB_GROUP, ng++) {
		const uint8_t *q = b + base;
		uint32_t slot0 = 32 * ng;
		for (uint32_t j = 0; j < 31; j++, q += 4)
			if (q[0] != 0xb0 || q[1] != (uint8_t)(slot0 + j) ||
			    q[2] != 0xeb || q[3] != (uint8_t)(4 * (31 - j) - 2))
				return ng;
		uint64_t gv;
		int32_t rel;
		memcpy(&gv, q + 7, 8);
		memcpy(&rel, q + 17, 4);
		if (q[0] != 0xb0 || q[1] != (uint8_t)(slot0 + 31) ||
		    q[2] != 0x55 || q[3] != 0xb4 ||
		    q[4] != (uint8_t)((slot0 + 31) >> 8) || q[5] != 0x48 ||
		    q[6] != 0xbd || gv != lv->g || q[15] != 0xff ||
		    q[16] != 0x25 ||
		    (int64_t)(base + CB_GROUP) + rel != 0) /* jmp [page + 0] */
			return ng;
	}
	return ng;
}

static struct sobj *cb_obj(struct smp *s, uint32_t ng)
{
	char key[64];
	snprintf(key, sizeof(key), "[luajit ffi callbacks %u]", ng);
	struct sobj *ob = find_obj(s, key);
	if (ob || ng > 4096)
		return ob;
	struct smp_row *v = calloc(2 * ng + 2, sizeof(*v));
	if (!v)
		return NULL;
	uint32_t n = 0;
	v[n++] = (struct smp_row){.pc = 0, .rule = SMP_RULE_NONE};
	for (uint32_t g = 0; g < ng; g++) {
		uint32_t base = 8 + CB_GROUP * g;
		v[n++] = (struct smp_row){.pc = base,
					  .rule = SMP_RULE_SP,
					  .cfa_off = 8,
					  .ra_off = -8};
		/* after the group's last slot's mov al and push rbp */
		v[n++] = (struct smp_row){.pc = base + 31 * 4 + 3,
					  .rule = SMP_RULE_SP,
					  .cfa_off = 16,
					  .ra_off = -8,
					  .fp_off = -16,
					  .flags = SMP_ROW_FP_SAVED};
	}
	v[n++] =
	    (struct smp_row){.pc = 8 + CB_GROUP * ng, .rule = SMP_RULE_NONE};
	if (!(ob = new_obj(s, key))) {
		free(v);
		return NULL;
	}
	ob->ok = upload_rows(s, ob, v, n) == 0;
	free(v);
	return ob;
}

int smp_watch(struct smp *s, int pid, const char *region, char *msg,
	      size_t msglen)
{
	if (!s || pid <= 0)
		return -EINVAL;
	uint64_t t0 = proc_start(pid);
	if (!t0) {
		msgf(msg, msglen, "pid %d: no such process", pid);
		return -ESRCH;
	}
	struct wproc *w = find_proc(s, pid);
	if (w && w->start_ticks != t0) {
		/* the pid of a process that was watched, now another's:
		 * nothing of the old one kept (nor its region) */
		drop_proc(s, w);
		w = NULL;
	}
	if (!w && s->nprocs >= s->op.max_procs) {
		s->procs_full++;
		msgf(msg, msglen,
		     "pid %d: not watched: the process table is full (%u "
		     "processes)",
		     pid, s->op.max_procs);
		return -ENOSPC;
	}
	if (!region && w && w->region)
		region = w->region;
	char p[4096];
	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	FILE *f = fopen(p, "re");
	if (!f) {
		int err = -errno;
		msgf(msg, msglen, "%s: %s", p, strerror(errno));
		return err;
	}
	struct smp_proc *pr = s->tmp;
	memset(pr, 0, sizeof(*pr));
	char line[4096 + 256];
	uint32_t dropped = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, pgoff, ino;
		char perm[8], dev[32];
		int pos = 0;
		if (sscanf(line, "%llx-%llx %7s %llx %31s %llu %n", &lo, &hi,
			   perm, &pgoff, dev, &ino, &pos) < 6 ||
		    perm[2] != 'x')
			continue;
		char *name = line + pos;
		name[strcspn(name, "\n")] = 0;
		if (!strcmp(name, "[vsyscall]"))
			continue;
		if (pr->nmaps >= SMP_MAX_MAPS) {
			dropped++;
			continue;
		}
		struct smp_map *m = &pr->maps[pr->nmaps++];
		m->start = lo;
		m->end = hi;
		m->obj = SMP_OBJ_ANON;
		const char *open_path = name;
		char key[64], alt[128];
		if (!strcmp(name, "[vdso]")) {
			snprintf(key, sizeof(key), "[vdso]");
		} else if (name[0] == '/' && ino) {
			snprintf(key, sizeof(key), "%s:%llu", dev, ino);
			size_t nl = strlen(name);
			if (nl > 10 && !strcmp(name + nl - 10, " (deleted)")) {
				snprintf(alt, sizeof(alt),
					 "/proc/%d/map_files/%llx-%llx", pid,
					 lo, hi);
				open_path = alt;
			}
		} else {
			/* anonymous code: the region (or FFI callback
			 * trampolines, below) */
			m->pad = name[0] ? 0 : 1;
			continue;
		}
		struct sobj *ob = get_obj(s, key, open_path);
		if (!ob || !ob->ok) {
			/* a file that is no ELF object: a JIT's code
			 * mapped from a file, looked up in the region */
			m->obj =
			    ob && ob->info.nload ? SMP_OBJ_NONE : SMP_OBJ_ANON;
			continue;
		}
		uint64_t bias;
		if (map_bias(&ob->info, lo, pgoff, &bias)) {
			m->obj = SMP_OBJ_NONE;
			continue;
		}
		m->bias = bias;
		m->obj = ob->id;
	}
	fclose(f);
	if (proc_start(pid) != t0) {
		msgf(msg, msglen, "pid %d: exited while its mappings were read",
		     pid);
		return -ESRCH;
	}
	pr->start_ticks = t0;
	uint64_t base = 0, size = 0;
	char rmsg[512] = "";
	struct smp_luavm lv;
	int has_lv = 0;
	int rerr = region_of(pid, region, &base, &size, &lv, &has_lv, rmsg,
			     sizeof(rmsg));
	if (rerr && region) /* the given one gone: discovery */
		rerr = region_of(pid, NULL, &base, &size, &lv, &has_lv, rmsg,
				 sizeof(rmsg));
	if (rerr)
		has_lv = 0;
	if (!rerr) {
		pr->region_base = base;
		pr->region_size = size;
	}
	for (uint32_t i = 0; i < pr->nmaps; i++) {
		struct smp_map *m = &pr->maps[i];
		uint32_t ng;
		if (m->pad && has_lv &&
		    (ng = cb_groups(pid, m->start, m->end, &lv))) {
			struct sobj *ob = cb_obj(s, ng);
			if (ob && ob->ok) {
				m->obj = ob->id;
				m->bias = m->start;
			}
		}
		m->pad = 0;
	}
	uint64_t sig = 1469598103934665603ull; /* FNV-1a of the table */
	for (uint32_t i = 0; i < pr->nmaps; i++) {
		uint64_t v[3] = {pr->maps[i].start, pr->maps[i].end,
				 pr->maps[i].obj};
		for (int k = 0; k < 3; k++)
			sig = (sig ^ v[k]) * 1099511628211ull;
	}
	int err = bpf_map_update_elem(bpf_map__fd(s->skel->maps.procs), &pid,
				      pr, BPF_ANY);
	if (err) {
		if (err == -E2BIG || err == -ENOMEM)
			s->procs_full++;
		msgf(msg, msglen, "pid %d: the process table: %s", pid,
		     strerror(-err));
		return err;
	}
	if (!w) {
		if (s->nprocs == s->capprocs) {
			size_t nc = s->capprocs ? 2 * s->capprocs : 16;
			struct wproc *nw = realloc(s->procs, nc * sizeof(*nw));
			if (!nw)
				return -ENOMEM;
			s->procs = nw;
			s->capprocs = nc;
		}
		w = &s->procs[s->nprocs++];
		memset(w, 0, sizeof(*w));
		w->pid = pid;
		w->start_ticks = t0;
		w->gap_ns = GAP_MIN;
	}
	w->maps_sig = sig;
	int lfd = bpf_map__fd(s->skel->maps.luavms);
	if (has_lv && !s->op.no_lua &&
	    !bpf_map_update_elem(lfd, &pid, &lv, BPF_ANY)) {
		w->has_lv = 1;
		w->lv = lv;
	} else {
		bpf_map_delete_elem(lfd, &pid);
		w->has_lv = 0;
	}
	if (region != w->region) {
		free(w->region);
		w->region = region ? strdup(region) : NULL;
	}
	w->last_ns = now_ns();
	w->has_region = !rerr;
	s->refreshes++;
	if (rerr && rerr != -ENOENT && rmsg[0])
		msgf(msg, msglen, "pid %d: %s", pid, rmsg);
	else if (dropped)
		msgf(msg, msglen,
		     "pid %d: %u executable mappings beyond the first %d "
		     "ignored",
		     pid, dropped, SMP_MAX_MAPS);
	else
		msgf(msg, msglen, "pid %d: %u mappings, %s", pid, pr->nmaps,
		     rerr ? "no region" : "region");
	return 0;
}

/* ---- rows ahead of time */

/* One library name as the loader would find it: dirs (':'-separated,
 * $ORIGIN the needing object's directory), then the system's. */
static int find_lib(const char *name, const char *dirs, const char *origin,
		    char *out, size_t outlen)
{
	static const char sys[] = "/lib/x86_64-linux-gnu:/usr/lib/"
				  "x86_64-linux-gnu:/lib64:/usr/lib64:/lib:"
				  "/usr/lib";
	const char *lists[2] = {dirs ? dirs : "", sys};
	for (int l = 0; l < 2; l++) {
		const char *p = lists[l];
		while (*p) {
			size_t n = strcspn(p, ":");
			char d[PATH_MAX];
			if (n >= 7 && !strncmp(p, "$ORIGIN", 7))
				snprintf(d, sizeof(d), "%s%.*s", origin,
					 (int)(n - 7), p + 7);
			else
				snprintf(d, sizeof(d), "%.*s", (int)n, p);
			int w = snprintf(out, outlen, "%s/%s", d, name);
			if (n && w > 0 && (size_t)w < outlen &&
			    access(out, R_OK) == 0)
				return 0;
			p += n + (p[n] == ':');
		}
	}
	return -ENOENT;
}

static int preload_one(struct smp *s, const char *path, int deps, int level)
{
	struct stat st;
	char key[64], rp[PATH_MAX];
	if (level > 8 || !realpath(path, rp) || stat(rp, &st) ||
	    !S_ISREG(st.st_mode))
		return 0;
	snprintf(key, sizeof(key), "%02x:%02x:%llu", major(st.st_dev),
		 minor(st.st_dev), (unsigned long long)st.st_ino);
	for (uint32_t i = 0; i < s->nobjs; i++)
		if (!strcmp(s->objs[i].key, key))
			return 0; /* loaded (or refused) before */
	struct sobj *ob = get_obj(s, key, rp);
	int n = ob && ob->ok;
	if (!n || !deps)
		return n;
	/* its interpreter and its DT_NEEDED */
	int fd = open(rp, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return n;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	char *need[64], *dirs = NULL, interp[PATH_MAX] = "";
	size_t nneed = 0, phn = 0;
	if (e && elf_getphdrnum(e, &phn) == 0)
		for (size_t i = 0; i < phn; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) &&
			    ph.p_type == PT_INTERP && ph.p_filesz &&
			    ph.p_filesz < sizeof(interp) &&
			    pread(fd, interp, ph.p_filesz,
				  (off_t)ph.p_offset) == (ssize_t)ph.p_filesz)
				interp[ph.p_filesz - 1] = 0;
		}
	Elf_Scn *scn = NULL;
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0;
		     sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dy;
			if (!gelf_getdyn(d, (int)i, &dy))
				break;
			const char *str =
			    dy.d_tag == DT_NEEDED || dy.d_tag == DT_RUNPATH ||
				    dy.d_tag == DT_RPATH
				? elf_strptr(e, sh.sh_link, dy.d_un.d_val)
				: NULL;
			if (!str)
				continue;
			if (dy.d_tag == DT_NEEDED && nneed < 64)
				need[nneed++] = strdup(str);
			else if (dy.d_tag != DT_NEEDED && !dirs)
				dirs = strdup(str);
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	char origin[PATH_MAX], lib[PATH_MAX];
	snprintf(origin, sizeof(origin), "%s", rp);
	char *od = dirname(origin);
	if (interp[0])
		n += preload_one(s, interp, 0, level + 1);
	for (size_t i = 0; i < nneed; i++) {
		if (need[i] &&
		    (strchr(need[i], '/')
			 ? snprintf(lib, sizeof(lib), "%s", need[i]) > 0
			 : !find_lib(need[i], dirs, od, lib, sizeof(lib))))
			n += preload_one(s, lib, deps, level + 1);
		free(need[i]);
	}
	free(dirs);
	return n;
}

int smp_preload(struct smp *s, const char *path, int deps)
{
	if (!s || !path)
		return 0;
	return preload_one(s, path, deps, 0);
}

void smp_unwatch(struct smp *s, int pid)
{
	if (!s)
		return;
	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.procs), &pid);
	bpf_map_delete_elem(bpf_map__fd(s->skel->maps.luavms), &pid);
	struct wproc *w = find_proc(s, pid);
	if (w)
		drop_proc(s, w);
}

int smp_pids(const struct smp *s, int *pids, int max)
{
	if (!s)
		return 0;
	for (size_t i = 0; i < s->nprocs && (int)i < max; i++)
		pids[i] = s->procs[i].pid;
	return (int)s->nprocs;
}

/* ---- lifecycle */

static int neg_has(struct smp *s, int pid, uint64_t now)
{
	for (int i = 0; i < NEG; i++)
		if (s->neg[i].pid == pid && s->neg[i].until > now)
			return 1;
	return 0;
}
static void neg_add(struct smp *s, int pid, uint64_t now)
{
	uint32_t k = s->neghead++ % NEG;
	s->neg[k].pid = pid;
	s->neg[k].until = now + NEG_NS;
}

/* opts.all / opts.follow: a process watched by the sampler itself, at
 * most AUTO_BURST at once and AUTO_PER_S a second (a token bucket: the
 * time at which the bucket would be full) */
static void auto_watch(struct smp *s, int pid, uint64_t now)
{
	if (neg_has(s, pid, now))
		return;
	uint64_t per = 1000000000ull / AUTO_PER_S;
	uint64_t floor = now - (uint64_t)AUTO_BURST * per;
	if (s->auto_tokens_ns < floor)
		s->auto_tokens_ns = floor;
	if (s->auto_tokens_ns + per > now)
		return; /* no token: a later sample of it tries again */
	s->auto_tokens_ns += per;
	char m[256];
	if (smp_watch(s, pid, NULL, m, sizeof(m)))
		neg_add(s, pid, now);
	else
		s->auto_watched++;
}

static void on_proc_ev(struct smp *s, const struct smp_proc_ev *e)
{
	int pid = (int)e->pid;
	struct wproc *w = find_proc(s, pid);
	char m[256];
	uint64_t now = now_ns();
	switch (e->ev) {
	case SMP_EV_EXEC:
		/* a new image: its mappings, a region of its own */
		if (!w || w->start_ticks != e->start_ticks)
			return;
		free(w->region);
		w->region = NULL;
		w->has_region = 0;
		if (smp_watch(s, pid, NULL, m, sizeof(m)) == -ESRCH)
			smp_unwatch(s, pid);
		break;
	case SMP_EV_EXIT: /* the program deleted its entry */
		if (w && w->start_ticks == e->start_ticks)
			drop_proc(s, w);
		break;
	case SMP_EV_FORK:
		/* the child runs on the parent's mappings (the program
		 * copied them) until its own are read here */
		if (w)
			return;
		if (smp_watch(s, pid, NULL, m, sizeof(m))) {
			/* gone already, or no room: not half-watched */
			bpf_map_delete_elem(bpf_map__fd(s->skel->maps.procs),
					    &pid);
			neg_add(s, pid, now);
		} else {
			s->auto_watched++;
		}
		break;
	}
}

/* lost exit records, zombies: every SWEEP_NS the table against /proc, a
 * bounded number of processes per poll */
static void sweep(struct smp *s)
{
	uint64_t now = now_ns();
	if (now < s->next_sweep || !s->nprocs)
		return;
	for (int k = 0; k < SWEEP_MAX && s->nprocs; k++) {
		if (s->sweep_at >= s->nprocs) {
			s->sweep_at = 0;
			s->next_sweep = now + SWEEP_NS;
			return;
		}
		struct wproc *w = &s->procs[s->sweep_at];
		if (proc_start(w->pid) != w->start_ticks)
			smp_unwatch(s, w->pid); /* moves the last one here */
		else
			s->sweep_at++;
	}
}

/* ---- the ring buffer */

static int on_rec(void *ctx, void *data, size_t size)
{
	struct smp *s = ctx;
	if (size < 8)
		return 0;
	uint32_t kind;
	memcpy(&kind, data, 4);
	if (kind == SMP_REC_PROC) {
		struct smp_proc_ev ev;
		if (size >= sizeof(ev)) {
			memcpy(&ev, data, sizeof(ev));
			on_proc_ev(s, &ev);
		}
		return 0;
	}
	if (kind == SMP_REC_RAW) {
		if (size < sizeof(struct smp_raw))
			return 0;
		uint32_t k = s->rawhead++ % RAWQ;
		if (!s->rawq[k] &&
		    !(s->rawq[k] = malloc(sizeof(struct smp_raw))))
			return 0;
		memcpy(s->rawq[k], data, sizeof(struct smp_raw));
		return 0;
	}
	if (kind == SMP_REC_LUA) {
		if (size < offsetof(struct smp_lua, lf))
			return 0;
		uint32_t k = s->luahead++ % LUAQ;
		if (!s->luaq[k] &&
		    !(s->luaq[k] = malloc(sizeof(struct smp_lua))))
			return 0;
		size_t n = size < sizeof(struct smp_lua)
			       ? size
			       : sizeof(struct smp_lua);
		memset(s->luaq[k], 0, sizeof(struct smp_lua));
		memcpy(s->luaq[k], data, n);
		struct smp_lua *l = s->luaq[k];
		size_t have = (n - offsetof(struct smp_lua, lf)) /
			      sizeof(struct smp_lframe);
		if (l->nlframes > have)
			l->nlframes = (uint16_t)have;
		return 0;
	}
	if (kind != SMP_REC_SAMPLE ||
	    size < offsetof(struct smp_sample, frames))
		return 0;
	struct smp_sample *sm = &s->cur;
	size_t n = size < sizeof(*sm) ? size : sizeof(*sm);
	memcpy(sm, data, n);
	if (sm->nframes > SMP_MAX_FRAMES)
		sm->nframes = SMP_MAX_FRAMES;
	size_t have = (n - offsetof(struct smp_sample, frames)) /
		      sizeof(struct smp_frame);
	if (sm->nframes > have)
		sm->nframes = (uint16_t)have;
	struct smp_event e = {.s = sm};
	struct smp_raw *raw = NULL;
	if (sm->flags & SMP_F_RAW)
		for (uint32_t i = 0; i < RAWQ; i++)
			if (s->rawq[i] && s->rawq[i]->id == sm->id &&
			    s->rawq[i]->kind == SMP_REC_RAW) {
				raw = s->rawq[i];
				break;
			}
	if (!raw)
		sm->flags &= ~(uint32_t)SMP_F_RAW;
	e.raw = raw;
	struct smp_lua *lua = NULL;
	if (sm->flags & SMP_F_LUA)
		for (uint32_t i = 0; i < LUAQ; i++)
			if (s->luaq[i] && s->luaq[i]->id == sm->id &&
			    s->luaq[i]->kind == SMP_REC_LUA) {
				lua = s->luaq[i];
				break;
			}
	if (!lua)
		sm->flags &= ~(uint32_t)SMP_F_LUA;
	e.lua = lua;
	if (lua) {
		s->lua_samples++;
		if (lua->lstop < SMP_LSTOP__N)
			s->lua_stop[lua->lstop]++;
	}
	if (sm->kstack >= 0) {
		uint32_t id = (uint32_t)sm->kstack;
		memset(s->kbuf, 0, sizeof(s->kbuf));
		if (!bpf_map_lookup_elem(bpf_map__fd(s->skel->maps.kstacks),
					 &id, s->kbuf)) {
			uint32_t k = 0;
			while (k < 127 && s->kbuf[k])
				k++;
			e.kframes = s->kbuf;
			e.nkframes = k;
		}
	}
	s->delivered++;
	s->delivered_total++;
	int rc = s->fn ? s->fn(&e, s->ctx) : 0;
	if (raw)
		raw->kind = 0; /* used */
	if (lua)
		lua->kind = 0;
	uint64_t now = now_ns();
	struct wproc *w = find_proc(s, (int)sm->pid);
	if (sm->flags & SMP_F_UNWATCHED) {
		/* opts.all: a process seen for the first time (or one the
		 * program dropped: its entry re-made) */
		if (w ? now - w->last_ns > REFRESH_NS
		      : sm->stop != SMP_STOP_KERNEL_ONLY)
			auto_watch(s, (int)sm->pid, now);
	} else if (w && sm->stop == SMP_STOP_NO_MAPPING) {
		uint64_t gap =
		    sm->flags & SMP_F_MAPS_CHANGED ? CHANGED_NS : w->gap_ns;
		if (now - w->last_ns > gap) {
			char m[256];
			uint64_t sig0 = w->maps_sig, g = w->gap_ns;
			w->last_ns = now;
			int wr = smp_watch(s, w->pid, NULL, m, sizeof(m));
			if (wr == -ESRCH)
				smp_unwatch(s, (int)sm->pid);
			else if ((w = find_proc(s, (int)sm->pid)))
				w->gap_ns = w->maps_sig != sig0 ? GAP_MIN
					    : 2 * g < GAP_MAX	? 2 * g
								: GAP_MAX;
		}
	} else if (w && sm->stop == SMP_STOP_NO_REGION &&
		   now - w->region_ns > REGION_NS) {
		char m[256];
		w->region_ns = now;
		if (smp_watch(s, w->pid, NULL, m, sizeof(m)) == -ESRCH)
			smp_unwatch(s, (int)sm->pid);
	}
	if (rc) {
		s->rc = rc;
		return -ECANCELED;
	}
	return 0;
}

int smp_poll(struct smp *s, int timeout_ms, smp_event_fn fn, void *ctx)
{
	if (!s)
		return -EINVAL;
	s->fn = fn;
	s->ctx = ctx;
	s->rc = 0;
	s->delivered = 0;
	sweep(s);
	/* the program wakes the reader only once much has arrived: what
	 * is there at the timeout is drained too */
	int err = ring_buffer__poll(s->rb, timeout_ms);
	if (err >= 0 && !s->rc)
		err = ring_buffer__consume(s->rb);
	s->fn = NULL;
	if (s->rc)
		return s->rc;
	if (err < 0 && err != -EINTR)
		return err;
	return s->delivered;
}

void smp_stats(const struct smp *s, struct smp_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (!s)
		return;
	int ncpu = libbpf_num_possible_cpus();
	if (ncpu > 0) {
		struct smp_counters *c = calloc((size_t)ncpu, sizeof(*c));
		uint32_t zero = 0;
		if (c && !bpf_map_lookup_elem(
			     bpf_map__fd(s->skel->maps.counters), &zero, c)) {
			for (int i = 0; i < ncpu; i++) {
				st->lost += c[i].lost;
				st->raw += c[i].raw;
				st->kstack_errors += c[i].kstack_err;
				st->kstack_collisions += c[i].kstack_collide;
				st->execs += c[i].execs;
				st->exits += c[i].exits;
				st->forks += c[i].forks;
				st->ev_lost += c[i].ev_lost;
				st->reused += c[i].reused;
				st->procs_full += c[i].fork_full;
				for (int k = 0; k < SMP_STOP__N; k++)
					st->stop[k] += c[i].stop[k];
			}
		}
		free(c);
	}
	st->samples = s->delivered_total;
	struct bpf_prog_info pi = {0};
	uint32_t len = sizeof(pi);
	if (!bpf_obj_get_info_by_fd(
		bpf_program__fd(s->skel->progs.smp_on_sample), &pi, &len)) {
		st->run_ns = pi.run_time_ns;
		st->run_cnt = pi.run_cnt;
		st->verified_insns = pi.verified_insns;
	}
	st->objects = s->nobjs;
	st->rows = s->next_row;
	st->procs_full += s->procs_full;
	st->auto_watched = s->auto_watched;
	st->refreshes = s->refreshes;
	st->procs = (uint32_t)s->nprocs;
	int fd = bpf_map__fd(s->skel->maps.procs);
	uint32_t key, next, n = 0;
	for (uint32_t *k = NULL;
	     n <= KPROCS_MAX && !bpf_map_get_next_key(fd, k, &next);
	     k = &key, n++)
		key = next;
	st->kprocs = n;
	st->lua_samples = s->lua_samples;
	memcpy(st->lua_stop, s->lua_stop, sizeof(st->lua_stop));
	for (size_t i = 0; i < s->nprocs; i++)
		st->lua_procs += s->procs[i].has_lv != 0;
}

/* ---- Lua frames: prototypes read through /proc/PID/mem */

/* n bytes at a through fd, an open /proc/PID/mem: 0 or -EIO */
static int mem_pread(int fd, uint64_t a, void *buf, size_t n)
{
	return pread(fd, buf, n, (off_t)a) == (ssize_t)n ? 0 : -EIO;
}

static int mem_read(int pid, uint64_t a, void *buf, size_t n)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int err = mem_pread(fd, a, buf, n);
	close(fd);
	return err;
}

/* The prototype of frame f as it is now, read through fd (/proc/PID/mem),
 * into q (its chunk name into name, LNAME bytes, '@' or '=' dropped, cut
 * to fit): 0, or -1 when it cannot be read, has no chunk name (freed, or
 * not one at all) or is not the prototype the kernel saw at the sample.
 * The VM frees a prototype with its chunk and puts the next one of its
 * size in the same place (a chunk loaded, run, collected, another loaded)
 * between the sample and this read (the ring is drained every 100 ms at
 * most): what is read must be what the kernel read then (smp_lframe.name
 * ..): the same chunk name GCstr, first line and sizebc, a name of the
 * same hash and length, first and last 8 bytes. */
static int read_proto(int fd, const struct smp_luavm *lv,
		      const struct smp_lframe *f, struct lproto *q, char *name)
{
	uint64_t pt = f->pt;
	uint8_t b[256];
	if (fd < 0 || lv->pt_size > sizeof(b) ||
	    mem_pread(fd, pt, b, lv->pt_size))
		return -1;
	uint64_t cn = 0;
	memcpy(&q->sizebc, b + lv->pt_sizebc, 4);
	memcpy(&q->firstline, b + lv->pt_firstline, 4);
	memcpy(&q->numline, b + lv->pt_numline, 4);
	memcpy(&q->lineinfo, b + lv->pt_lineinfo, 8);
	memcpy(&cn, b + lv->pt_chunkname, 8);
	cn &= (1ull << 47) - 1;
	uint32_t hl[2] = {0, 0}; /* the name's hash and length */
	if (!cn || cn != f->name || q->firstline != f->firstline ||
	    q->sizebc != f->sizebc || lv->str_len < 4 ||
	    mem_pread(fd, cn + lv->str_len - 4, hl, 8) ||
	    hl[0] != f->namehash || hl[1] != f->namelen || hl[1] >= 4096)
		return -1;
	uint32_t len = hl[1];
	/* the whole name, to check its first and last 8 bytes */
	char whole[4096];
	if (mem_pread(fd, cn + lv->str_data, whole, len) ||
	    memcmp(whole, f->head, len < 8 ? len : 8) ||
	    (len > 8 && memcmp(whole + len - 8, f->tail, 8)))
		return -1;
	uint32_t n = len < LNAME - 1 ? len : LNAME - 1;
	memcpy(name, whole, n);
	name[n] = 0;
	if (*name == '@' || *name == '=')
		memmove(name, name + 1, n);
	return 0;
}

/* *fd, pid's /proc/PID/mem opened at the first call (*fd -2 until then):
 * the descriptor, or -1 */
static int mem_open(int *fd, int pid)
{
	if (*fd == -2) {
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/mem", pid);
		*fd = open(p, O_RDONLY | O_CLOEXEC);
	}
	return *fd;
}

/* q, kept for pid, was read for a frame the kernel saw as it saw f */
static bool same_proto(const struct lproto *q, int pid,
		       const struct smp_lframe *f)
{
	return q->pid == pid && q->pt == f->pt && q->name == f->name &&
	       q->firstline == f->firstline && q->sizebc == f->sizebc &&
	       q->namehash == f->namehash && q->namelen == f->namelen &&
	       !memcmp(q->head, f->head, 8) && !memcmp(q->tail, f->tail, 8);
}

/* Frame f's prototype into q and its name into name: kept from an earlier
 * sample that saw it the same (a frame of a process that has exited since
 * is still named), else read through *fd (opened here when -2). 0 or -1
 * (not named: see read_proto). */
static int get_proto(struct smp *s, const struct wproc *w,
		     const struct smp_lframe *f, int *fd, struct lproto *q,
		     char *name)
{
	if (!f->name)
		return -1;
	uint32_t h =
	    (uint32_t)(((f->pt >> 3) ^ (uint64_t)w->pid) * 2654435761u) >>
	    (32 - LPROTO_BITS);
	for (uint32_t k = 0; k < 8; k++) {
		struct lproto *c = s->lp[(h + k) & ((1u << LPROTO_BITS) - 1)];
		if (c && same_proto(c, w->pid, f)) {
			*q = *c;
			snprintf(name, LNAME, "%s", c->chunk);
			return 0;
		}
	}
	if (read_proto(mem_open(fd, w->pid), &w->lv, f, q, name))
		return -1;
	struct lproto *c = malloc(sizeof(*c));
	char *chunk = strdup(name);
	if (!c || !chunk) {
		free(c);
		free(chunk);
		return 0; /* named, not kept */
	}
	*c = *q;
	c->pid = w->pid;
	c->pt = f->pt;
	c->name = f->name;
	c->namehash = f->namehash;
	c->namelen = f->namelen;
	memcpy(c->head, f->head, 8);
	memcpy(c->tail, f->tail, 8);
	c->chunk = chunk;
	uint32_t slot = h;
	for (uint32_t k = 0; k < 8; k++)
		if (!s->lp[(h + k) & ((1u << LPROTO_BITS) - 1)]) {
			slot = h + k;
			break;
		}
	slot &= (1u << LPROTO_BITS) - 1;
	if (s->lp[slot]) {
		free(s->lp[slot]->chunk);
		free(s->lp[slot]);
	}
	s->lp[slot] = c;
	return 0;
}

/* lj_debug_line: the line of bytecode position pos */
static uint32_t proto_line(int fd, const struct lproto *q, uint32_t pos)
{
	if (pos > q->sizebc || !q->lineinfo)
		return 0;
	if (pos == q->sizebc)
		return q->firstline + q->numline;
	if (pos == 0)
		return q->firstline;
	pos--;
	uint32_t v = 0;
	size_t wd = q->numline < 256 ? 1 : q->numline < 65536 ? 2 : 4;
	if (mem_pread(fd, q->lineinfo + wd * pos, &v, wd))
		return 0;
	return q->firstline + v;
}

/* fr's VM entries (trace code, or a pc in the VM's code), leaf first:
 * their indices into ent; how many. */
static uint32_t vm_entries(const struct wproc *w, const struct smp_frame *fr,
			   uint32_t nf, uint32_t *ent)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < nf && i < SMP_MAX_FRAMES; i++) {
		uint64_t look = i ? fr[i].pc - 1 : fr[i].pc;
		if (fr[i].fn_start ||
		    (look >= w->lv.vm_start && look < w->lv.vm_end))
			ent[n++] = i;
	}
	return n;
}

/* Where each Lua frame goes on a walk of nf frames (sp: each one's; ent:
 * its nent VM entries), by its C frame's address, as the kernel's lplace
 * does: at[j] the index of the native frame, UINT32_MAX none. */
static void place_by_cf(const struct smp_lua *l, const uint64_t *sp,
			uint32_t nf, const uint32_t *ent, uint32_t nent,
			uint32_t *at)
{
	uint32_t e = 0;
	for (uint32_t j = 0; j < l->nlframes && j < SMP_MAX_LFRAMES; j++) {
		uint64_t c = l->lf[j].cf;
		at[j] = UINT32_MAX;
		while (e < nent) {
			uint32_t k = ent[e];
			uint64_t lo = sp[k],
				 hi = k + 1 < nf ? sp[k + 1] : sp[k] + 256;
			if (c >= hi) { /* an outer entry's */
				e++;
				continue;
			}
			if (c && c >= lo)
				at[j] = k;
			break;
		}
	}
}

static int lua_frames(struct smp *s, const struct smp_event *e,
		      const struct smp_frame *fr, const uint64_t *sp,
		      uint32_t nf, uint16_t stop, struct smp_luaframe *out,
		      int max)
{
	if (!s || !e || !e->lua)
		return 0;
	struct wproc *w = find_proc(s, (int)e->s->pid);
	if (!w || !w->has_lv)
		return -ENOENT;
	const struct smp_lua *l = e->lua;
	int memfd = -2; /* /proc/PID/mem, opened at the first prototype */
	/* the native frames VM entries run in, leaf first */
	uint32_t ent[SMP_MAX_FRAMES] = {0};
	uint32_t nent = vm_entries(w, fr, nf, ent);
	static uint32_t byaddr[SMP_MAX_LFRAMES];
	if (sp)
		place_by_cf(l, sp, nf, ent, nent, byaddr);
	int n = 0;
	for (uint32_t i = 0; i < l->nlframes && i < SMP_MAX_LFRAMES && n < max;
	     i++) {
		const struct smp_lframe *f = &l->lf[i];
		uint32_t at = sp	      ? byaddr[i]
			      : f->seg < nent ? ent[f->seg]
					      : UINT32_MAX;
		/* a frame no native frame holds goes beyond the native walk
		 * (rootward of where it stopped); a walk that reached the
		 * outermost frame has no beyond: the frame's place is not
		 * known (a coroutine's frames while coroutine.yield leaves it,
		 * L->cframe already cleared): it and the frames after it are
		 * left out, the sample stops short */
		if (at == UINT32_MAX && stop == SMP_STOP_OUTERMOST)
			break;
		struct smp_luaframe *o = &out[n++];
		memset(o, 0, sizeof(*o));
		o->seg = f->seg;
		o->flags = f->flags;
		o->ffid = f->ffid;
		o->at = at;
		o->cf = f->cf;
		if (!f->pt) {
			o->pt = f->pc;
			continue;
		}
		o->pt = f->pt;
		struct lproto q;
		if (get_proto(s, w, f, &memfd, &q, s->lname[n - 1])) {
			n--; /* unnamed: the frames from it on left out */
			break;
		}
		o->chunk = s->lname[n - 1];
		o->firstline = q.firstline;
		uint64_t bc = f->pt + w->lv.pt_size;
		if (f->pc > bc && f->pc <= bc + 4ull * q.sizebc)
			o->line = proto_line(mem_open(&memfd, w->pid), &q,
					     (uint32_t)((f->pc - bc) / 4 - 1));
	}
	if (memfd >= 0)
		close(memfd);
	return n;
}

int smp_lua_frames(struct smp *s, const struct smp_event *e,
		   struct smp_luaframe *out, int max)
{
	if (!e || !e->s)
		return 0;
	return lua_frames(s, e, e->s->frames, NULL, e->s->nframes, e->s->stop,
			  out, max);
}

int smp_lua_frames_on(struct smp *s, const struct smp_event *e,
		      const struct smp_frame *fr, const uint64_t *sp,
		      uint32_t nf, struct smp_luaframe *out, int max)
{
	if (!e || !fr || !sp)
		return 0;
	return lua_frames(s, e, fr, sp, nf, SMP_STOP_OUTERMOST, out, max);
}

int smp_vmprof(const struct smp *s, int pid, struct smp_vmrow *rows, int max)
{
	if (!s)
		return -EINVAL;
	int fd = bpf_map__fd(s->skel->maps.vmprof);
	struct smp_vmkey k, next, *pk = NULL;
	struct smp_vmval v;
	int n = 0;
	while (!bpf_map_get_next_key(fd, pk, &next)) {
		k = next;
		pk = &k;
		if ((int)k.pid != pid || bpf_map_lookup_elem(fd, &k, &v))
			continue;
		if (n < max) {
			rows[n].trace = k.trace;
			memcpy(rows[n].n, v.n, sizeof(v.n));
		}
		n++;
	}
	return n;
}
